//! Home timelines. A [`FeedService`] is one way of building them; [`Timelines`] wraps the
//! configured one with what every strategy shares: fan-out to followers in batches,
//! filtering out entries that went stale under races, hydration of linked content, author
//! names, and keyset pagination.

mod buckets;
mod cache;
mod fanout_on_read;
mod sized_buckets;
mod timed_buckets;

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use async_trait::async_trait;

pub use cache::CacheFeed;
pub use fanout_on_read::FanoutOnRead;
pub use sized_buckets::SizedBuckets;
pub use timed_buckets::TimedBuckets;

use crate::domain::{FeedStrategy, Post, PostId, TimelineEntry, TimelineKind};
use crate::store::{Store, StoreError, StoreResult};

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
        }
    }
}

/// One way of building home timelines.
#[async_trait]
pub trait FeedService: Send + Sync {
    fn strategy(&self) -> FeedStrategy;

    /// Delivers a stored post to the timelines of its author and followers. Returns how
    /// many timelines were written.
    async fn fan_out(&self, post: &Post) -> StoreResult<u64>;

    /// Delivers a stored post to exactly `users`' timelines (the author's own, when the
    /// rest of the fan-out is left to the timelines worker).
    async fn deliver(&self, post: &Post, users: &[String]) -> StoreResult<u64>;

    /// Undoes a delivery of a post that has been deleted.
    async fn retract(&self, post: PostId) -> StoreResult<()>;

    /// Brings `followee`'s recent posts into `follower`'s timeline.
    async fn followed(&self, follower: &str, followee: &str) -> StoreResult<()>;

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
}

/// Builds the service the settings select.
pub fn build(store: Store, settings: &FeedSettings) -> Arc<dyn FeedService> {
    match settings.strategy {
        FeedStrategy::FanoutOnRead => Arc::new(FanoutOnRead::new(store)),
        FeedStrategy::TimedBuckets => Arc::new(TimedBuckets::new(store, settings.clone())),
        FeedStrategy::SizedBuckets => Arc::new(SizedBuckets::new(store, settings.clone())),
        FeedStrategy::Cache => Arc::new(CacheFeed::new(store, settings.clone())),
    }
}

/// A timeline item ready to serve.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TimelineItem {
    pub id: PostId,
    pub author: String,
    pub author_display_name: String,
    pub text: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TimelinePage {
    pub items: Vec<TimelineItem>,
    pub next_cursor: Option<PostId>,
}

/// The configured strategy plus everything strategies share.
pub struct Timelines {
    store: Store,
    feed: Arc<dyn FeedService>,
    settings: FeedSettings,
}

/// A read that keeps finding stale entries stops refilling after this many rounds and
/// serves what it has; each round drops only entries that raced with an unfollow.
const MAX_READ_ROUNDS: usize = 8;

impl Timelines {
    pub fn new(store: Store, settings: &FeedSettings) -> Self {
        let feed = build(store.clone(), settings);
        Timelines {
            store,
            feed,
            settings: settings.clone(),
        }
    }

    pub fn strategy(&self) -> FeedStrategy {
        self.feed.strategy()
    }

    /// Fans a freshly stored post out to its author and every follower.
    pub async fn post_created(&self, post: &Post) -> StoreResult<u64> {
        let strategy = self.strategy();
        if strategy == FeedStrategy::FanoutOnRead {
            return Ok(0);
        }
        let fanned_out = self.feed.fan_out(post).await;
        // Checked even after a failed fan-out: most batches were delivered.
        self.retract_if_deleted(post).await?;
        let written = fanned_out?;
        self.store.deliveries.mark_delivered(post.id).await?;
        metrics::counter!("socialite_fanout_posts_total", "strategy" => strategy.as_str())
            .increment(1);
        metrics::counter!("socialite_fanout_timelines_total", "strategy" => strategy.as_str())
            .increment(written);
        Ok(written)
    }

    /// Delivers a fresh post to its author's own timeline only, leaving the followers to
    /// the timelines worker (the post is not marked delivered).
    pub async fn post_created_own(&self, post: &Post) -> StoreResult<()> {
        if self.strategy() == FeedStrategy::FanoutOnRead {
            return Ok(());
        }
        self.feed
            .deliver(post, std::slice::from_ref(&post.author))
            .await?;
        self.retract_if_deleted(post).await
    }

    /// A delete that ran while `post` was being delivered may have retracted before our
    /// pushes landed; the delete removes the post first, so checking it after our pushes
    /// closes the race. Reads the id index only.
    async fn retract_if_deleted(&self, post: &Post) -> StoreResult<()> {
        let author = std::slice::from_ref(&post.author);
        if self
            .store
            .content
            .existing_posts(&[post.id], author)
            .await?
            .is_empty()
        {
            self.feed.retract(post.id).await?;
        }
        Ok(())
    }

    /// Whether `author`'s fan-out is small enough to do in the request.
    pub fn fans_out_inline(&self, followers: u64) -> bool {
        followers <= self.settings.inline_fanout_max
    }

    /// Removes a deleted post from every timeline. Idempotent.
    pub async fn retract(&self, post: PostId) -> StoreResult<()> {
        self.feed.retract(post).await
    }

    pub async fn followed(&self, follower: &str, followee: &str) -> StoreResult<()> {
        self.feed.followed(follower, followee).await
    }

    pub async fn unfollowed(&self, follower: &str, followee: &str) -> StoreResult<()> {
        self.feed.unfollowed(follower, followee).await
    }

