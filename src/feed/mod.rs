//! Home timelines. A [`FeedService`] is one way of building them; [`Timelines`] wraps the
//! configured one with what every strategy shares: fan-out to followers in batches,
//! filtering out entries that went stale under races, hydration of linked content, author
//! names, and keyset pagination. Delivery is in `delivery.rs`, edge upkeep in
//! `edges.rs`, the read path in `page.rs`.

mod buckets;
mod cache;
mod delivery;
mod edges;
mod fanout_on_read;
mod hidden;
mod hybrid;
mod names;
mod newer;
mod page;
mod reposts;
mod shared;
mod sized_buckets;
pub mod switch;
mod timed_buckets;

use std::sync::Arc;

use async_trait::async_trait;

pub use cache::CacheFeed;
pub use fanout_on_read::FanoutOnRead;
pub use hybrid::{HybridFeed, leave_below};
pub use newer::NewerPage;
pub use page::{TimelineItem, TimelinePage};
pub use reposts::Original;
pub(crate) use shared::{
    authored_entries, backfill_entries, distinct, merged_entries, normalise, note_read,
    retract_gone, with_reposts,
};
pub use sized_buckets::SizedBuckets;
pub use timed_buckets::TimedBuckets;

use crate::domain::clock::{Clock, SystemClock};
use crate::domain::{FeedStrategy, NameStamp, PostId, TimelineEntry, TimelineKind};
use crate::store::timelines::CacheVersion;
use crate::store::{Store, StoreResult};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FeedSettings {
    pub strategy: FeedStrategy,
    pub cache_size: u32,
    pub bucket_size: u32,
    pub bucket_span_ms: i64,
    pub embed_content: bool,
    pub backfill_on_follow: u32,
    /// A timed bucket's period is split into parts of at most this many entries.
    pub timed_bucket_max_entries: u32,
    /// Authors with at most this many followers are fanned out to in the request; larger
    /// audiences by the timelines worker, so the request does not wait for them.
    pub inline_fanout_max: u64,
    /// `hybrid`: authors with more followers than this become celebrities (see
    /// `feed::hybrid`); they stop being celebrities below nine tenths of it.
    pub hybrid_threshold: u64,
    /// How many MiB of rendered pages each process keeps to serve again while their
    /// cache is unchanged (see `service::pages`); 0 keeps none.
    pub page_memo_mib: u32,
    /// `cache` and `hybrid`: a cache unread for this long is dropped by the timelines
    /// worker (see `workers::timelines`); 0 keeps caches for ever.
    pub cache_idle_ms: i64,
}

/// A read records itself on its cache at most this often (see
/// [`FeedSettings::read_stamp_ms`]).
const READ_STAMP_MAX_MS: i64 = 3_600_000;

impl FeedSettings {
    /// How stale a cache's stored last read may be before a read stamps it again: an
    /// eighth of `cache_idle`, at most an hour (an hour too when caches are kept for
    /// ever, so that turning `cache_idle` on later finds true last reads). So a read
    /// writes at most once an hour per reader, and a cache is dropped between
    /// `cache_idle` and `cache_idle` plus twice this after its owner's last read.
    pub fn read_stamp_ms(&self) -> i64 {
        match self.cache_idle_ms {
            0 => READ_STAMP_MAX_MS,
            idle => (idle / 8).clamp(1, READ_STAMP_MAX_MS),
        }
    }

    /// How often the timelines worker looks for idle caches: as often as reads stamp
    /// them; never when `cache_idle` is 0.
    pub fn idle_sweep_ms(&self) -> Option<i64> {
        (self.cache_idle_ms > 0).then(|| self.read_stamp_ms())
    }

    /// What the bulk port needs of these settings to lay out timelines, as values.
    pub fn layout(&self) -> crate::store::bulk::TimelineLayout {
        crate::store::bulk::TimelineLayout {
            strategy: self.strategy,
            bucket_size: self.bucket_size,
            bucket_span_ms: self.bucket_span_ms,
            timed_bucket_max_entries: self.timed_bucket_max_entries,
            embed_content: self.embed_content,
            hybrid_threshold: self.hybrid_threshold,
            hybrid_leave_below: leave_below(self.hybrid_threshold),
        }
    }
}

impl Default for FeedSettings {
    fn default() -> Self {
        FeedSettings {
            strategy: FeedStrategy::Cache,
            cache_size: 50,
            bucket_size: 50,
            bucket_span_ms: 86_400_000,
            embed_content: true,
            backfill_on_follow: 100,
            timed_bucket_max_entries: 1000,
            inline_fanout_max: 1000,
            hybrid_threshold: 10_000,
            page_memo_mib: 128,
            cache_idle_ms: 7 * 86_400_000,
        }
    }
}

/// One way of building home timelines.
#[async_trait]
pub trait FeedService: Send + Sync {
    fn strategy(&self) -> FeedStrategy;

    /// The timelines this strategy materialises; `None` when it materialises none.
    fn kind(&self) -> Option<TimelineKind>;

    /// Whether [`FeedService::entries`] answers only entries the reader may be served
    /// (posts that exist, by the reader or authors the reader follows), so the read path
    /// need not check them again.
    fn serves_current(&self) -> bool {
        false
    }

