//! The users port: profiles and what a timeline page needs about its authors.

use async_trait::async_trait;

use super::StoreResult;
use crate::domain::{AuthorView, Fence, NewUser, User};

/// One user for the counters worker to recount from the sources.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Recount {
    pub user: String,
    /// The highest feed `seq` among the changes that touched the user. The counts are
    /// written only where the user's `counted_seq` is below it, and it becomes the new
    /// `counted_seq`: a recount for older changes never overwrites a newer one.
    pub seq: u64,
    /// Write even when the stored counts already equal the recount, so that
    /// `counted_seq` moves on (a post or a follow touched the user). When only the user
    /// document changed (a counter `$inc`, a rename, or the worker's own write, which
    /// reach the MongoDB feed as user updates), only a correction is written, so the
    /// worker's writes settle after one round instead of feeding themselves.
    pub always: bool,
}

/// Changes here are appended to the change feed atomically with the change.
#[async_trait]
pub trait UserStore: Send + Sync + 'static {
    /// `Conflict` when the id is taken.
    async fn create_user(&self, user: &NewUser) -> StoreResult<User>;
    async fn user(&self, id: &str) -> StoreResult<Option<User>>;
    /// `None` when the user is unknown.
    async fn rename_user(&self, id: &str, display_name: &str) -> StoreResult<Option<User>>;
    /// The existing users among `authors`, with their display names and whether `reader`
    /// follows them: everything a timeline page needs about its authors, in one call.
    async fn authors(&self, reader: &str, authors: &[String]) -> StoreResult<Vec<AuthorView>>;
    /// Sets each user's `followers_count`, `following_count` and `posts_count` to a
    /// count of the follow edges and posts that exist now, fenced per user by
    /// `counted_seq` (see [`Recount`]). Unknown users are skipped. Writes nothing to the
    /// embedded change feed. Returns how many users were written.
    async fn recount(&self, users: &[Recount]) -> StoreResult<u64>;
    /// Recounts every user (the counters worker's rebuild after history was lost), each
    /// write conditional on the user's `counted_seq` not having moved since it was read
    /// (embedded: one transaction, fenced by the lease). Returns how many were written.
    async fn recount_all(&self, fence: &Fence) -> StoreResult<u64>;
}
