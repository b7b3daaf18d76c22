//! Port decorators that fail or pause chosen calls, for error-path and race tests. Each
//! forwards to the real adapter until told otherwise.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use socialite::domain::{
    Bucket, BucketKind, CacheState, NameStamp, PostId, TimelineEntry, TimelineKind,
};
use socialite::store::timelines::{CacheRows, CacheVersion, CacheView};
use socialite::store::{StoreError, StoreResult, TimelineStore};
use socialite::workers::{Hooks, Point};
use tokio::sync::Notify;

mod audit;
mod content;
mod crash;
mod tokens;
mod users;
#[allow(unused_imports)]
pub use audit::HoldingAudit;
#[allow(unused_imports)]
pub use content::{FailingContent, PausingContent};
#[allow(unused_imports)]
pub use crash::{CRASH, CrashOnce};
#[allow(unused_imports)]
pub use tokens::PausingTokens;
#[allow(unused_imports)]
pub use users::{FailingUsers, PausingUsers};

/// The text of every injected failure; a response that shows it leaked the cause.
pub const INJECTED: &str = "injected fault: the disk is on fire";

fn injected() -> StoreError {
    StoreError::Backend(anyhow::anyhow!(INJECTED))
}

/// Which write a [`FaultyTimelines`] is asked for: the method and its users.
pub type Rule = Box<dyn Fn(&str, &[String]) -> bool + Send + Sync>;

/// Holds the first call of `method` once armed, before it reaches the store, until
/// released: that write then lands after whatever the test does meanwhile.
pub struct Hold {
    pub method: &'static str,
    /// Only this user's calls, where the method names one user.
    pub user: Option<String>,
    pub armed: AtomicBool,
    pub reached: Notify,
    pub release: Notify,
}

impl Hold {
    /// Holds `method`'s calls for `user` only.
    #[allow(dead_code)]
    pub fn for_user(method: &'static str, user: &str) -> Arc<Hold> {
        Arc::new(Hold {
            method,
            user: Some(user.to_owned()),
            armed: AtomicBool::new(false),
            reached: Notify::new(),
            release: Notify::new(),
        })
    }

    pub fn new(method: &'static str) -> Arc<Hold> {
        Arc::new(Hold {
            method,
            user: None,
            armed: AtomicBool::new(false),
            reached: Notify::new(),
            release: Notify::new(),
        })
    }

    /// Waits here until released when armed and this is `method`'s call (for `user`,
    /// where the hold names one); disarms, so only the first such call waits.
    pub async fn pause(&self, method: &str, user: Option<&str>) {
        if self.method == method
            && (self.user.is_none() || self.user.as_deref() == user)
            && self.armed.swap(false, Ordering::SeqCst)
        {
            self.reached.notify_one();
            self.release.notified().await;
        }
    }
}

/// Timelines whose writes fail when `rule` says so; `failures` counts them. A [`Hold`]
/// in `hold` pauses its method's first call once armed.
pub struct FaultyTimelines {
    pub inner: Arc<dyn TimelineStore>,
    pub rule: Mutex<Rule>,
    pub failures: Mutex<u32>,
    pub hold: Mutex<Option<Arc<Hold>>>,
}

impl FaultyTimelines {
    pub fn new(inner: Arc<dyn TimelineStore>) -> Arc<Self> {
        let rule: Rule = Box::new(|_, _| false);
        Arc::new(FaultyTimelines {
            inner,
            rule: Mutex::new(rule),
            failures: Mutex::new(0),
            hold: Mutex::new(None),
        })
    }

    async fn held(&self, method: &str) {
        self.held_for(method, None).await
    }

    async fn held_for(&self, method: &str, user: Option<&str>) {
        let hold = self.hold.lock().unwrap().clone();
        if let Some(hold) = hold {
            hold.pause(method, user).await;
        }
    }

    pub fn set(&self, rule: Rule) {
        *self.rule.lock().unwrap() = rule;
        *self.failures.lock().unwrap() = 0;
    }

    pub fn failures(&self) -> u32 {
        *self.failures.lock().unwrap()
    }

    fn check(&self, method: &str, users: &[String]) -> StoreResult<()> {
        if (self.rule.lock().unwrap())(method, users) {
            *self.failures.lock().unwrap() += 1;
            return Err(StoreError::Backend(anyhow::anyhow!(
                "injected {method} failure"
            )));
        }
        Ok(())
    }
}

