//! An audit port decorator that holds one user's edge reads, so a test can change the
//! sources between an audit's checks of that user.

use std::sync::Arc;

use async_trait::async_trait;
use socialite::domain::{Post, PostId, User};
use socialite::store::audit::{FollowEdge, NotificationKey};
use socialite::store::{AuditStore, StoreResult};

use super::Hold;

/// Audit reads that forward to `inner`; `hold` pauses the `follow_edges` calls it names.
pub struct HoldingAudit {
    pub inner: Arc<dyn AuditStore>,
    pub hold: Arc<Hold>,
}

#[async_trait]
impl AuditStore for HoldingAudit {
    async fn user_count(&self) -> StoreResult<u64> {
        self.inner.user_count().await
    }
    async fn users_after(&self, after: Option<&str>, limit: usize) -> StoreResult<Vec<User>> {
        self.inner.users_after(after, limit).await
    }
    async fn follow_edges(
        &self,
        follower: &str,
        after: Option<&str>,
        limit: usize,
    ) -> StoreResult<Vec<FollowEdge>> {
        self.hold.pause("follow_edges", Some(follower)).await;
        self.inner.follow_edges(follower, after, limit).await
    }
    async fn likes_of(
        &self,
        user: &str,
        after: Option<PostId>,
        limit: usize,
    ) -> StoreResult<Vec<PostId>> {
        self.inner.likes_of(user, after, limit).await
    }
    async fn posts_after(&self, after: Option<PostId>, limit: usize) -> StoreResult<Vec<Post>> {
        self.inner.posts_after(after, limit).await
    }
    async fn tag_totals(
        &self,
        after: Option<&str>,
        limit: usize,
    ) -> StoreResult<Vec<(String, u64)>> {
        self.inner.tag_totals(after, limit).await
    }
    async fn tag_index_totals(
        &self,
        after: Option<&str>,
        limit: usize,
    ) -> StoreResult<Vec<(String, u64)>> {
        self.inner.tag_index_totals(after, limit).await
    }
    async fn reindex_tags(&self) -> StoreResult<u64> {
        self.inner.reindex_tags().await
    }
    async fn timelines_holding(&self, post: PostId, limit: usize) -> StoreResult<Vec<String>> {
        self.inner.timelines_holding(post, limit).await
    }
    async fn notifications_held(
        &self,
        keys: &[NotificationKey],
    ) -> StoreResult<Vec<NotificationKey>> {
        self.inner.notifications_held(keys).await
    }
    async fn reply_counts(&self, parents: &[PostId]) -> StoreResult<Vec<(PostId, u64)>> {
        self.inner.reply_counts(parents).await
    }
    async fn repost_counts(&self, posts: &[PostId]) -> StoreResult<Vec<(PostId, u64)>> {
        self.inner.repost_counts(posts).await
    }
    async fn drop_cache(&self, user: &str) -> StoreResult<bool> {
        self.inner.drop_cache(user).await
    }
}
