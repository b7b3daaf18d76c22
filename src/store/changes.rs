//! The change feed port: every change to users, follows and posts, in order.

use async_trait::async_trait;

use super::StoreResult;
use crate::domain::{Change, ChangePosition};

#[async_trait]
pub trait ChangeFeed: Send + Sync + 'static {
    /// Up to `limit` changes after `after` (from the oldest retained one when `None`),
    /// in order. `HistoryLost` when `after` has been trimmed away; embedded, also with
    /// `None` once anything was trimmed (the oldest retained change is then not the
    /// start of the history).
    async fn changes(
        &self,
        after: Option<&ChangePosition>,
        limit: usize,
    ) -> StoreResult<Vec<Change>>;
    /// The position of the newest change, `None` when the feed is empty. A reader that
    /// continues from it sees only changes made afterwards.
    async fn head(&self) -> StoreResult<Option<ChangePosition>>;
    /// How many changes wait after `after`, counting at most `cap`; `None` where the
    /// feed cannot tell without reading them (a MongoDB change stream).
    async fn backlog(&self, _after: &ChangePosition, _cap: u64) -> StoreResult<Option<u64>> {
        Ok(None)
    }
    /// Drops changes recorded before `older_than_ms` that every worker lease has already
    /// committed past; changes recorded before `hard_cutoff_ms` go even when a lagging
    /// worker still needs them, and that worker then gets `HistoryLost` (and rebuilds).
    /// Forced trims are logged as errors and counted. Returns how many were dropped.
    async fn trim_changes(&self, older_than_ms: i64, hard_cutoff_ms: i64) -> StoreResult<u64>;
}