#[async_trait]
impl TimelineStore for FaultyTimelines {
    async fn timed_push(
        &self,
        users: &[String],
        key: i64,
        entries: &[TimelineEntry],
        max: u32,
    ) -> StoreResult<()> {
        self.check("timed_push", users)?;
        self.inner.timed_push(users, key, entries, max).await
    }
    async fn sized_push(
        &self,
        users: &[String],
        e: &[TimelineEntry],
        size: u32,
    ) -> StoreResult<()> {
        self.check("sized_push", users)?;
        self.inner.sized_push(users, e, size).await
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
        e: &[TimelineEntry],
        size: u32,
    ) -> StoreResult<u64> {
        self.check("cache_push", users)?;
        self.inner.cache_push(users, e, size).await
    }
    async fn cache_push_to_audience(
        &self,
        author: &str,
        e: &[TimelineEntry],
        size: u32,
    ) -> StoreResult<u64> {
        self.check("cache_push_to_audience", &[author.to_owned()])?;
        self.inner.cache_push_to_audience(author, e, size).await
    }
    async fn cache(&self, user: &str) -> StoreResult<Option<CacheState>> {
        self.held_for("cache", Some(user)).await;
        self.inner.cache(user).await
    }
    async fn cache_start(&self, user: &str, now_ms: i64) -> StoreResult<bool> {
        self.inner.cache_start(user, now_ms).await
    }
    async fn cache_reset(&self, user: &str) -> StoreResult<bool> {
        self.inner.cache_reset(user).await
    }
    async fn cache_touch(&self, user: &str, now_ms: i64) -> StoreResult<()> {
        self.inner.cache_touch(user, now_ms).await
    }
    async fn drop_idle_caches(&self, now_ms: i64, idle_ms: i64, limit: usize) -> StoreResult<u64> {
        self.inner.drop_idle_caches(now_ms, idle_ms, limit).await
    }
    async fn settle_retractions(&self) -> StoreResult<u64> {
        self.inner.settle_retractions().await
    }
    async fn cache_backfill(
        &self,
        user: &str,
        e: &[TimelineEntry],
        size: u32,
        cut: bool,
    ) -> StoreResult<bool> {
        self.check("cache_backfill", &[user.to_owned()])?;
        self.inner.cache_backfill(user, e, size, cut).await
    }
    async fn cache_fill(&self, user: &str, e: &[TimelineEntry], size: u32) -> StoreResult<()> {
        self.check("cache_fill", &[user.to_owned()])?;
        self.held_for("cache_fill", Some(user)).await;
        self.inner.cache_fill(user, e, size).await
    }
    async fn remove_author_entries(
        &self,
        kind: TimelineKind,
        user: &str,
        author: &str,
    ) -> StoreResult<()> {
        self.check("remove_author_entries", &[user.to_owned()])?;
        self.held("remove_author_entries").await;
        self.inner.remove_author_entries(kind, user, author).await
    }
    async fn remove_post_entries(&self, kind: TimelineKind, post: PostId) -> StoreResult<()> {
        self.check("remove_post_entries", &[])?;
        self.inner.remove_post_entries(kind, post).await
    }
    async fn cache_current(
        &self,
        user: &str,
        before: Option<PostId>,
        limit: usize,
    ) -> StoreResult<Option<CacheView>> {
        self.inner.cache_current(user, before, limit).await
    }
    async fn cache_version(
        &self,
        user: &str,
        rows: CacheRows,
        merged: bool,
    ) -> StoreResult<Option<CacheVersion>> {
        self.inner.cache_version(user, rows, merged).await
    }
    async fn cache_stands(
        &self,
        user: &str,
        kept: &CacheVersion,
    ) -> StoreResult<Option<CacheVersion>> {
        self.inner.cache_stands(user, kept).await
    }
    async fn rename_author(
        &self,
        kind: TimelineKind,
        users: &[String],
        author: &str,
        name: &NameStamp,
    ) -> StoreResult<()> {
        self.check("rename_author", users)?;
        self.inner.rename_author(kind, users, author, name).await
    }
    async fn renamed(&self, authors: &[String]) -> StoreResult<Vec<(String, u64)>> {
        self.inner.renamed(authors).await
    }
    async fn mark_renamed(&self, author: &str, version: u64) -> StoreResult<()> {
        self.inner.mark_renamed(author, version).await
    }
}

/// Worker hooks that pause a step at `Read` (a change read, nothing applied yet) until
/// `resume` is notified, notifying `paused` when they get there.
#[derive(Default)]
pub struct PauseAtRead {
    pub paused: Notify,
    pub resume: Notify,
}

#[async_trait]
impl Hooks for PauseAtRead {
    async fn at(&self, _worker: &str, point: Point) -> StoreResult<()> {
        if point == Point::Read {
            self.paused.notify_one();
            self.resume.notified().await;
        }
        Ok(())
    }
}
