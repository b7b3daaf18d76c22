//! The materialised timelines port: timed and sized buckets, the capped cache, and
//! removals from all of them; plus what every adapter and strategy shares about them:
//! resilient delivery to an audience in batches, and the size of the largest document.

use std::future::Future;
use std::time::Duration;

use async_trait::async_trait;

mod sizes;
mod version;

pub use sizes::{
    DOCUMENT_BUDGET_BYTES, DOCUMENT_FIXED_BYTES, DOCUMENT_LIMIT_BYTES, largest_document_bytes,
    largest_entry_bytes,
};
pub use version::{CacheRows, CacheVersion, MergedVersion};

use super::graph::FANOUT_BATCH;
use super::{GraphStore, StoreResult};
use crate::domain::{
    Bucket, BucketKind, CacheState, NameStamp, PostId, TimelineEntry, TimelineKind,
};

/// A cache as its owner may be served it (see [`TimelineStore::cache_current`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CacheView {
    pub ready: bool,
    pub started_at_ms: i64,
    /// Whether the cache holds its owner's whole timeline (see [`CacheState::complete`]).
    pub complete: bool,
    /// Newest first: the newest entries below the read's `before`, at most its `limit`,
    /// whose post exists and whose author is the owner or someone the owner follows.
    pub entries: Vec<TimelineEntry>,
    /// The oldest entry the cache holds, served or not: where reads past it begin.
    /// When `entries` came back full (as many as the read's `limit`), nothing past the
    /// cache is read, and a store may give the last of `entries` instead.
    pub oldest: Option<PostId>,
    /// The cache's version (see [`TimelineStore::cache_version`]) when `entries` are its
    /// rows as they stand, read with no removal pending and no rename of their authors
    /// pending, so that they are a function of those rows alone; `None` otherwise, and
    /// from a store that keeps none.
    pub version: Option<u64>,
    /// When its owner's reads were last recorded on it (see
    /// [`TimelineStore::cache_touch`]); 0 when never.
    pub read_ms: i64,
}

/// What a write into a cache says about the cache beyond its entries (see `feed::cache`):
/// whether it may leave out entries below its oldest one, which ends completeness, and
/// whether it ends a build. A trim that drops an entry ends completeness in any case.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CacheMerge {
    /// Pushes of new entries: nothing beyond them.
    Push,
    /// A follow's backfill of the followee's newest posts; `cut` when the read stopped at
    /// its limit, so that older posts of theirs may be left out.
    Backfill { cut: bool },
    /// A build's fill, which makes the cache ready; `cut` when the read stopped at
    /// `cache_size`.
    Fill { cut: bool },
}

impl CacheMerge {
    /// Whether the entries may leave out posts below their oldest: completeness ends.
    pub fn cut(self) -> bool {
        matches!(
            self,
            CacheMerge::Backfill { cut: true } | CacheMerge::Fill { cut: true }
        )
    }

    /// Whether the write makes the cache ready.
    pub fn readies(self) -> bool {
        matches!(self, CacheMerge::Fill { .. })
    }
}

