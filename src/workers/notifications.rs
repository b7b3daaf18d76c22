//! The notifications worker: turns follows, likes, reposts, replies and mentions into their
//! users' notifications, and takes a notification away when its cause is undone (an
//! unfollow, an unlike, a deleted post or reply), from the change feed in feed order.
//!
//! Which change notifies whom is `domain::notifications` (`post_notifies`, `notifies`),
//! the same rules the derived definition (`derived/notifications.rs`) and the rebuild
//! use. Each change is one or a few effects (`NotificationStore::apply_notification`),
//! each fenced and idempotent by the notification's key, so a replayed batch changes
//! nothing. After history lost the rebuild recomputes every notification from the
//! sources (`derived::notifications::rebuilt`) and replaces them, under the fence, a
//! range of recipients at a time (`NotificationStore::rebuild_notifications`).
//!
//! Its upkeep is the takings sweep (MongoDB): a dismissal's or clear's claim on a group
//! older than `workers.settle_takings_after` belongs to a request that died part way,
//! and is finished (`NotificationStore::sweep_notification_takings`), at most once per
//! that age, by the lease holder, a batch of at most `workers.batch_size` groups at a
//! time, asking again while a batch comes back full, so a backlog drains whole in
//! bounded reads. The lease only spaces the sweeps out: each claim is
//! settled by a write conditional on the claim itself, so a stale holder, a second
//! sweeper or the user's own next dismissal settling it at the same time moves the
//! group once.
//!
//! A post's change document may carry `"reply_to": {"post": "<hex>", "author": "<id>"}`;
//! it is read from the raw document, so this worker does not depend on how `Post` spells
//! it.

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};

use async_trait::async_trait;
use serde::Deserialize;

use super::events::{document, poison};
use super::runtime::Worker;
use crate::domain::{
    Change, ChangeOp, Fence, NotificationType, PostId, REPOSTS, ReplyTo, Repost, notifies,
    post_notifies,
};
use crate::store::{NotificationEffect, NotificationStore, RebuildBounds, Recipient, StoreResult};

pub const NAME: &str = "notifications";

/// `workers.settle_takings_after`'s default, for a worker built without the setting.
pub const SETTLE_TAKINGS_AFTER_MS: i64 = 5_000;

/// `workers.batch_size`'s default, the sweep's batch for a worker built without it.
pub const SWEEP_BATCH: usize = 500;

pub struct NotificationsWorker {
    store: Arc<dyn NotificationStore>,
    /// How old a claim must be for the sweep to settle it; also the sweep's period.
    settle_after_ms: i64,
    /// How many groups one batch of the sweep reads, at most.
    sweep_batch: usize,
    /// The clock time from which the next sweep is due; 0 at start, so a new holder
    /// sweeps at its first step.
    next_sweep_ms: AtomicI64,
}

impl NotificationsWorker {
    pub fn new(store: Arc<dyn NotificationStore>) -> Self {
        NotificationsWorker {
            store,
            settle_after_ms: SETTLE_TAKINGS_AFTER_MS,
            sweep_batch: SWEEP_BATCH,
            next_sweep_ms: AtomicI64::new(0),
        }
    }

    /// Sweeps claims older than `after_ms` (`workers.settle_takings_after`).
    pub fn settling_takings_after(mut self, after_ms: i64) -> Self {
        self.settle_after_ms = after_ms.max(1);
        self
    }

    /// Sweeps at most `groups` groups per batch (`workers.batch_size`).
    pub fn sweeping_in_batches_of(mut self, groups: usize) -> Self {
        self.sweep_batch = groups.max(1);
        self
    }
}

#[derive(Deserialize)]
struct FollowDoc {
    follower: String,
    followee: String,
}

#[derive(Deserialize)]
struct LikeDoc {
    user: String,
    post: String,
}

#[derive(Deserialize)]
struct ReplyDoc {
    post: String,
    author: String,
}

#[derive(Deserialize)]
struct PostDoc {
    id: String,
    author: String,
    text: String,
    #[serde(default)]
    reply_to: Option<ReplyDoc>,
}

fn post_id(change: &Change, hex: &str) -> StoreResult<PostId> {
    hex.parse().map_err(|_| poison(change, "bad post id"))
}

