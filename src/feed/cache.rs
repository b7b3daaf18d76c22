//! Fanout on write into a capped cache: one bounded list of the newest entries per
//! *active* user. A cache is created on the user's first read, filled from fanout on
//! read; posts are pushed only into caches that exist; reads past the cache's end fall
//! back to fanout on read.
//!
//! Invariant: a cache covers exactly the interval from its oldest entry upward: it
//! holds every timeline entry at or above that entry, so the fallback starts exactly
//! where the cache ends. A cache is also *complete* while it holds the whole timeline
//! (nothing was ever left below its oldest entry). Every writer keeps this, in the same
//! atomic store write (see `TimelineStore::cache_push`):
//! - a ready cache takes an entry below its oldest one only while complete. Otherwise a
//!   late push (a worker's delivery, a follow's backfill) would become the oldest entry
//!   and hide from the fallback every post between it and the old bottom;
//! - pushes keep the newest `cache_size`, evicting only from the bottom; a trim that
//!   drops an entry ends completeness, and so does a fill of `cache_size` entries;
//! - removals take entries out, which only narrows what the cache must hold. A removal
//!   that empties an incomplete cache leaves it covering nothing, able to take nothing:
//!   the next read deletes it and builds it again (`cache_reset`).
//!
//! So a cache serves every live post of the reader and of every author they follow,
//! like fanout on read; a follow brings in every post of the followee the cache's
//! interval covers (at most `cache_size`), whatever `feed.backfill_on_follow` says.
//!
//! A cache unread for `feed.cache_idle` is dropped by the timelines worker (see
//! `workers::timelines::idle`) and built again by the next read, which is the path of a
//! first read; reads record themselves on the cache only when its stamp is older than
//! `FeedSettings::read_stamp_ms` (`note_read`), so warm reads write nothing.
//!
//! Races with a build (the window between `cache_start` and `cache_fill`): posts fanned
//! out meanwhile land in the empty cache; a follow backfills into it as well, since the
//! fill may have read the timeline before the new edge existed; a delete may retract
//! before the fill re-inserts its post, so the build retracts deleted posts after the
//! fill (see `retract_deleted`). Every push is idempotent, so overlaps cost nothing.

use std::collections::HashMap;
use std::sync::Arc;

use async_trait::async_trait;

use super::fanout_on_read::{read_shown, read_through};
use super::{FeedService, FeedSettings, authored_entries, normalise, note_read, retract_gone};
use crate::domain::clock::Clock;
use crate::domain::{FeedStrategy, NameStamp, PostId, TimelineEntry, TimelineKind};
use crate::store::timelines::{CacheRows, CacheVersion, with_retries};
use crate::store::{Store, StoreResult};

/// A cache still being built after this long was abandoned by a crashed reader.
const STALE_BUILD_MS: i64 = 30_000;

pub struct CacheFeed {
    store: Store,
    settings: FeedSettings,
    /// Dates builds and read stamps.
    clock: Arc<dyn Clock>,
}

impl CacheFeed {
    pub fn new(store: Store, settings: FeedSettings, clock: Arc<dyn Clock>) -> Self {
        CacheFeed {
            store,
            settings,
            clock,
        }
    }

    async fn name_stamps(
        &self,
        reader: &str,
        authors: &[String],
    ) -> StoreResult<HashMap<String, NameStamp>> {
        let views = self.store.users.authors(reader, authors).await?;
        Ok(views
            .into_iter()
            .map(|v| (v.id.clone(), v.name_stamp()))
            .collect())
    }

    /// Takes out of caches the posts among `entries`, read earlier, deleted since, and
    /// the reposts undone since.
    async fn settle(&self, entries: &[TimelineEntry]) -> StoreResult<()> {
        retract_gone(&self.store, TimelineKind::Cache, entries).await
    }

