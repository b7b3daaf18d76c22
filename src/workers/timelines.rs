//! The timelines worker: keeps materialised timelines in step with the change feed.
//!
//! - A post not yet marked delivered (its author's audience was left to this worker, or
//!   a crash cut the request's fan-out short) is fanned out and then marked.
//! - A user change propagates the display name into the author's timeline entries.
//! - A deleted post is retracted; a follow whose edge is not marked backfilled, and
//!   every unfollow, bring the pair's timeline in line with the edge as it stands
//!   (`Timelines::sync_edge`). These repeat what the request did, so a crash between a
//!   write and its timeline upkeep is repaired.
//!
//! Fences, per side effect (MongoDB has no transaction to check the lease in, so each
//! effect is guarded by the state of its source instead):
//! - pushes are idempotent by post id (a replay adds nothing), and after a fan-out the
//!   post's existence is checked again: a stale holder that pushes a post a newer holder
//!   already retracted finds it deleted and retracts it again;
//! - retractions and removals only ever remove, and are idempotent;
//! - a backfill or a removal is checked against the edge after it landed, and repeated
//!   until the edge agrees (`Timelines::sync_edge`), so an old change can never undo a
//!   newer one; reads also drop entries of authors the reader no longer follows;
//! - a rename stamps the author's entries only where their stamp is older (see
//!   `feed::names`): an old holder replaying an old rename changes nothing newer.
//!
//! Its upkeep drops the caches of readers idle for `feed.cache_idle` (`idle.rs`).
//!
//! The delivery marker is written after the fan-out, so a crash in between fans out again
//! (harmless, by idempotence).

use std::collections::HashSet;

use async_trait::async_trait;
use serde::Deserialize;

use super::runtime::Worker;
use crate::domain::{Change, ChangeOp, FeedStrategy, Fence, NameStamp, PostId, REPOSTS, User};
use crate::feed::{FeedSettings, Timelines, leave_below};
use crate::store::{Store, StoreError, StoreResult};

mod idle;

pub use idle::CHUNK as IDLE_CHUNK;

pub const NAME: &str = "timelines";
/// Posts per page of a rebuild's walks.
const REBUILD_PAGE: usize = 500;

pub struct TimelinesWorker {
    store: Store,
    timelines: Timelines,
    settings: FeedSettings,
    idle: idle::IdleSweep,
}

impl TimelinesWorker {
    pub fn new(store: Store, settings: &FeedSettings) -> Self {
        TimelinesWorker {
            timelines: Timelines::new(store.clone(), settings),
            settings: settings.clone(),
            idle: idle::IdleSweep::new(),
            store,
        }
    }
}

#[derive(Deserialize)]
struct FollowDoc {
    follower: String,
    followee: String,
}

fn post_id(change: &Change) -> StoreResult<PostId> {
    change
        .key
        .parse()
        .map_err(|_| StoreError::Poison(format!("post change with key {:?}", change.key)))
}

impl TimelinesWorker {
    /// Fans out the repost `id` as it stands now (nothing once it was undone or its
    /// original deleted), with the reposter's name as it stands now, and marks it
    /// delivered; as for a post.
    async fn deliver_repost(&self, id: PostId) -> StoreResult<bool> {
        let Some(repost) = self.store.reposts.reposts_by_ids(&[id]).await?.pop() else {
            tracing::debug!(repost = %id, "undone before its delivery");
            return Ok(false);
        };
        let Some(original) = self.store.content.post(repost.post.post).await? else {
            return Ok(false);
        };
        let Some(reposter) = self.store.users.user(&repost.user).await? else {
            return Ok(false);
        };
        self.timelines
            .repost_created(&repost, &original.text, &reposter.name_stamp())
            .await?;
        Ok(true)
    }

    /// The upkeep of the edge `follower` → `followee` as it stands, then its backfill
    /// mark; whether an edge stood to be marked.
    async fn backfill(&self, follower: &str, followee: &str) -> StoreResult<bool> {
        let Some(created_ms) = self.timelines.sync_edge(follower, followee).await? else {
            return Ok(false);
        };
        let graph = &self.store.graph;
        graph
            .mark_backfilled(follower, followee, created_ms)
            .await?;
        Ok(true)
    }