    /// Delivers a stored post's or repost's entry (`item`, in its embedded form: see
    /// `Post::entry` and `Repost::entry`) to the timelines of its author (the reposter
    /// for a repost) and their followers, stamped with the author's `name` when content
    /// is embedded (`TimelineEntry::stored`). Returns how many timelines were written.
    async fn fan_out(&self, item: &TimelineEntry, name: Option<&NameStamp>) -> StoreResult<u64>;

    /// Delivers a stored post's or repost's entry to exactly `users`' timelines (the
    /// author's own, when the rest of the fan-out is left to the timelines worker).
    async fn deliver(
        &self,
        item: &TimelineEntry,
        name: Option<&NameStamp>,
        users: &[String],
    ) -> StoreResult<u64>;

    /// Undoes a delivery of a post that has been deleted.
    async fn retract(&self, post: PostId) -> StoreResult<()>;

    /// Brings `followee`'s recent posts into `follower`'s timeline, stamped with
    /// `followee`'s `name`.
    /// `since_ms` is when the edge was stored (see [`backfill_posts`]).
    async fn followed(
        &self,
        follower: &str,
        followee: &str,
        since_ms: i64,
        name: Option<&NameStamp>,
    ) -> StoreResult<()>;

    /// Takes `followee`'s posts out of `follower`'s timeline.
    async fn unfollowed(&self, follower: &str, followee: &str) -> StoreResult<()>;

    /// Up to `want` entries of `user`'s timeline below `before`, newest first and without
    /// duplicates. Fewer than `want` means nothing older exists.
    async fn entries(
        &self,
        user: &str,
        before: Option<PostId>,
        want: usize,
    ) -> StoreResult<Vec<TimelineEntry>>;

    /// [`FeedService::entries`], with a version when they are, as read, a function of
    /// stored rows that every write moves to a new version (a read the cache answered
    /// alone: it filled it, or the cache is complete and holds the whole timeline, see
    /// `TimelineStore::cache_version`). `None` by default.
    async fn versioned_entries(
        &self,
        user: &str,
        before: Option<PostId>,
        want: usize,
    ) -> StoreResult<(Vec<TimelineEntry>, Option<CacheVersion>)> {
        Ok((self.entries(user, before, want).await?, None))
    }

    /// Whether a read of `user`'s timeline that carried `kept` would read the same now,
    /// in one light read: the version to keep it under from now on, or `None` (see
    /// `TimelineStore::cache_stands`). `None` by default.
    async fn stands(&self, _user: &str, _kept: &CacheVersion) -> StoreResult<Option<CacheVersion>> {
        Ok(None)
    }
}

/// Builds the service the settings select; `clock` dates the caches' read stamps.
pub fn build(store: Store, settings: &FeedSettings, clock: Arc<dyn Clock>) -> Arc<dyn FeedService> {
    let settings = settings.clone();
    match settings.strategy {
        FeedStrategy::FanoutOnRead => Arc::new(FanoutOnRead::new(store)),
        FeedStrategy::TimedBuckets => Arc::new(TimedBuckets::new(store, settings)),
        FeedStrategy::SizedBuckets => Arc::new(SizedBuckets::new(store, settings)),
        FeedStrategy::Cache => Arc::new(CacheFeed::new(store, settings, clock)),
        FeedStrategy::Hybrid => Arc::new(HybridFeed::new(store, settings, clock)),
    }
}

/// The configured strategy plus everything strategies share.
pub struct Timelines {
    store: Store,
    feed: Arc<dyn FeedService>,
    settings: FeedSettings,
    clock: Arc<dyn Clock>,
    /// Readers' hidden sets, kept under their cache versions.
    hidden: hidden::HiddenMemo,
}

impl Timelines {
    pub fn new(store: Store, settings: &FeedSettings) -> Self {
        Timelines::with_clock(store, settings, Arc::new(SystemClock))
    }

    /// As [`Timelines::new`], with the clock that dates reads (tests move it by hand).
    pub fn with_clock(store: Store, settings: &FeedSettings, clock: Arc<dyn Clock>) -> Self {
        let feed = build(store.clone(), settings, clock.clone());
        Timelines {
            store,
            feed,
            settings: settings.clone(),
            clock,
            hidden: hidden::HiddenMemo::default(),
        }
    }

    pub fn settings(&self) -> &FeedSettings {
        &self.settings
    }

    /// The time reads are dated by.
    pub fn now_ms(&self) -> i64 {
        self.clock.now_ms()
    }

    /// Records a read of `user`'s cache at `now_ms` if `read_ms`, when a read was last
    /// known to be recorded, is older than `feed.cache_idle` allows (see
    /// [`FeedSettings::read_stamp_ms`]); whether it did. For a kept page, which is
    /// served without reading the cache's row. A failure is logged, not answered: the
    /// page stands, and the next read stamps again.
    pub async fn note_read(&self, user: &str, read_ms: i64, now_ms: i64) -> bool {
        note_read(&self.store, &self.settings, user, read_ms, now_ms).await
    }

    pub fn strategy(&self) -> FeedStrategy {
        self.feed.strategy()
    }
}