    /// Fills a cache from fanout on read. The empty cache already exists, so posts
    /// fanned out meanwhile land in it too and nothing is lost. Embedded entries are
    /// stamped with their authors' names, and stamped again where a rename landed
    /// between the lookup and the fill.
    async fn build(&self, user: &str) -> StoreResult<()> {
        let size = self.settings.cache_size;
        let mut entries = read_through(&self.store, user, None, size as usize).await?;
        let mut authors: Vec<String> = entries.iter().map(|e| e.author.clone()).collect();
        authors.sort_unstable();
        authors.dedup();
        let mut stamps = HashMap::new();
        if self.settings.embed_content {
            stamps = self.name_stamps(user, &authors).await?;
            for entry in &mut entries {
                entry.name = stamps.get(&entry.author).cloned();
            }
        } else {
            entries.iter_mut().for_each(|e| e.text = None);
        }
        self.store
            .timelines
            .cache_fill(user, &entries, size)
            .await?;
        self.settle(&entries).await?;
        if !stamps.is_empty() {
            let owner = [user.to_owned()];
            for (author, now) in self.name_stamps(user, &authors).await? {
                if stamps
                    .get(&author)
                    .is_some_and(|then| now.version > then.version)
                {
                    self.store
                        .timelines
                        .rename_author(TimelineKind::Cache, &owner, &author, &now)
                        .await?;
                }
            }
        }
        metrics::counter!("socialite_cache_builds_total").increment(1);
        Ok(())
    }
}

#[async_trait]
impl FeedService for CacheFeed {
    fn strategy(&self) -> FeedStrategy {
        FeedStrategy::Cache
    }

    /// One store call delivers to the whole audience (both stores in batches, retrying
    /// each), so a failure retries the call: pushes are idempotent, and caches that
    /// already took the post are not written.
    fn kind(&self) -> Option<TimelineKind> {
        Some(TimelineKind::Cache)
    }

    /// Reads filter in the same store call (`cache_current`) what the generic check
    /// filters for the other strategies, and the fallback reads fresh posts.
    fn serves_current(&self) -> bool {
        true
    }

    async fn fan_out(&self, item: &TimelineEntry, name: Option<&NameStamp>) -> StoreResult<u64> {
        let entry = [item.stored(self.settings.embed_content, name)];
        let timelines = &self.store.timelines;
        with_retries(|| {
            timelines.cache_push_to_audience(&item.author, &entry, self.settings.cache_size)
        })
        .await
    }

    async fn deliver(
        &self,
        item: &TimelineEntry,
        name: Option<&NameStamp>,
        users: &[String],
    ) -> StoreResult<u64> {
        let entry = [item.stored(self.settings.embed_content, name)];
        self.store
            .timelines
            .cache_push(users, &entry, self.settings.cache_size)
            .await
    }

    async fn retract(&self, post: PostId) -> StoreResult<()> {
        self.store
            .timelines
            .remove_post_entries(TimelineKind::Cache, post)
            .await
    }

    async fn followed(
        &self,
        follower: &str,
        followee: &str,
        _since_ms: i64,
        name: Option<&NameStamp>,
    ) -> StoreResult<()> {
        // The followee's newest `cache_size`: any older post of theirs above the cache's
        // oldest entry would be trimmed by these anyway. The store keeps the coverage
        // rule, so entries a ready cache must not take are left to the fallback. A read
        // cut at its limit may leave older posts out, so the cache is no longer complete
        // even if nothing is trimmed: else it would take a late push below them. The
        // followee's reposts are entries of theirs like their posts.
        let size = self.settings.cache_size;
        let entries: Vec<TimelineEntry> =
            authored_entries(&self.store, followee, None, size as usize)
                .await?
                .iter()
                .map(|e| e.stored(self.settings.embed_content, name))
                .collect();
        if entries.is_empty() {
            return Ok(());
        }
        let cut = entries.len() >= size as usize;
        self.store
            .timelines
            .cache_backfill(follower, &entries, size, cut)
            .await?;
        self.settle(&entries).await
    }

    async fn unfollowed(&self, follower: &str, followee: &str) -> StoreResult<()> {
        self.store
            .timelines
            .remove_author_entries(TimelineKind::Cache, follower, followee)
            .await
    }

    async fn entries(
        &self,
        user: &str,
        before: Option<PostId>,
        want: usize,
    ) -> StoreResult<Vec<TimelineEntry>> {
        Ok(self.read(user, before, want, false).await?.0)
    }

