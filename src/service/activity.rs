//! The activity log service: records activities and likes, and reads the log back.

use crate::domain::{Activity, ActivityLimits, ActivityPage, ActivityType, PostId, now_ms};
use crate::store::{Store, StoreError, StoreResult};

pub struct ActivityLog {
    store: Store,
    limits: ActivityLimits,
}

impl ActivityLog {
    pub fn new(store: Store, limits: ActivityLimits) -> Self {
        ActivityLog { store, limits }
    }

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

    /// Likes a post; records the activity only when the like is new. `NotFound` when the
    /// user or the post is unknown.
    pub async fn like(&self, user: &str, post: PostId) -> StoreResult<()> {
        if self.store.activity.like(user, post, now_ms()).await? {
            self.record(user, ActivityType::Like, &post.to_string())
                .await?;
        }
        Ok(())
    }

    /// Idempotent. `NotFound` when the user is unknown; an unknown post is not an error.
    pub async fn unlike(&self, user: &str, post: PostId) -> StoreResult<()> {
        if self.store.users.user(user).await?.is_none() {
            return Err(StoreError::NotFound(format!("user {user}")));
        }
        self.store.activity.unlike(user, post).await?;
        Ok(())
    }

    pub async fn page(&self, user: &str, skip: u64, limit: u64) -> StoreResult<ActivityPage> {
        self.store.activity.activities(user, skip, limit).await
    }
}
