//! The materialised timelines port: timed and sized buckets, the capped cache, and
//! removals from all of them.

use async_trait::async_trait;

use super::StoreResult;
use crate::domain::{Bucket, BucketKind, CacheState, PostId, TimelineEntry, TimelineKind};

#[async_trait]
pub trait TimelineStore: Send + Sync + 'static {
    /// Appends `entries` to the timed bucket `key` of every user in `users`, creating
    /// the bucket when it does not exist.
    async fn timed_push(
        &self,
        users: &[String],
        key: i64,
        entries: &[TimelineEntry],
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
    /// newest `cache_size` entries. Returns how many caches were written.
    async fn cache_push(
        &self,
        users: &[String],
        entries: &[TimelineEntry],
        cache_size: u32,
    ) -> StoreResult<u64>;
    /// Pushes `entries` into the caches of `author` and of `author`'s followers, where
    /// they have one. The embedded store walks whichever is smaller, the followers or the
    /// caches, so a post costs nothing per follower without a cache when few users read.
    async fn cache_push_to_audience(
        &self,
        author: &str,
        entries: &[TimelineEntry],
        cache_size: u32,
    ) -> StoreResult<u64>;
    async fn cache(&self, user: &str) -> StoreResult<Option<CacheState>>;
    /// Creates an empty, not yet ready cache. Returns false when one already exists.
    async fn cache_start(&self, user: &str, now_ms: i64) -> StoreResult<bool>;
    /// Merges `entries` into the cache and marks it ready.
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
}
