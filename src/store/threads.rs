//! The threads port: the replies to posts, for reading a thread downwards. A thread is
//! read upwards with `ContentStore::post`, one parent at a time, since every reply names
//! its parent (`Post::reply_to`).

use async_trait::async_trait;

use super::StoreResult;
use crate::domain::{Post, PostId};

#[async_trait]
pub trait ThreadStore: Send + Sync + 'static {
    /// The existing replies to any of `parents`, oldest first, at most `limit`: one
    /// query, from the index on the parent id (embedded: `posts_by_parent`; MongoDB:
    /// `{reply_to.post: 1, _id: 1}`).
    async fn replies(&self, parents: &[PostId], limit: usize) -> StoreResult<Vec<Post>>;
}
