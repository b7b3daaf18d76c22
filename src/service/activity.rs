//! The activity log service: likes, and reading the log back. Entries are written by
//! the activity worker from the change feed.

use std::sync::Arc;

use super::masto_pages::ActEpochs;
use crate::domain::{Activity, ActivityLimits, ActivityPage, ActivityType, PostId, now_ms};
use crate::store::{Store, StoreError, StoreResult};
use crate::workers::Wakers;

pub struct ActivityLog {
    store: Store,
    limits: ActivityLimits,
    wakers: Arc<Wakers>,
    /// Each liker's likes and unlikes written here, for the Mastodon view's kept pages.
    epochs: ActEpochs,
}

impl ActivityLog {
    pub fn new(store: Store, limits: ActivityLimits, wakers: Arc<Wakers>) -> Self {
        ActivityLog {
            store,
            limits,
            wakers,
            epochs: ActEpochs::default(),
        }
    }

    pub(super) fn epochs(&self) -> &ActEpochs {
        &self.epochs
    }

    /// Appends an entry directly, outside the change feed: for tests and benchmarks of
    /// the log's layout under concurrent writers.
    pub async fn record(
        &self,
        user: &str,
        kind: ActivityType,
        reference: &str,
    ) -> StoreResult<Activity> {
        self.store
            .activity
            .record_activity(user, kind, reference, now_ms(), self.limits)
            .await
    }

    /// Likes a post; a new like reaches the activity log through the change feed.
    /// `NotFound` when the user or the post is unknown.
    pub async fn like(&self, user: &str, post: PostId) -> StoreResult<()> {
        let new = self.store.activity.like(user, post, now_ms()).await?;
        self.epochs.bump(user);
        if new {
            self.wakers.wake_all();
        }
        Ok(())
    }

    /// Idempotent. `NotFound` when the user is unknown; an unknown post is not an error.
    pub async fn unlike(&self, user: &str, post: PostId) -> StoreResult<()> {
        if self.store.users.user(user).await?.is_none() {
            return Err(StoreError::NotFound(format!("user {user}")));
        }
        self.store.activity.unlike(user, post).await?;
        self.epochs.bump(user);
        Ok(())
    }

    pub async fn page(&self, user: &str, skip: u64, limit: u64) -> StoreResult<ActivityPage> {
        self.store.activity.activities(user, skip, limit).await
    }
}