    /// `hybrid`: every followee whose follower count a follow or an unfollow of this
    /// batch moved becomes, or stops being, a celebrity where it crossed the threshold
    /// (with hysteresis). Idempotent: a replay finds the status already set.
    async fn reclassify(&self, changes: &[Change]) -> StoreResult<()> {
        let mut followees: Vec<&str> = changes
            .iter()
            .filter(|c| c.collection == "follows" && c.op != ChangeOp::Update)
            .filter_map(|c| c.key.split_once('/').map(|(_, followee)| followee))
            .collect();
        followees.sort_unstable();
        followees.dedup();
        let threshold = self.settings.hybrid_threshold;
        for followee in followees {
            let changed = self
                .store
                .graph
                .reclassify(followee, threshold, leave_below(threshold))
                .await?;
            if let Some(celebrity) = changed {
                tracing::info!(
                    worker = NAME,
                    author = followee,
                    celebrity,
                    "hybrid status changed"
                );
                metrics::counter!("socialite_hybrid_reclassified_total").increment(1);
            }
        }
        Ok(())
    }
}

#[async_trait]
impl Worker for TimelinesWorker {
    fn name(&self) -> &'static str {
        NAME
    }

    /// Drops the caches of readers idle for `feed.cache_idle` (see `idle`).
    async fn upkeep(&self, now_ms: i64) -> StoreResult<()> {
        self.idle.run(&self.store, &self.settings, now_ms).await?;
        Ok(())
    }

    async fn apply(&self, changes: &[Change], _fence: &Fence) -> StoreResult<()> {
        let materialised = self.timelines.strategy() != FeedStrategy::FanoutOnRead;
        if !materialised {
            return Ok(());
        }
        let inserted: Vec<PostId> = changes
            .iter()
            .filter(|c| c.collection == "posts" || c.collection == REPOSTS)
            .filter(|c| c.op == ChangeOp::Insert)
            .map(post_id)
            .collect::<StoreResult<_>>()?;
        let renames: Vec<(String, NameStamp)> = changes
            .iter()
            .filter(|c| c.collection == "users" && c.op != ChangeOp::Delete)
            .filter_map(|c| c.document.clone())
            .map(|doc| {
                serde_json::from_value::<User>(doc)
                    .map(|user| (user.id.clone(), user.name_stamp()))
                    .map_err(|e| StoreError::Poison(format!("user change: {e}")))
            })
            .collect::<StoreResult<_>>()?;
        let delivered: HashSet<PostId> = self
            .store
            .deliveries
            .delivered(&inserted)
            .await?
            .into_iter()
            .collect();
        for change in changes {
            match (change.collection.as_str(), change.op) {
                ("posts", ChangeOp::Insert) => {
                    let id = post_id(change)?;
                    if delivered.contains(&id) {
                        tracing::debug!(post = %id, "already delivered");
                        continue;
                    }
                    let Some(post) = self.store.content.post(id).await? else {
                        tracing::debug!(post = %id, "deleted before its delivery");
                        continue;
                    };
                    tracing::debug!(post = %id, "delivering");
                    // The name as it stands now; a rename after this read is caught by
                    // the delivery's own re-check.
                    if let Some(author) = self.store.users.user(&post.author).await? {
                        self.timelines
                            .post_created(&post, &author.name_stamp())
                            .await?;
                    }
                }
                ("posts", ChangeOp::Delete) => {
                    let id = post_id(change)?;
                    self.timelines.retract(id).await?;
                    // The reposts of a deleted post go with it: the embedded delete
                    // removed them in its transaction, MongoDB's request right after;
                    // this finishes what a crash in between left (idempotent).
                    for repost in self.store.reposts.remove_reposts_of(id).await? {
                        self.timelines.retract(repost.id).await?;
                    }
                }
                (REPOSTS, ChangeOp::Insert) => {
                    let id = post_id(change)?;
                    if delivered.contains(&id) {
                        continue;
                    }
                    self.deliver_repost(id).await?;
                }
                // An unrepost (or the removal of a deleted post's reposts): the repost's
                // entries go, wherever they landed.
                (REPOSTS, ChangeOp::Delete) => {
                    self.timelines.retract(post_id(change)?).await?;
                }
                ("follows", ChangeOp::Insert) => {
                    let Some(doc) = change.document.clone() else {
                        continue;
                    };
                    let edge: FollowDoc = serde_json::from_value(doc).map_err(|e| {
                        StoreError::Poison(format!("follow change {}: {e}", change.position.0))
                    })?;
                    let graph = &self.store.graph;
                    // An edge whose backfill was marked done needs nothing: the mark is
                    // written after an upkeep that saw the edge, and any later unfollow
                    // brings its own change. Otherwise the edge as it stands now.
                    let marked = graph
                        .edge(&edge.follower, &edge.followee)
                        .await?
                        .is_some_and(|e| e.backfilled);
                    if marked {
                        continue;
                    }
                    self.backfill(&edge.follower, &edge.followee).await?;
                }
                ("follows", ChangeOp::Delete) => {
                    let Some((follower, followee)) = change.key.split_once('/') else {
                        continue;
                    };
                    // Whatever the edge is now: if a follow came back meanwhile, the
                    // unfollow's removal may have landed after its backfill.
                    self.timelines.sync_edge(follower, followee).await?;
                }
                _ => {}
            }
        }
        if self.timelines.strategy() == FeedStrategy::Hybrid {
            self.reclassify(changes).await?;
        }
        // After the batch's posts, so that a post fanned out above with an older name
        // is stamped too. Renames of one batch are applied together, newest per author.
        self.timelines.renamed(&renames).await?;
        Ok(())
    }

    /// Restores the guarantee without the lost changes, through the delivery markers:
    /// every post without a marker (a large audience, or a fan-out a crash cut short) is
    /// fanned out and marked, as `apply` does for a post insert; every marker whose post
    /// no longer exists is retracted from every timeline and then unmarked, as `apply`
    /// does for a post delete. Both walk in id order, a page at a time. Fenced as `apply`
    /// is: pushes are idempotent and followed by the existence re-check, retractions
    /// only remove. Every edge whose backfill was never marked done (its request died
    /// before the mark, and the follow's change was lost) gets its upkeep and mark, as
    /// `apply` does for a follow. (Unfollows whose changes were lost need nothing: reads
    /// drop the entries of authors the reader no longer follows.) Last, on a cache
    /// strategy, the store settles
    /// the retractions whose removal it still counts as pending (see
    /// `TimelineStore::settle_retractions`), which only removes. Renames the store
    /// still counts as pending are stamped again with the profile's name as it is now.
    async fn rebuild(&self, _fence: &Fence) -> StoreResult<()> {
        if self.timelines.strategy() == FeedStrategy::FanoutOnRead {
            return Ok(());
        }
        let deliveries = &self.store.deliveries;
        let (mut after, mut fanned_out) = (None, 0);
        loop {
            let page = deliveries.undelivered(after, REBUILD_PAGE).await?;
            for id in &page {
                let Some(post) = self.store.content.post(*id).await? else {
                    continue;
                };
                if let Some(author) = self.store.users.user(&post.author).await? {
                    self.timelines
                        .post_created(&post, &author.name_stamp())
                        .await?;
                    fanned_out += 1;
                }
            }
            if page.len() < REBUILD_PAGE {
                break;
            }
            after = page.last().copied();
        }
        let mut after = None;
        loop {
            let page = deliveries.undelivered_reposts(after, REBUILD_PAGE).await?;
            for id in &page {
                fanned_out += u32::from(self.deliver_repost(*id).await?);
            }
            if page.len() < REBUILD_PAGE {
                break;
            }
            after = page.last().copied();
        }
        let (mut after, mut retracted) = (None, 0);
        loop {
            let page = deliveries.orphaned(after, REBUILD_PAGE).await?;
            for id in &page {
                self.timelines.retract(*id).await?;
            }
            deliveries.unmark(&page).await?;
            retracted += page.len();
            if page.len() < REBUILD_PAGE {
                break;
            }
            after = page.last().copied();
        }
        let (mut after, mut backfilled) = (None::<(String, String)>, 0);
        loop {
            let from = after.as_ref().map(|(a, b)| (a.as_str(), b.as_str()));
            let page = self.store.graph.unbackfilled(from, REBUILD_PAGE).await?;
            for (follower, followee) in &page {
                backfilled += u32::from(self.backfill(follower, followee).await?);
            }
            if page.len() < REBUILD_PAGE {
                break;
            }
            after = page.last().cloned();
        }
        let settled = match self.timelines.strategy() {
            FeedStrategy::Cache | FeedStrategy::Hybrid => {
                self.store.timelines.settle_retractions().await?
            }
            _ => 0,
        };
        // Renames whose changes were lost: stamped with the name as it stands now.
        let mut names = Vec::new();
        for (author, _) in self.store.timelines.pending_renames().await? {
            if let Some(user) = self.store.users.user(&author).await? {
                names.push((author, user.name_stamp()));
            }
        }
        let renamed = self.timelines.renamed(&names).await?;
        tracing::info!(
            worker = NAME,
            fanned_out,
            retracted,
            backfilled,
            settled,
            renamed,
            "timelines rebuilt"
        );
        Ok(())
    }
}
