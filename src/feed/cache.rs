//! Fanout on write into a capped cache: one bounded list of the newest entries per
//! *active* user. A cache is created on the user's first read, filled from fanout on
//! read; posts are pushed only into caches that exist; reads past the cache's end fall
//! back to fanout on read.
//!
//! Invariant: a cache holds every timeline entry at or above its oldest entry. Pushes
//! keep the newest `cache_size` (evicting only from the bottom), removals take single
//! entries out, and a follow backfills only entries above the oldest one, so the
//! invariant survives all of them, and the fallback starts exactly where the cache ends.
//!
//! Races with a build (the window between `cache_start` and `cache_fill`): posts fanned
//! out meanwhile land in the empty cache; a follow backfills into it as well, since the
//! fill may have read the timeline before the new edge existed; a delete may retract
//! before the fill re-inserts its post, so the build retracts deleted posts after the
//! fill (see `retract_deleted`). Every push is idempotent, so overlaps cost nothing.

use std::collections::HashMap;

use async_trait::async_trait;

use super::fanout_on_read::read_through;
use super::{FeedService, FeedSettings, normalise, retract_deleted};
use crate::domain::{FeedStrategy, NameStamp, Post, PostId, TimelineEntry, TimelineKind, now_ms};
use crate::store::timelines::with_retries;
use crate::store::{Store, StoreResult};

/// A cache still being built after this long was abandoned by a crashed reader.
const STALE_BUILD_MS: i64 = 30_000;

pub struct CacheFeed {
    store: Store,
    settings: FeedSettings,
}

impl CacheFeed {
    pub fn new(store: Store, settings: FeedSettings) -> Self {
        CacheFeed { store, settings }
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

    /// Takes out of caches the posts among `entries`, read earlier, deleted since.
    async fn settle(&self, entries: &[TimelineEntry]) -> StoreResult<()> {
        let ids: Vec<PostId> = entries.iter().map(|e| e.id).collect();
        retract_deleted(&self.store, TimelineKind::Cache, &ids).await
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

    async fn fan_out(&self, post: &Post, name: Option<&NameStamp>) -> StoreResult<u64> {
        let entry = [post.entry(self.settings.embed_content, name)];
        let timelines = &self.store.timelines;
        with_retries(|| {
            timelines.cache_push_to_audience(&post.author, &entry, self.settings.cache_size)
        })
        .await
    }

    async fn deliver(
        &self,
        post: &Post,
        name: Option<&NameStamp>,
        users: &[String],
    ) -> StoreResult<u64> {
        let entry = [post.entry(self.settings.embed_content, name)];
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
        name: Option<&NameStamp>,
    ) -> StoreResult<()> {
        let timelines = &self.store.timelines;
        let size = self.settings.cache_size;
        let Some(cache) = timelines.cache(follower).await? else {
            return Ok(());
        };
        let posts = self
            .store
            .content
            .posts_by_author(followee, None, self.settings.backfill_on_follow as usize)
            .await?;
        let mut entries: Vec<TimelineEntry> = posts
            .iter()
            .map(|p| p.entry(self.settings.embed_content, name))
            .collect();
        let mut oldest = cache.entries.last().map(|e| e.id);
        if !cache.ready {
            // Being built: the fill may have read the timeline before this edge existed.
            // Everything goes in; the fill keeps the newest `cache_size` of both.
            if timelines
                .cache_push_building(follower, &entries, size)
                .await?
            {
                return self.settle(&entries).await;
            }
            // The build finished in between: a cache is never unready again.
            oldest = timelines
                .cache(follower)
                .await?
                .and_then(|c| c.entries.last().map(|e| e.id));
        }
        // Entries below the cache's oldest would open a gap above older entries of other
        // authors that the cache does not hold; the fallback serves those instead.
        let Some(oldest) = oldest else {
            return Ok(());
        };
        entries.retain(|e| e.id > oldest);
        if !entries.is_empty() {
            timelines
                .cache_push(&[follower.to_owned()], &entries, size)
                .await?;
        }
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
        let store = &self.store;
        let cache = match store.timelines.cache_current(user, before, want).await? {
            Some(cache) if cache.ready => cache,
            Some(cache) => {
                if now_ms() - cache.started_at_ms > STALE_BUILD_MS {
                    self.build(user).await?;
                }
                return read_through(store, user, before, want).await;
            }
            None => {
                // Caches are for existing users only; the page reports the unknown user.
                if store.users.user(user).await?.is_none() {
                    return Ok(Vec::new());
                }
                if store.timelines.cache_start(user, now_ms()).await? {
                    self.build(user).await?;
                }
                return read_through(store, user, before, want).await;
            }
        };
        let oldest = cache.oldest;
        let mut entries = cache.entries;
        normalise(&mut entries, before, want);
        if entries.len() < want {
            let below = match (before, oldest) {
                (Some(before), Some(oldest)) => Some(before.min(oldest)),
                (before, oldest) => before.or(oldest),
            };
            let rest = read_through(store, user, below, want - entries.len()).await?;
            metrics::counter!("socialite_cache_fallbacks_total").increment(1);
            entries.extend(rest);
        }
        Ok(entries)
    }
}