/// Every push is idempotent by post id: an entry already in the user's timeline (in any
/// bucket of the group it would go to, or in the cache) is not stored again, and a bucket
/// counts only the entries it took, so a replayed push changes nothing.
#[async_trait]
pub trait TimelineStore: Send + Sync + 'static {
    /// Appends `entries` (all of the period `key`) to the timed buckets of period `key`
    /// of every user in `users`. A period is split into parts of at most `max_entries`
    /// entries, each part a bucket with the same key; a part is opened only when the
    /// newest is full, under any number of concurrent writers.
    async fn timed_push(
        &self,
        users: &[String],
        key: i64,
        entries: &[TimelineEntry],
        max_entries: u32,
    ) -> StoreResult<()>;
    /// Appends `entries`, in order, to the newest sized bucket of every user in `users`,
    /// rolling over to a new bucket whenever the newest is full. Never puts more than
    /// `bucket_size` entries in a bucket, under any number of concurrent writers.
    async fn sized_push(
        &self,
        users: &[String],
        entries: &[TimelineEntry],
        bucket_size: u32,
    ) -> StoreResult<()>;
    /// The user's buckets that may hold entries below `before`, ordered by their newest
    /// entry, newest first; in each, its newest `per_bucket` distinct entries below
    /// `before`, newest first. A page of N needs no more than N from any one bucket, and a
    /// timed bucket of a user who follows many can hold thousands.
    async fn buckets(
        &self,
        kind: BucketKind,
        user: &str,
        before: Option<PostId>,
        skip: usize,
        limit: usize,
        per_bucket: usize,
    ) -> StoreResult<Vec<Bucket>>;

    /// Pushes `entries` into the caches of those `users` that have one, keeping only the
    /// newest `cache_size` entries. Returns how many caches took at least one entry.
    ///
    /// Every cache write keeps what a cache covers (see `feed::cache`), atomically with
    /// the write: a cache being built takes every entry; a ready one takes an entry below
    /// its oldest only while it is complete; a trim that drops an entry, or a fill or a
    /// backfill whose read was cut at its limit, makes it incomplete.
    async fn cache_push(
        &self,
        users: &[String],
        entries: &[TimelineEntry],
        cache_size: u32,
    ) -> StoreResult<u64>;
    /// Pushes `entries` into the caches of `author` and of `author`'s followers, where
    /// they have one. The embedded store walks whichever is smaller, the followers or the
    /// caches, so a post costs nothing per follower without a cache when few users read.
    /// Both stores write in batches, each retried, and report the first batch that kept
    /// failing once all were tried (pushes are idempotent, so retrying the call is safe).
    async fn cache_push_to_audience(
        &self,
        author: &str,
        entries: &[TimelineEntry],
        cache_size: u32,
    ) -> StoreResult<u64>;
    async fn cache(&self, user: &str) -> StoreResult<Option<CacheState>>;
    /// `user`'s cache as `user` may be served it, in one call: `None` without a cache;
    /// otherwise without the entries an unfollow or a delete is still removing (a push
    /// that raced with one lands after its removal and is taken out again by the pusher's
    /// own re-check, so until then the read must not serve it).
    async fn cache_current(
        &self,
        user: &str,
        before: Option<PostId>,
        limit: usize,
    ) -> StoreResult<Option<CacheView>>;
    /// Creates an empty, not yet ready, complete cache, started and last read at
    /// `now_ms`. Returns false when one already exists.
    async fn cache_start(&self, user: &str, now_ms: i64) -> StoreResult<bool>;
    /// Records a read of `user`'s cache at `now_ms`, if the cache exists and its recorded
    /// last read is older: never moves it back. Readers call it coarsely (see
    /// `FeedSettings::read_stamp_ms`), not at every read.
    async fn cache_touch(&self, user: &str, now_ms: i64) -> StoreResult<()>;
    /// Drops at most `limit` ready caches whose owner's last recorded read is older
    /// than `now_ms - idle_ms`, with their entries; returns how many went. The age is checked
    /// in the write that drops each cache (one transaction on the embedded store, the
    /// delete's filter on MongoDB), so a read recorded or a build started before it
    /// keeps the cache; a cache being built is never dropped. Idempotent. A dropped
    /// cache takes no fan-out (pushes go only into caches that exist) and its owner's
    /// next read builds it again, with a version it never had.
    async fn drop_idle_caches(&self, now_ms: i64, idle_ms: i64, limit: usize) -> StoreResult<u64>;
    /// The version a [`TimelineStore::cache_current`] of `rows` of `user`'s ready cache
    /// would carry now, in one light read: every write of the cache's entries, and every
    /// change of which of `user`'s edges are flagged merged, moves it to a value it never
    /// had, so while it is unchanged, a page read under it stands. With `merged`, also
    /// what a `hybrid` page merges beside it (see [`MergedVersion`]). `None` without a
    /// ready cache, while a removal or a rename of an author of `rows` is pending, and
    /// from a store that keeps no versions (the default).
    async fn cache_version(
        &self,
        _user: &str,
        _rows: CacheRows,
        _merged: bool,
    ) -> StoreResult<Option<CacheVersion>> {
        Ok(None)
    }
    /// The below clock, read before the rows a page reads below its cache (and before
    /// the reposts and originals a page's repost entries are checked against), when the
    /// store keeps one: every delete of a post, every removal of a repost and every
    /// rename moves it to a value it never had, in its own write, so while it (and the
    /// cache's version, which covers whom the owner follows, blocks and mutes) is
    /// unchanged, such rows stand: a new post's id is above every page's. `None` from a
    /// store that keeps no versions (the default).
    async fn below_clock(&self) -> StoreResult<Option<u64>> {
        Ok(None)
    }
    /// Whether a page read under `kept` (from [`TimelineStore::cache_version`]) stands
    /// now (as [`TimelineStore::cache_version`] of `kept.rows` would find it): the
    /// version to keep it under from now on (`kept`, or `kept` with a newer merge clock
    /// when the followees it merges changed nothing since), or `None`. One
    /// light read while nothing merged anywhere moved; then one more, of the merge
    /// versions of `kept`'s followees alone. With [`CacheVersion::below`], also the below
    /// clock ([`TimelineStore::below_clock`]), in the same read. `None` from a store that
    /// keeps no versions (the default).
    async fn cache_stands(
        &self,
        _user: &str,
        _kept: &CacheVersion,
    ) -> StoreResult<Option<CacheVersion>> {
        Ok(None)
    }
    /// Deletes `user`'s cache if it is ready, holds no entry and is not complete: such a
    /// cache covers nothing and can take no push, so only a new build makes it useful.
    /// Returns whether it was deleted.
    async fn cache_reset(&self, user: &str) -> StoreResult<bool>;
    /// Merges `entries`, a followee's newest posts as a follow's backfill read them, into
    /// `user`'s cache if there is one, keeping the coverage rule. `cut` says the read
    /// stopped at its limit: the followee may have older posts, which the cache then
    /// lacks, so it is no longer complete even when nothing was trimmed. Returns whether
    /// the cache took an entry.
    async fn cache_backfill(
        &self,
        user: &str,
        entries: &[TimelineEntry],
        cache_size: u32,
        cut: bool,
    ) -> StoreResult<bool>;
    /// Merges `entries`, the newest `cache_size` entries of the timeline as a read saw
    /// them (fewer means the whole timeline), into the cache and marks it ready.
    async fn cache_fill(
        &self,
        user: &str,
        entries: &[TimelineEntry],
        cache_size: u32,
    ) -> StoreResult<()>;

    /// Removes `author`'s entries from `user`'s timeline.
    async fn remove_author_entries(
        &self,
        kind: TimelineKind,
        user: &str,
        author: &str,
    ) -> StoreResult<()>;
    /// Removes a post from every timeline.
    async fn remove_post_entries(&self, kind: TimelineKind, post: PostId) -> StoreResult<()>;
    /// Removes from the caches every entry a delete or an unfollow hides whose removal
    /// may never have run (its change was lost), as a rebuild must. Returns how many
    /// entries went. Entries a later follow made servable again stay.
    async fn settle_retractions(&self) -> StoreResult<u64>;

    /// Stamps `author`'s embedded entries in `users`' timelines of `kind` with `name`,
    /// where they carry no stamp or an older one: an older rename applied after a newer
    /// one changes nothing. Idempotent.
    async fn rename_author(
        &self,
        kind: TimelineKind,
        users: &[String],
        author: &str,
        name: &NameStamp,
    ) -> StoreResult<()>;
    /// For those of `authors` with one, the highest user version whose name has reached
    /// every timeline (see `mark_renamed`).
    async fn renamed(&self, authors: &[String]) -> StoreResult<Vec<(String, u64)>>;
    /// Records that `author`'s name at `version` reached every timeline. Never lowers
    /// the recorded version.
    async fn mark_renamed(&self, author: &str, version: u64) -> StoreResult<()>;
    /// Renames whose propagation the store still waits for, as `(author, version)`, if
    /// it keeps them: the embedded store serves a cache page's names from the profiles
    /// only while one is pending. MongoDB checks names at every read and keeps none.
    async fn pending_renames(&self) -> StoreResult<Vec<(String, u64)>> {
        Ok(Vec::new())
    }
}