/// The effects of one change on notifications, in order; none for changes that cause or
/// undo none.
pub fn effects_of(change: &Change) -> StoreResult<Vec<NotificationEffect>> {
    let at_ms = change.at_ms;
    Ok(match (change.collection.as_str(), change.op) {
        ("follows", ChangeOp::Insert) => {
            let edge: FollowDoc = document(change)?;
            vec![NotificationEffect::Add {
                to: Recipient::User(edge.followee),
                kind: NotificationType::Follow,
                actor: edge.follower,
                post: None,
                at_ms,
            }]
        }
        ("follows", ChangeOp::Delete) => {
            let (follower, followee) = change
                .key
                .split_once('/')
                .ok_or_else(|| poison(change, "bad follow key"))?;
            vec![NotificationEffect::Remove {
                user: Some(followee.to_owned()),
                kind: NotificationType::Follow,
                actor: follower.to_owned(),
                post: None,
            }]
        }
        ("likes", ChangeOp::Insert) => {
            let like: LikeDoc = document(change)?;
            let post = post_id(change, &like.post)?;
            vec![NotificationEffect::Add {
                to: Recipient::AuthorOf(post),
                kind: NotificationType::Like,
                actor: like.user,
                post: Some(post),
                at_ms,
            }]
        }
        ("likes", ChangeOp::Delete) => {
            let (user, post) = change
                .key
                .split_once('/')
                .ok_or_else(|| poison(change, "bad like key"))?;
            vec![NotificationEffect::Remove {
                user: None,
                kind: NotificationType::Like,
                actor: user.to_owned(),
                post: Some(post_id(change, post)?),
            }]
        }
        ("posts", ChangeOp::Insert) => {
            let post: PostDoc = document(change)?;
            let id = post_id(change, &post.id)?;
            let reply_to = match post.reply_to {
                Some(r) => Some(ReplyTo {
                    post: post_id(change, &r.post)?,
                    author: r.author,
                }),
                None => None,
            };
            post_notifies(&post.author, &post.text, reply_to.as_ref())
                .into_iter()
                .map(|(user, kind)| NotificationEffect::Add {
                    to: match kind {
                        NotificationType::Mention => Recipient::Mentioned {
                            user,
                            post_ms: id.timestamp_ms(),
                        },
                        _ => Recipient::User(user),
                    },
                    kind,
                    actor: post.author.clone(),
                    post: Some(id),
                    at_ms,
                })
                .collect()
        }
        (REPOSTS, ChangeOp::Insert) => {
            let repost: Repost = document(change)?;
            match notifies(&repost.post.author, &repost.user) {
                true => vec![NotificationEffect::Add {
                    to: Recipient::User(repost.post.author),
                    kind: NotificationType::Repost,
                    actor: repost.user,
                    post: Some(repost.post.post),
                    at_ms,
                }],
                false => Vec::new(),
            }
        }
        (REPOSTS, ChangeOp::Delete) => {
            // The delete carries the repost (embedded: in its entry; MongoDB: from its
            // tombstone); a removal by the original's delete is also covered by the
            // post's own `RemovePost`.
            let repost: Repost = document(change)?;
            vec![NotificationEffect::Remove {
                user: Some(repost.post.author),
                kind: NotificationType::Repost,
                actor: repost.user,
                post: Some(repost.post.post),
            }]
        }
        ("posts", ChangeOp::Delete) => {
            vec![NotificationEffect::RemovePost(post_id(
                change,
                &change.key,
            )?)]
        }
        _ => Vec::new(),
    })
}

#[async_trait]
impl Worker for NotificationsWorker {
    fn name(&self) -> &'static str {
        NAME
    }

    async fn apply(&self, changes: &[Change], fence: &Fence) -> StoreResult<()> {
        for change in changes {
            for effect in effects_of(change)? {
                self.store
                    .apply_notification(fence, change.seq, &effect)
                    .await?;
            }
        }
        Ok(())
    }

    /// The takings sweep, when due: claims older than `settle_after_ms` settled, a
    /// batch at a time until one comes back short.
    async fn upkeep(&self, now_ms: i64) -> StoreResult<()> {
        if now_ms < self.next_sweep_ms.load(Ordering::SeqCst) {
            return Ok(());
        }
        let cutoff = now_ms.saturating_sub(self.settle_after_ms);
        let mut settled = 0;
        loop {
            let batch = self
                .store
                .sweep_notification_takings(cutoff, self.sweep_batch)
                .await?;
            settled += batch.settled;
            if !batch.more {
                break;
            }
        }
        self.next_sweep_ms.store(
            now_ms.saturating_add(self.settle_after_ms),
            Ordering::SeqCst,
        );
        if settled > 0 {
            metrics::counter!("socialite_notification_takings_settled_total").increment(settled);
            tracing::warn!(settled, "settled notification takings left unfinished");
        }
        Ok(())
    }

    /// Every notification recomputed from the sources as they stand
    /// (`derived::notifications::rebuilt`) and written in place of the old ones, a range
    /// of recipients at a time in bounded memory (`NotificationStore::rebuild_notifications`).
    /// Changes after the head the runner noted are applied afterwards; each is idempotent against
    /// the rebuilt state (an add finds its key, a removal removes what the sources no longer hold).
    async fn rebuild(&self, fence: &Fence) -> StoreResult<()> {
        let notifications = self
            .store
            .rebuild_notifications(fence, RebuildBounds::default())
            .await?;
        tracing::info!(notifications, "notifications rebuilt from the sources");
        Ok(())
    }
}