    async fn stands(&self, user: &str, kept: &CacheVersion) -> StoreResult<Option<CacheVersion>> {
        self.store.timelines.cache_stands(user, kept).await
    }

    /// Versioned when the cache alone answered the read (it filled it, or the cache is
    /// complete: nothing exists below a complete cache), or the read went on below the
    /// cache and the store keeps a below clock ([`CacheVersion::below`]).
    async fn versioned_entries(
        &self,
        user: &str,
        before: Option<PostId>,
        want: usize,
    ) -> StoreResult<(Vec<TimelineEntry>, Option<CacheVersion>)> {
        self.read(user, before, want, true).await
    }
}

impl CacheFeed {
    /// The entries of [`FeedService::entries`], and with `versioned` their version as
    /// [`FeedService::versioned_entries`] gives it (a read below the cache costs one
    /// more light read for it).
    async fn read(
        &self,
        user: &str,
        before: Option<PostId>,
        want: usize,
        versioned: bool,
    ) -> StoreResult<(Vec<TimelineEntry>, Option<CacheVersion>)> {
        let store = &self.store;
        let now_ms = || self.clock.now_ms();
        let cache = match store.timelines.cache_current(user, before, want).await? {
            // Ready and covering something, or complete (so taking every push).
            Some(cache) if cache.ready && (cache.complete || cache.oldest.is_some()) => cache,
            Some(cache) if cache.ready => {
                // Emptied by removals while incomplete: it covers nothing and can take
                // nothing, so build it again.
                if store.timelines.cache_reset(user).await?
                    && store.timelines.cache_start(user, now_ms()).await?
                {
                    self.build(user).await?;
                }
                return Ok((read_shown(store, user, before, want, now_ms()).await?, None));
            }
            Some(cache) => {
                if now_ms() - cache.started_at_ms > STALE_BUILD_MS {
                    self.build(user).await?;
                }
                return Ok((read_shown(store, user, before, want, now_ms()).await?, None));
            }
            None => {
                // Caches are for existing users only; the page reports the unknown user.
                if store.users.user(user).await?.is_none() {
                    return Ok((Vec::new(), None));
                }
                if store.timelines.cache_start(user, now_ms()).await? {
                    self.build(user).await?;
                }
                return Ok((read_shown(store, user, before, want, now_ms()).await?, None));
            }
        };
        // The owner read it: recorded coarsely, so that warm reads write nothing.
        note_read(store, &self.settings, user, cache.read_ms, now_ms()).await;
        let (oldest, version, complete) = (cache.oldest, cache.version, cache.complete);
        let mut entries = cache.entries;
        normalise(&mut entries, before, want);
        // Served from the cache alone when it filled the read, or when it is complete:
        // a complete cache holds the whole timeline, so nothing exists below it and a
        // short read of it is the rest of the timeline (its span of rows reaches down to
        // the bottom). Either way the read is a function of the rows its version covers.
        let full = entries.len() >= want;
        if full || complete {
            let from = match entries.last() {
                Some(last) if full => last.id,
                _ => PostId::MIN,
            };
            let rows = CacheRows {
                from,
                below: before,
            };
            let version = version.map(|cache| CacheVersion {
                cache,
                rows,
                merged: None,
                below: None,
            });
            return Ok((entries, version));
        }
        let below = match (before, oldest) {
            (Some(before), Some(oldest)) => Some(before.min(oldest)),
            (before, oldest) => before.or(oldest),
        };
        // The below clock is read after the cache's rows and before the rows below
        // them: a delete or rename the fallback misses moved it after this read, so a
        // page kept under it is not served again. Every cache row below `before` was
        // read, so the span reaches down to the bottom.
        let clock = match (versioned, version) {
            (true, Some(_)) => store.timelines.below_clock().await?,
            _ => None,
        };
        let rest = read_shown(store, user, below, want - entries.len(), now_ms()).await?;
        metrics::counter!("socialite_cache_fallbacks_total").increment(1);
        entries.extend(rest);
        let version = version.zip(clock).map(|(cache, clock)| CacheVersion {
            cache,
            rows: CacheRows {
                from: PostId::MIN,
                below: before,
            },
            merged: None,
            below: Some(clock),
        });
        Ok((entries, version))
    }
}
