//! The storage port: everything the product needs from a database, implemented by the
//! embedded SQLite adapter and the MongoDB adapter. One conformance suite
//! (`tests/conformance.rs`) holds both to the same behaviour.

pub mod embedded;
pub mod mongo;

use async_trait::async_trait;

use crate::activity::{Activity, ActivityLayout, ActivityLimits, ActivityPage, ActivityType};
use crate::domain::{
    AuthorView, Bucket, BucketKind, CacheState, Change, ChangePosition, NewUser, Post, PostId,
    TimelineEntry, TimelineKind, User,
};

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("{0} not found")]
    NotFound(String),
    #[error("{0} already exists")]
    Conflict(String),
    /// The change feed no longer holds the position a reader asked to resume from.
    #[error("change feed history lost: position {0} was trimmed")]
    HistoryLost(String),
    #[error("invalid change feed position {0:?}")]
    InvalidPosition(String),
    #[error("storage failure: {0:#}")]
    Backend(#[from] anyhow::Error),
}

pub type StoreResult<T> = Result<T, StoreError>;

/// The port. Methods that change users, follows or posts also append to the change feed,
/// atomically with the change.
#[async_trait]
pub trait Store: Send + Sync + 'static {
    /// `embedded` or `mongodb`.
    fn backend(&self) -> &'static str;

    /// Fails when the storage cannot serve requests.
    async fn ping(&self) -> StoreResult<()>;

    // Users.

    /// `Conflict` when the id is taken.
    async fn create_user(&self, user: &NewUser) -> StoreResult<User>;
    async fn user(&self, id: &str) -> StoreResult<Option<User>>;
    /// `None` when the user is unknown.
    async fn rename_user(&self, id: &str, display_name: &str) -> StoreResult<Option<User>>;

    // The follow graph.

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
    /// The existing users among `authors`, with their display names and whether `reader`
    /// follows them: everything a timeline page needs about its authors, in one call.
    async fn authors(&self, reader: &str, authors: &[String]) -> StoreResult<Vec<AuthorView>>;

    // Content.

    /// Stores a post with a fresh id greater than every earlier one. `NotFound` when the
    /// author is unknown.
    async fn insert_post(&self, author: &str, text: &str, now_ms: i64) -> StoreResult<Post>;
    async fn post(&self, id: PostId) -> StoreResult<Option<Post>>;
    /// Returns the deleted post, `None` when it did not exist.
    async fn delete_post(&self, id: PostId) -> StoreResult<Option<Post>>;
    /// Newest first, ids strictly below `before`.
    async fn posts_by_author(
        &self,
        author: &str,
        before: Option<PostId>,
        limit: usize,
    ) -> StoreResult<Vec<Post>>;
    /// The posts that exist among `ids`, in no particular order.
    async fn posts_by_ids(&self, ids: &[PostId]) -> StoreResult<Vec<Post>>;
    /// Fanout on read: the newest posts by `user` and everyone `user` follows, newest
    /// first, ids strictly below `before`.
    async fn home_posts(
        &self,
        user: &str,
        before: Option<PostId>,
        limit: usize,
    ) -> StoreResult<Vec<Post>>;

    // Materialised timelines: buckets.

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

    // Materialised timelines: the capped cache.

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

    // Materialised timelines: removals.

    /// Removes `author`'s entries from `user`'s timeline.
    async fn remove_author_entries(
        &self,
        kind: TimelineKind,
        user: &str,
        author: &str,
    ) -> StoreResult<()>;
    /// Removes a post from every timeline.
    async fn remove_post_entries(&self, kind: TimelineKind, post: PostId) -> StoreResult<()>;

    // The change feed.

    /// Up to `limit` changes after `after` (from the oldest retained one when `None`),
    /// in order. `HistoryLost` when `after` has been trimmed away.
    async fn changes(
        &self,
        after: Option<&ChangePosition>,
        limit: usize,
    ) -> StoreResult<Vec<Change>>;
    /// Drops changes recorded before `older_than_ms`. Returns how many were dropped.
    async fn trim_changes(&self, older_than_ms: i64) -> StoreResult<u64>;
}

/// The activity log and likes. A separate port from [`Store`] because it is a separate
/// aggregate with its own collections.
#[async_trait]
pub trait ActivityStore: Send + Sync + 'static {
    /// Appends an activity with the next sequence number. A user's first activity fixes
    /// the layout of their log to `limits`. `NotFound` when the user is unknown.
    async fn record_activity(
        &self,
        user: &str,
        kind: ActivityType,
        reference: &str,
        ts_ms: i64,
        limits: ActivityLimits,
    ) -> StoreResult<Activity>;
    /// Entries `skip..skip+limit` counted from the newest, newest first, reading only
    /// the documents that hold them. `NotFound` when the user is unknown.
    async fn activities(&self, user: &str, skip: u64, limit: u64) -> StoreResult<ActivityPage>;
    /// How many entries the primary document and each page hold.
    async fn activity_layout(&self, user: &str) -> StoreResult<ActivityLayout>;
    /// Returns whether the like is new. `NotFound` when the user or post is unknown.
    async fn like(&self, user: &str, post: PostId, now_ms: i64) -> StoreResult<bool>;
    /// Returns whether a like was removed.
    async fn unlike(&self, user: &str, post: PostId) -> StoreResult<bool>;
}
