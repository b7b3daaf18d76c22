//! Home timelines. A [`FeedService`] is one way of building them; [`Timelines`] wraps the
//! configured one with what every strategy shares: fan-out to followers in batches,
//! filtering out entries that went stale under races, hydration of linked content, author
//! names, and keyset pagination.

mod buckets;
mod cache;
mod fanout_on_read;
mod hybrid;
mod names;
mod page;
mod sized_buckets;
pub mod switch;
mod timed_buckets;

use std::collections::HashSet;
use std::sync::Arc;

use async_trait::async_trait;

pub use cache::CacheFeed;
pub use fanout_on_read::FanoutOnRead;
pub use hybrid::{HybridFeed, leave_below};
pub use page::{TimelineItem, TimelinePage};
pub use sized_buckets::SizedBuckets;
pub use timed_buckets::TimedBuckets;

use crate::domain::{FeedStrategy, NameStamp, Post, PostId, TimelineEntry, TimelineKind};
use crate::store::timelines::CacheVersion;
use crate::store::{EdgeState, Store, StoreError, StoreResult};

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

    /// Delivers a stored post to the timelines of its author and followers, its
    /// entries stamped with the author's `name` when content is embedded. Returns how
    /// many timelines were written.
    async fn fan_out(&self, post: &Post, name: Option<&NameStamp>) -> StoreResult<u64>;

    /// Delivers a stored post to exactly `users`' timelines (the author's own, when the
    /// rest of the fan-out is left to the timelines worker).
    async fn deliver(
        &self,
        post: &Post,
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
    /// stored rows that every write moves to a new version (a page read whole from the
    /// cache, see `TimelineStore::cache_version`). `None` by default.
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

/// Builds the service the settings select.
pub fn build(store: Store, settings: &FeedSettings) -> Arc<dyn FeedService> {
    match settings.strategy {
        FeedStrategy::FanoutOnRead => Arc::new(FanoutOnRead::new(store)),
        FeedStrategy::TimedBuckets => Arc::new(TimedBuckets::new(store, settings.clone())),
        FeedStrategy::SizedBuckets => Arc::new(SizedBuckets::new(store, settings.clone())),
        FeedStrategy::Cache => Arc::new(CacheFeed::new(store, settings.clone())),
        FeedStrategy::Hybrid => Arc::new(HybridFeed::new(store, settings.clone())),
    }
}

/// The configured strategy plus everything strategies share.
pub struct Timelines {
    store: Store,
    feed: Arc<dyn FeedService>,
    settings: FeedSettings,
}

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

    /// Fans a freshly stored post out to its author and every follower, its entries
    /// stamped with `name`, the author's name as the post's insert read it.
    pub async fn post_created(&self, post: &Post, name: &NameStamp) -> StoreResult<u64> {
        let strategy = self.strategy();
        if strategy == FeedStrategy::FanoutOnRead {
            return Ok(0);
        }
        let fanned_out = self.feed.fan_out(post, Some(name)).await;
        // Checked even after a failed fan-out: most batches were delivered.
        self.settle_delivery(post, name, None).await?;
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
    pub async fn post_created_own(&self, post: &Post, name: &NameStamp) -> StoreResult<()> {
        if self.strategy() == FeedStrategy::FanoutOnRead {
            return Ok(());
        }
        let own = std::slice::from_ref(&post.author);
        self.feed.deliver(post, Some(name), own).await?;
        self.settle_delivery(post, name, Some(own)).await
    }

    /// Closes the races of a delivery that just landed, with two reads at once:
    /// - a delete that ran meanwhile may have retracted before our pushes; the delete
    ///   removes the post first, so seeing it gone now means retracting again (the id
    ///   index only);
    /// - a rename that committed after the insert read `name` may have been propagated
    ///   before our pushes; a newer version now means stamping it again, on `users` or
    ///   (`None`) the whole audience.
    async fn settle_delivery(
        &self,
        post: &Post,
        name: &NameStamp,
        users: Option<&[String]>,
    ) -> StoreResult<()> {
        let (ids, author) = ([post.id], std::slice::from_ref(&post.author));
        let (existing, current) = tokio::try_join!(
            self.store.content.existing_posts(&ids, author),
            self.store.users.user(&post.author)
        )?;
        if existing.is_empty() {
            self.feed.retract(post.id).await?;
        }
        match current {
            Some(user) if user.version > name.version => {
                self.stamp(&post.author, &user.name_stamp(), users).await
            }
            _ => Ok(()),
        }
    }

    /// Whether `author`'s fan-out is small enough to do in the request.
    pub fn fans_out_inline(&self, followers: u64) -> bool {
        followers <= self.settings.inline_fanout_max
    }

    /// Removes a deleted post from every timeline. Idempotent.
    pub async fn retract(&self, post: PostId) -> StoreResult<()> {
        self.feed.retract(post).await
    }

    /// Brings `follower`'s timeline in line with the edge `follower` → `followee` as it
    /// stands: a backfill while it exists, a removal of the followee's entries while it
    /// does not. Called after every follow and unfollow, by the request and again by the
    /// timelines worker. Returns when the edge the upkeep last ran on was created, `None`
    /// when it ran on no edge.
    ///
    /// The upkeep is not atomic with the edge change, so it may land after a newer
    /// change's own upkeep: an unfollow's removal after a racing follow's backfill (in
    /// another process, or after a pause) would leave the follow without its posts for
    /// good. So the edge is read again after each upkeep, and the upkeep repeated until
    /// that read agrees with the state it acted on: whichever upkeep lands last was
    /// checked against the edge after it landed, so the last change always wins.
    pub async fn sync_edge(&self, follower: &str, followee: &str) -> StoreResult<Option<i64>> {
        let created = |edge: Option<EdgeState>| edge.map(|e| e.created_ms);
        let mut edge = created(self.store.graph.edge(follower, followee).await?);
        if self.feed.kind().is_none() {
            return Ok(edge);
        }
        for _ in 0..MAX_SYNC_ROUNDS {
            // Between the read of the edge and the upkeep that rests on it.
            crate::faults::point("edge.read").await;
            match edge {
                Some(since_ms) => self.followed(follower, followee, since_ms).await?,
                None => self.feed.unfollowed(follower, followee).await?,
            }
            let now = created(self.store.graph.edge(follower, followee).await?);
            if now == edge {
                return Ok(edge);
            }
            edge = now;
        }
        // Giving up silently could leave the last upkeep wrong: fail, so that the
        // request answers 503 and the worker retries the change.
        Err(StoreError::Backend(anyhow::anyhow!(
            "the edge {follower} -> {followee} kept changing under its timeline upkeep"
        )))
    }

    /// Backfills `followee`'s posts into `follower`'s timeline, stamped with the name
    /// read before, and stamps them again if a rename landed meanwhile.
    async fn followed(&self, follower: &str, followee: &str, since_ms: i64) -> StoreResult<()> {
        if !self.settings.embed_content {
            return self.feed.followed(follower, followee, since_ms, None).await;
        }
        let Some(before) = self.store.users.user(followee).await? else {
            return Ok(());
        };
        let name = before.name_stamp();
        self.feed
            .followed(follower, followee, since_ms, Some(&name))
            .await?;
        match self.store.users.user(followee).await? {
            Some(now) if now.version > name.version => {
                let follower = [follower.to_owned()];
                self.stamp(followee, &now.name_stamp(), Some(&follower))
                    .await
            }
            _ => Ok(()),
        }
    }
}

/// The posts of `followee` a follow stored at `since_ms` backfills, newest first: the
/// newest `limit` written up to the follow, however late the backfill runs (a crash
/// can leave it to the worker, after newer posts that fan-out delivers anyway; taking
/// the newest `limit` then would leave out older posts the follow promised), and the
/// newest `limit` now, which a clock behind the posts' own cannot then leave out.
pub(crate) async fn backfill_posts(
    store: &Store,
    followee: &str,
    since_ms: i64,
    limit: usize,
) -> StoreResult<Vec<Post>> {
    let mut posts = store.content.posts_by_author(followee, None, limit).await?;
    let bound = PostId::at(since_ms.saturating_add(1), 0);
    if posts.len() < limit || posts.iter().all(|p| p.id < bound) {
        return Ok(posts);
    }
    let before = store
        .content
        .posts_by_author(followee, Some(bound), limit)
        .await?;
    posts.extend(before);
    posts.sort_unstable_by_key(|p| std::cmp::Reverse(p.id));
    posts.dedup_by_key(|p| p.id);
    Ok(posts)
}

/// Upkeep rounds of one edge before [`Timelines::sync_edge`] reports a failure; each
/// extra round needs another follow or unfollow of the same pair meanwhile.
const MAX_SYNC_ROUNDS: usize = 16;

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

pub(super) fn distinct<'a>(items: impl Iterator<Item = &'a str>) -> impl Iterator<Item = &'a str> {
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