/// Tries of one delivery before its error is reported.
pub const DELIVERY_ATTEMPTS: u32 = 3;

/// Runs `attempt` until it succeeds, at most [`DELIVERY_ATTEMPTS`] times, pausing a
/// little longer after each failure. Only for idempotent operations (every push is).
pub async fn with_retries<T, F, Fut>(mut attempt: F) -> StoreResult<T>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = StoreResult<T>>,
{
    let mut tries = 1;
    loop {
        match attempt().await {
            Ok(value) => return Ok(value),
            Err(error) if tries >= DELIVERY_ATTEMPTS => return Err(error),
            Err(error) => {
                tracing::warn!(error = %error, tries, "timeline delivery failed; retrying");
                tokio::time::sleep(Duration::from_millis(20 << tries)).await;
                tries += 1;
            }
        }
    }
}

/// Calls `deliver` with the author and then the followers, in batches of
/// [`FANOUT_BATCH`], retrying each failed batch (see [`with_retries`]). A batch that
/// still fails does not stop the others: every batch is tried, and then the first
/// persistent error is returned. Otherwise returns the sum of what `deliver` reports.
pub async fn deliver_to_audience<F, Fut>(
    graph: &dyn GraphStore,
    author: &str,
    mut deliver: F,
) -> StoreResult<u64>
where
    F: FnMut(Vec<String>) -> Fut,
    Fut: Future<Output = StoreResult<u64>>,
{
    let mut written = 0;
    let mut failure = None;
    let mut record = |result: StoreResult<u64>| match result {
        Ok(n) => written += n,
        Err(error) => {
            tracing::error!(error = %error, author, "a fan-out batch failed; delivering the rest");
            failure.get_or_insert(error);
        }
    };
    let targets = vec![author.to_owned()];
    record(with_retries(|| deliver(targets.clone())).await);
    let mut after: Option<String> = None;
    loop {
        // Without this page the rest of the audience cannot be listed: report at once.
        let batch =
            with_retries(|| graph.followers(author, after.as_deref(), FANOUT_BATCH)).await?;
        let last_batch = batch.len() < FANOUT_BATCH;
        after = batch.last().cloned();
        if !batch.is_empty() {
            crate::faults::point("fanout.batch").await;
            record(with_retries(|| deliver(batch.clone())).await);
        }
        if last_batch {
            break;
        }
    }
    match failure {
        Some(error) => Err(error),
        None => Ok(written),
    }
}