    /// One page of `user`'s home timeline, newest first. `NotFound` for unknown users.
    ///
    /// A read is the strategy's own read plus one lookup of the page's authors (names
    /// and whether the reader still follows them); whether the user exists is only asked
    /// when the page comes back empty.
    pub async fn page(
        &self,
        user: &str,
        before: Option<PostId>,
        limit: usize,
    ) -> StoreResult<TimelinePage> {
        let want = limit + 1;
        let mut kept: Vec<TimelineEntry> = Vec::with_capacity(want);
        let mut names: HashMap<String, String> = HashMap::new();
        let mut cursor = before;
        for _ in 0..MAX_READ_ROUNDS {
            let request = want - kept.len();
            let candidates = self.feed.entries(user, cursor, request).await?;
            let exhausted = candidates.len() < request;
            cursor = candidates.last().map(|e| e.id).or(cursor);
            kept.extend(self.current(user, candidates, &mut names).await?);
            if kept.len() >= want || exhausted {
                break;
            }
        }
        if kept.is_empty() && self.store.users.user(user).await?.is_none() {
            return Err(StoreError::NotFound(format!("user {user}")));
        }
        let next_cursor = (kept.len() > limit).then(|| kept[limit - 1].id);
        kept.truncate(limit);
        let items = kept
            .into_iter()
            .map(|e| TimelineItem {
                author_display_name: names
                    .get(&e.author)
                    .cloned()
                    .unwrap_or_else(|| e.author.clone()),
                id: e.id,
                author: e.author,
                text: e.text.unwrap_or_default(),
            })
            .collect();
        Ok(TimelinePage { items, next_cursor })
    }

    /// Drops entries whose author the reader no longer follows (an unfollow that raced
    /// with a fan-out) and entries of deleted posts: linked entries are hydrated, and
    /// entries carrying their text are looked up in the id index (a delete whose
    /// retraction failed leaves them behind), alongside the author lookup. Collects the
    /// authors' display names into `names`.
    async fn current(
        &self,
        user: &str,
        entries: Vec<TimelineEntry>,
        names: &mut HashMap<String, String>,
    ) -> StoreResult<Vec<TimelineEntry>> {
        if entries.is_empty() {
            return Ok(entries);
        }
        let mut entries = entries;
        let authors: Vec<String> = distinct(entries.iter().map(|e| e.author.as_str()))
            .map(str::to_owned)
            .collect();
        // Fanout on read serves posts it has just read: nothing can be stale.
        let materialised = self.strategy() != FeedStrategy::FanoutOnRead;
        let embedded: Vec<PostId> = entries
            .iter()
            .filter(|e| materialised && e.text.is_some())
            .map(|e| e.id)
            .collect();
        let existence = async {
            if embedded.is_empty() {
                return Ok(None);
            }
            self.store
                .content
                .existing_posts(&embedded, &authors)
                .await
                .map(Some)
        };
        let (views, existing) =
            tokio::try_join!(self.store.users.authors(user, &authors), existence)?;
        if let Some(existing) = existing {
            let existing: HashSet<PostId> = existing.into_iter().collect();
            entries.retain(|e| e.text.is_none() || existing.contains(&e.id));
        }
        if materialised {
            let followed: HashSet<&str> = views
                .iter()
                .filter(|v| v.followed)
                .map(|v| v.id.as_str())
                .collect();
            entries.retain(|e| e.author == user || followed.contains(e.author.as_str()));
        }
        names.extend(views.into_iter().map(|v| (v.id, v.display_name)));
        let linked: Vec<PostId> = entries
            .iter()
            .filter(|e| e.text.is_none())
            .map(|e| e.id)
            .collect();
        if !linked.is_empty() {
            let texts: HashMap<PostId, String> = self
                .store
                .content
                .posts_by_ids(&linked, &authors)
                .await?
                .into_iter()
                .map(|p| (p.id, p.text))
                .collect();
            entries.retain_mut(|e| {
                if e.text.is_none() {
                    e.text = texts.get(&e.id).cloned();
                }
                e.text.is_some()
            });
        }
        Ok(entries)
    }
}

/// Retracts, among `ids` just written to timelines of `kind` from an earlier read, the
/// posts deleted since that read. A delete removes the post before it retracts it: if
/// the lookup here still sees the post, the delete's retraction comes after our write
/// and removes the entry; if not, this retraction does. Either way no entry survives.
pub(crate) async fn retract_deleted(
    store: &Store,
    kind: TimelineKind,
    ids: &[PostId],
) -> StoreResult<()> {
    if ids.is_empty() {
        return Ok(());
    }
    let existing: HashSet<PostId> = store
        .content
        .existing_posts(ids, &[])
        .await?
        .into_iter()
        .collect();
    for id in ids.iter().filter(|id| !existing.contains(id)) {
        store.timelines.remove_post_entries(kind, *id).await?;
    }
    Ok(())
}

fn distinct<'a>(items: impl Iterator<Item = &'a str>) -> impl Iterator<Item = &'a str> {
    let mut seen = HashSet::new();
    items.filter(move |item| seen.insert(*item))
}

/// Sorts newest first, drops duplicates and entries not below `before`, keeps `want`.
pub(crate) fn normalise(entries: &mut Vec<TimelineEntry>, before: Option<PostId>, want: usize) {
    if let Some(before) = before {
        entries.retain(|e| e.id < before);
    }
    entries.sort_unstable_by_key(|e| std::cmp::Reverse(e.id));
    entries.dedup_by_key(|e| e.id);
    entries.truncate(want);
}
