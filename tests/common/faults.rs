//! Port decorators that fail chosen calls, for error-path tests. Each forwards to the
//! real adapter until told to fail.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use async_trait::async_trait;
use socialite::domain::{
    Bucket, BucketKind, CacheState, Post, PostId, TimelineEntry, TimelineKind,
};
use socialite::store::{ContentStore, StoreError, StoreResult, TimelineStore};

/// The text of every injected failure; a response that shows it leaked the cause.
pub const INJECTED: &str = "injected fault: the disk is on fire";

fn injected() -> StoreError {
    StoreError::Backend(anyhow::anyhow!(INJECTED))
}

/// Fails every call while `failing` is set.
pub struct FailingContent {
    pub inner: Arc<dyn ContentStore>,
    pub failing: AtomicBool,
}

impl FailingContent {
    fn check(&self) -> StoreResult<()> {
        if self.failing.load(Ordering::SeqCst) {
            return Err(injected());
        }
        Ok(())
    }
}

#[async_trait]
impl ContentStore for FailingContent {
    async fn insert_post(&self, author: &str, text: &str, now_ms: i64) -> StoreResult<Post> {
        self.check()?;
        self.inner.insert_post(author, text, now_ms).await
    }
    async fn post(&self, id: PostId) -> StoreResult<Option<Post>> {
        self.check()?;
        self.inner.post(id).await
    }
    async fn delete_post(&self, id: PostId) -> StoreResult<Option<Post>> {
        self.check()?;
        self.inner.delete_post(id).await
    }
    async fn posts_by_author(
        &self,
        author: &str,
        before: Option<PostId>,
        limit: usize,
    ) -> StoreResult<Vec<Post>> {
        self.check()?;
        self.inner.posts_by_author(author, before, limit).await
    }
    async fn posts_by_ids(&self, ids: &[PostId]) -> StoreResult<Vec<Post>> {
        self.check()?;
        self.inner.posts_by_ids(ids).await
    }
    async fn home_posts(
        &self,
        user: &str,
        before: Option<PostId>,
        limit: usize,
    ) -> StoreResult<Vec<Post>> {
        self.check()?;
        self.inner.home_posts(user, before, limit).await
    }
}

/// Fails retractions (`remove_post_entries`) while `fail_retractions` is set, counting
/// the attempts; everything else goes through.
pub struct FailingTimelines {
    pub inner: Arc<dyn TimelineStore>,
    pub fail_retractions: AtomicBool,
    pub retraction_attempts: AtomicUsize,
}

#[async_trait]
impl TimelineStore for FailingTimelines {
    async fn timed_push(
        &self,
        users: &[String],
        key: i64,
        entries: &[TimelineEntry],
    ) -> StoreResult<()> {
        self.inner.timed_push(users, key, entries).await
    }
    async fn sized_push(
        &self,
        users: &[String],
        entries: &[TimelineEntry],
        bucket_size: u32,
    ) -> StoreResult<()> {
        self.inner.sized_push(users, entries, bucket_size).await
    }
    async fn buckets(
        &self,
        kind: BucketKind,
        user: &str,
        before: Option<PostId>,
        skip: usize,
        limit: usize,
        per_bucket: usize,
    ) -> StoreResult<Vec<Bucket>> {
        self.inner
            .buckets(kind, user, before, skip, limit, per_bucket)
            .await
    }
    async fn cache_push(
        &self,
        users: &[String],
        entries: &[TimelineEntry],
        cache_size: u32,
    ) -> StoreResult<u64> {
        self.inner.cache_push(users, entries, cache_size).await
    }
    async fn cache_push_to_audience(
        &self,
        author: &str,
        entries: &[TimelineEntry],
        cache_size: u32,
    ) -> StoreResult<u64> {
        self.inner
            .cache_push_to_audience(author, entries, cache_size)
            .await
    }
    async fn cache(&self, user: &str) -> StoreResult<Option<CacheState>> {
        self.inner.cache(user).await
    }
    async fn cache_start(&self, user: &str, now_ms: i64) -> StoreResult<bool> {
        self.inner.cache_start(user, now_ms).await
    }
    async fn cache_fill(
        &self,
        user: &str,
        entries: &[TimelineEntry],
        cache_size: u32,
    ) -> StoreResult<()> {
        self.inner.cache_fill(user, entries, cache_size).await
    }
    async fn remove_author_entries(
        &self,
        kind: TimelineKind,
        user: &str,
        author: &str,
    ) -> StoreResult<()> {
        self.inner.remove_author_entries(kind, user, author).await
    }
    async fn remove_post_entries(&self, kind: TimelineKind, post: PostId) -> StoreResult<()> {
        self.retraction_attempts.fetch_add(1, Ordering::SeqCst);
        if self.fail_retractions.load(Ordering::SeqCst) {
            return Err(injected());
        }
        self.inner.remove_post_entries(kind, post).await
    }
}
