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
}
