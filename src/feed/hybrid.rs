//! The hybrid: the capped cache for everyone, except that *celebrities*, authors with
//! more than `feed.hybrid_threshold` followers, are not fanned out: neither their posts
//! nor their reposts. A reader's page merges their cache with the newest posts and
//! reposts of the celebrities they follow, read through the `(author, id)` and
//! `(user, id)` indexes and bounded by the page.
//!
//! Completeness across a switch rests on two marks (see `GraphStore::reclassify`): an
//! author becomes a celebrity only after every edge to them is flagged *merged*, a flag
//! that new edges copy and that is never taken away; and a page merges the posts and
//! the reposts of every flagged followee. So an entry (a post, or a repost under its own
//! id) that is not fanned out (its author was a celebrity when the fan-out ran) is
//! always merged, and one fanned out as well is served once, since pages drop duplicate
//! ids (and a repost's seen-once check, `feed::reposts`, reads the sources, wherever the
//! entry came from). Leaving celebrity status needs nothing: later entries are fanned
//! out again, earlier ones stay merged. The status changes with hysteresis (above the
//! threshold to enter, below nine tenths of it to leave), decided by the timelines
//! worker on each follow change.
//!
//! A reader finds the celebrities they follow through the flagged edges (an index of
//! those edges alone, by follower), never by walking their whole follow list.

use std::sync::Arc;

use async_trait::async_trait;

use super::cache::CacheFeed;
use super::shared::repost_entries;
use super::{FeedService, FeedSettings, normalise};
use crate::domain::clock::Clock;
use crate::domain::{FeedStrategy, NameStamp, PostId, TimelineEntry, TimelineKind};
use crate::store::timelines::CacheVersion;
use crate::store::{Store, StoreResult};

pub struct HybridFeed {
    store: Store,
    cache: CacheFeed,
}

impl HybridFeed {
    pub fn new(store: Store, settings: FeedSettings, clock: Arc<dyn Clock>) -> Self {
        HybridFeed {
            cache: CacheFeed::new(store.clone(), settings, clock),
            store,
        }
    }
}

/// The follower count below which a celebrity stops being one: nine tenths of the
/// threshold, so an author hovering at it does not flap.
pub fn leave_below(threshold: u64) -> u64 {
    threshold - threshold / 10
}

#[async_trait]
impl FeedService for HybridFeed {
    fn strategy(&self) -> FeedStrategy {
        FeedStrategy::Hybrid
    }

    fn kind(&self) -> Option<TimelineKind> {
        Some(TimelineKind::Cache)
    }

    /// The cache's entries are current (see `CacheFeed`), and merged posts are read as
    /// they stand, by authors followed as the read finds them.
    fn serves_current(&self) -> bool {
        true
    }

    /// A celebrity's post or repost reaches their own cache only; everyone else's is a
    /// cache fan-out. The status is read now, not at the post: either way the entry is
    /// served, merged or cached.
    async fn fan_out(&self, item: &TimelineEntry, name: Option<&NameStamp>) -> StoreResult<u64> {
        if self.store.graph.celebrity(&item.author).await? {
            let own = std::slice::from_ref(&item.author);
            return self.cache.deliver(item, name, own).await;
        }
        self.cache.fan_out(item, name).await
    }

    async fn deliver(
        &self,
        item: &TimelineEntry,
        name: Option<&NameStamp>,
        users: &[String],
    ) -> StoreResult<u64> {
        self.cache.deliver(item, name, users).await
    }

    async fn retract(&self, post: PostId) -> StoreResult<()> {
        self.cache.retract(post).await
    }

    async fn followed(
        &self,
        follower: &str,
        followee: &str,
        since_ms: i64,
        name: Option<&NameStamp>,
    ) -> StoreResult<()> {
        self.cache
            .followed(follower, followee, since_ms, name)
            .await
    }

    async fn unfollowed(&self, follower: &str, followee: &str) -> StoreResult<()> {
        self.cache.unfollowed(follower, followee).await
    }

    /// Both halves hold everything below `before` up to `want` (fewer only when nothing
    /// older exists), so their merge does too. The cache half is read first: when it
    /// fills the page, its oldest entry bounds the merged half, since `want` distinct
    /// entries at or above it are served whatever is merged, and a celebrity with
    /// nothing newer costs the merge no read of their posts or reposts.
    async fn entries(
        &self,
        user: &str,
        before: Option<PostId>,
        want: usize,
    ) -> StoreResult<Vec<TimelineEntry>> {
        let entries = self.cache.entries(user, before, want).await?;
        self.merge(user, before, want, entries).await
    }

    async fn stands(&self, user: &str, kept: &CacheVersion) -> StoreResult<Option<CacheVersion>> {
        self.store.timelines.cache_stands(user, kept).await
    }

    /// Versioned when the cache alone filled its half: the merged half's version is
    /// read after the cache's rows (and must find them unchanged) and before the merge
    /// reads, so a change the merge sees has moved the version the page is kept under
    /// (a merged author's post, repost, unrepost, a delete of either, and a rename all
    /// move their merge version; a page that merged a repost is not kept at all).
    /// A read that went on below the cache is not versioned (its version has no room
    /// for both the below clock and the merge's).
    async fn versioned_entries(
        &self,
        user: &str,
        before: Option<PostId>,
        want: usize,
    ) -> StoreResult<(Vec<TimelineEntry>, Option<CacheVersion>)> {
        let (entries, cache) = self.cache.versioned_entries(user, before, want).await?;
        let version = match cache {
            Some(cache) if cache.below.is_none() => self
                .store
                .timelines
                .cache_version(user, cache.rows, true)
                .await?
                .filter(|v| v.cache == cache.cache),
            _ => None,
        };
        Ok((self.merge(user, before, want, entries).await?, version))
    }
}

impl HybridFeed {
    /// `entries`, the cache half, merged with the celebrities' half: their posts, each
    /// with its author's name, and their reposts, each with its original's text (a
    /// repost whose original is gone is left out, as the page would drop it).
    async fn merge(
        &self,
        user: &str,
        before: Option<PostId>,
        want: usize,
        mut entries: Vec<TimelineEntry>,
    ) -> StoreResult<Vec<TimelineEntry>> {
        let above = match entries.len() >= want {
            true => entries.iter().map(|e| e.id).min(),
            false => None,
        };
        let (posts, reposts) = tokio::try_join!(
            self.store.content.merged_posts(user, before, above, want),
            self.store.reposts.merged_reposts(user, before, above, want)
        )?;
        if posts.is_empty() && reposts.is_empty() {
            return Ok(entries);
        }
        entries.extend(
            posts
                .iter()
                .map(|(post, name)| post.entry(true, Some(name))),
        );
        entries.extend(repost_entries(&self.store, &reposts).await?);
        normalise(&mut entries, before, want);
        Ok(entries)
    }
}
