//! The activity worker: records posts, follows and likes in their users' activity logs
//! from the change feed, in feed order, each change exactly once.
//!
//! Fences, per side effect: the one effect is `ActivityStore::apply_activity`, refused
//! when the log already applied this change or a later one (the log's `seq` watermark,
//! both backends) and, embedded, when the lease is no longer held at this version
//! (checked in the append's own transaction).

use std::sync::Arc;

use async_trait::async_trait;
use serde::Deserialize;

use super::runtime::Worker;
use crate::domain::{ActivityLimits, ActivityType, Change, ChangeOp, Fence, Post};
use crate::store::{ActivityStore, StoreError, StoreResult};

pub const NAME: &str = "activity";

pub struct ActivityWorker {
    store: Arc<dyn ActivityStore>,
    limits: ActivityLimits,
}

impl ActivityWorker {
    pub fn new(store: Arc<dyn ActivityStore>, limits: ActivityLimits) -> Self {
        ActivityWorker { store, limits }
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

/// The activity a change stands for: (user, type, reference).
fn activity_of(change: &Change) -> StoreResult<Option<(String, ActivityType, String)>> {
    if change.op != ChangeOp::Insert {
        return Ok(None);
    }
    let Some(document) = change.document.clone() else {
        return Ok(None);
    };
    let malformed = |e: serde_json::Error| {
        StoreError::Poison(format!(
            "change {} on {} is malformed: {e}",
            change.position.0, change.collection
        ))
    };
    Ok(match change.collection.as_str() {
        "posts" => {
            let post: Post = serde_json::from_value(document).map_err(malformed)?;
            Some((post.author, ActivityType::Post, post.id.to_string()))
        }
        "follows" => {
            let edge: FollowDoc = serde_json::from_value(document).map_err(malformed)?;
            Some((edge.follower, ActivityType::Follow, edge.followee))
        }
        "likes" => {
            let like: LikeDoc = serde_json::from_value(document).map_err(malformed)?;
            Some((like.user, ActivityType::Like, like.post))
        }
        _ => None,
    })
}

#[async_trait]
impl Worker for ActivityWorker {
    fn name(&self) -> &'static str {
        NAME
    }

    async fn apply(&self, changes: &[Change], fence: &Fence) -> StoreResult<()> {
        for change in changes {
            let Some((user, kind, reference)) = activity_of(change)? else {
                continue;
            };
            let applied = self
                .store
                .apply_activity(
                    fence,
                    change.seq,
                    &user,
                    kind,
                    &reference,
                    change.at_ms,
                    self.limits,
                )
                .await;
            match applied {
                Ok(_) => {}
                // Users are never deleted, so this is a change about a user that never
                // existed: nothing to record, and no reason to stop the feed.
                Err(StoreError::NotFound(what)) => {
                    tracing::warn!(change = %change.position.0, %what, "activity for an unknown user skipped");
                }
                Err(error) => return Err(error),
            }
        }
        Ok(())
    }

    /// Every log recomputed from the posts, follows and likes that exist now. (Likes
    /// that were undone and posts that were deleted are not in the sources, so the rebuilt
    /// logs hold what still stands.)
    async fn rebuild(&self, fence: &Fence) -> StoreResult<()> {
        self.store.rebuild_activity(fence, self.limits).await
    }
}
