//! The trends port: hashtag counts kept incrementally from the event log.
//!
//! Per tag: the live posts carrying it, and posts per hour (by the post's creation
//! time) for the last [`HOURS_KEPT`] hours. Each tag records the id of the last event
//! applied to it, and the whole aggregate has one watermark (the `aggregates` lease's
//! position): an event at or below either is never applied twice.

use async_trait::async_trait;
use serde::Serialize;

use super::StoreResult;
use crate::domain::{EventId, Fence};

/// Hours of per-hour counts kept: seven days.
pub const HOURS_KEPT: i64 = 7 * 24;
pub const HOUR_MS: i64 = 3_600_000;

/// One event's effect on one tag: +1 for a created post, -1 for a deleted one, in the
/// hour the post was created.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TagChange {
    pub event: EventId,
    pub tag: String,
    pub hour: i64,
    pub delta: i64,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TagCounts {
    pub tag: String,
    /// Live posts carrying the tag.
    pub total: u64,
    /// `(hour since the epoch, posts created in it)`, oldest first, hours with posts only.
    pub hours: Vec<(i64, u64)>,
}

#[async_trait]
pub trait TrendStore: Send + Sync + 'static {
    /// Applies one batch with one update per touched tag, skipping changes at or below
    /// the tag's last applied event, and drops hours before `from_hour` from the tags it
    /// touches. Fenced by the lease (embedded: the watermark in the lease row moves to
    /// `through` in the same transaction; MongoDB: each tag is a compare-and-set on its
    /// last applied event, so a replay or a stale holder changes nothing).
    async fn apply_tags(
        &self,
        fence: &Fence,
        through: EventId,
        changes: &[TagChange],
        from_hour: i64,
    ) -> StoreResult<()>;
    /// Recomputes every tag from the posts in one snapshot and returns the watermark:
    /// the newest change at that snapshot (event ids are change `seq`s), so events after
    /// it are exactly the changes the snapshot did not see. Fenced by the lease.
    async fn rebuild_tags(&self, fence: &Fence, from_hour: i64) -> StoreResult<EventId>;
    /// The counts of `tag`, hours from `from_hour`; zero when never seen.
    async fn tag_counts(&self, tag: &str, from_hour: i64) -> StoreResult<TagCounts>;
    /// The `limit` tags with most posts created in hours from `from_hour`, most first,
    /// ties by tag ascending.
    async fn top_tags(&self, from_hour: i64, limit: usize) -> StoreResult<Vec<(String, u64)>>;
}
