//! The product's operations, shared by the HTTP handlers and the seeder: each one the
//! store call plus the timeline upkeep that goes with it.

use std::sync::Arc;

use crate::domain::{NewUser, Post, PostId, User, now_ms};
use crate::feed::{FeedSettings, TimelinePage, Timelines};
use crate::store::{Store, StoreError, StoreResult};

pub struct Social {
    pub store: Arc<dyn Store>,
    pub timelines: Timelines,
}

impl Social {
    pub fn new(store: Arc<dyn Store>, feed: &FeedSettings) -> Self {
        let timelines = Timelines::new(store.clone(), feed);
        Social { store, timelines }
    }

    pub async fn create_user(&self, id: &str, display_name: &str) -> StoreResult<User> {
        self.store
            .create_user(&NewUser {
                id: id.to_owned(),
                display_name: display_name.to_owned(),
                created_at_ms: now_ms(),
            })
            .await
    }

    pub async fn user(&self, id: &str) -> StoreResult<User> {
        self.store
            .user(id)
            .await?
            .ok_or_else(|| StoreError::NotFound(format!("user {id}")))
    }

    /// The edge first, then the backfill: a post racing with the follow is either seen
    /// by the backfill or fans out to the new edge. Returns whether the edge is new.
    pub async fn follow(&self, follower: &str, followee: &str) -> StoreResult<bool> {
        let added = self.store.follow(follower, followee, now_ms()).await?;
        if added {
            self.timelines.followed(follower, followee).await?;
        }
        Ok(added)
    }

    pub async fn unfollow(&self, follower: &str, followee: &str) -> StoreResult<()> {
        if self.store.unfollow(follower, followee).await? {
            self.timelines.unfollowed(follower, followee).await?;
        }
        Ok(())
    }

    /// Stores the post, then fans it out; the answer waits for both.
    pub async fn post(&self, author: &str, text: &str) -> StoreResult<Post> {
        let post = self.store.insert_post(author, text, now_ms()).await?;
        self.timelines.post_created(&post).await?;
        Ok(post)
    }

    pub async fn delete_post(&self, id: PostId) -> StoreResult<Option<Post>> {
        let deleted = self.store.delete_post(id).await?;
        if let Some(post) = &deleted {
            self.timelines.post_deleted(post).await?;
        }
        Ok(deleted)
    }

    pub async fn timeline(
        &self,
        user: &str,
        before: Option<PostId>,
        limit: usize,
    ) -> StoreResult<TimelinePage> {
        self.timelines.page(user, before, limit).await
    }
}
