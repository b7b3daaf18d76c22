//! The follow graph port.

use async_trait::async_trait;

use super::StoreResult;

/// Followers are fanned out to in batches of this many.
pub const FANOUT_BATCH: usize = 1000;

/// An edge as it stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EdgeState {
    /// When the follow that made it was stored: a follow's backfill takes the posts
    /// written up to then, however late it runs.
    pub created_ms: i64,
    /// Whether an upkeep of this edge's backfill was marked done.
    pub backfilled: bool,
}

/// Changes here are appended to the change feed atomically with the change, and keep
/// the users' follower and following counters.
#[async_trait]
pub trait GraphStore: Send + Sync + 'static {
    /// Returns whether an edge was added. `NotFound` when either user is unknown.
    async fn follow(&self, follower: &str, followee: &str, now_ms: i64) -> StoreResult<bool>;
    /// Returns whether an edge was removed.
    async fn unfollow(&self, follower: &str, followee: &str) -> StoreResult<bool>;
    /// Ids `user` follows, ascending, strictly after `after`.
    async fn following(
        &self,
        user: &str,
        after: Option<&str>,
        limit: usize,
    ) -> StoreResult<Vec<String>>;
    /// Ids following `user`, ascending, strictly after `after`.
    async fn followers(
        &self,
        user: &str,
        after: Option<&str>,
        limit: usize,
    ) -> StoreResult<Vec<String>>;
    /// Ids `user` follows strictly below `below`, descending (the nearest first), at
    /// most `limit`: the page just before a cursor of [`GraphStore::following`], from
    /// the same index read the other way (embedded: the primary key `(follower,
    /// followee)`; MongoDB: `{from: 1, to: 1}`, on the user's chunk).
    async fn following_below(
        &self,
        user: &str,
        below: &str,
        limit: usize,
    ) -> StoreResult<Vec<String>>;
    /// Ids following `user` strictly below `below`, descending, at most `limit`: as
    /// [`GraphStore::following_below`] for [`GraphStore::followers`] (embedded:
    /// `follows_by_followee (followee, follower)`; MongoDB: `{to: 1, from: 1}`).
    async fn followers_below(
        &self,
        user: &str,
        below: &str,
        limit: usize,
    ) -> StoreResult<Vec<String>>;
    /// The edge `follower` → `followee`, `None` when there is none.
    async fn edge(&self, follower: &str, followee: &str) -> StoreResult<Option<EdgeState>>;
    /// Marks the backfill of the edge done, if the edge created at `created_ms` still
    /// stands. The mark lives on the edge itself, so an unfollow takes it away, and the
    /// condition keeps it off an edge re-created since the upkeep it vouches for.
    async fn mark_backfilled(
        &self,
        follower: &str,
        followee: &str,
        created_ms: i64,
    ) -> StoreResult<()>;

    /// Edges whose backfill was never marked done, by `(follower, followee)` ascending,
    /// strictly after `after`: what a timelines rebuild repeats when the changes of the
    /// follows were lost with the feed's history. One scan of the edges, a page at a time.
    async fn unbackfilled(
        &self,
        after: Option<(&str, &str)>,
        limit: usize,
    ) -> StoreResult<Vec<(String, String)>>;

    /// Whether `author` is a celebrity now (see `feed::hybrid`): their posts and reposts
    /// are merged into readers' pages rather than fanned out.
    async fn celebrity(&self, author: &str) -> StoreResult<bool>;
    /// Makes `author` a celebrity when they have more than `enter_above` followers, and
    /// no longer one below `leave_below`; returns the new status when it changed.
    ///
    /// Becoming one keeps readers complete in this order: the author is marked *merged*
    /// (for good), every edge to them is flagged merged (new edges copy the mark, checked
    /// again after their insert), and only then is the author a celebrity, whose posts
    /// and reposts are no longer fanned out. A reader merges the posts and reposts of
    /// every flagged followee.
    async fn reclassify(
        &self,
        author: &str,
        enter_above: u64,
        leave_below: u64,
    ) -> StoreResult<Option<bool>>;
}

/// Calls `deliver` with the author and then the followers, in batches of
/// [`FANOUT_BATCH`]. Returns the sum of what `deliver` reports.
pub async fn in_follower_batches<F, Fut>(
    graph: &dyn GraphStore,
    author: &str,
    mut deliver: F,
) -> StoreResult<u64>
where
    F: FnMut(Vec<String>) -> Fut,
    Fut: std::future::Future<Output = StoreResult<u64>>,
{
    let mut written = deliver(vec![author.to_owned()]).await?;
    let mut after: Option<String> = None;
    loop {
        let batch = graph
            .followers(author, after.as_deref(), FANOUT_BATCH)
            .await?;
        let last_batch = batch.len() < FANOUT_BATCH;
        after = batch.last().cloned();
        if !batch.is_empty() {
            written += deliver(batch).await?;
        }
        if last_batch {
            return Ok(written);
        }
    }
}
