//! The deliveries port: which posts have been fanned out to their whole audience. A post
//! is marked once its fan-out completed, in the request or by the timelines worker; the
//! worker fans out every post it finds unmarked, so a fan-out a crash interrupted, or one
//! left to the worker for a large audience, is always finished.

use async_trait::async_trait;

use super::StoreResult;
use crate::domain::PostId;

#[async_trait]
pub trait DeliveryStore: Send + Sync + 'static {
    /// Records that `post` reached its whole audience. Idempotent.
    async fn mark_delivered(&self, post: PostId) -> StoreResult<()>;
    /// The posts among `posts` already marked.
    async fn delivered(&self, posts: &[PostId]) -> StoreResult<Vec<PostId>>;
    /// Up to `limit` posts that exist and are not marked, ascending by id, ids strictly
    /// after `after`: what a rebuild still has to fan out.
    async fn undelivered(&self, after: Option<PostId>, limit: usize) -> StoreResult<Vec<PostId>>;
    /// Up to `limit` reposts that stand and are not marked, ascending by id, ids
    /// strictly after `after`: the reposts a rebuild still has to fan out (markers of
    /// reposts are keyed by the repost's id, in the posts' id space).
    async fn undelivered_reposts(
        &self,
        after: Option<PostId>,
        limit: usize,
    ) -> StoreResult<Vec<PostId>>;
    /// Up to `limit` marked posts or reposts that no longer exist (no post and no
    /// standing repost has the marker's id), ascending by id, ids strictly after
    /// `after`: the deleted posts and undone reposts a rebuild retracts from every
    /// timeline.
    async fn orphaned(&self, after: Option<PostId>, limit: usize) -> StoreResult<Vec<PostId>>;
    /// Removes the marks of `posts` (deleted posts, once retracted). Idempotent.
    async fn unmark(&self, posts: &[PostId]) -> StoreResult<()>;
}
