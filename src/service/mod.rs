//! The product's operations, shared by the HTTP handlers and the seeder. Each write is
//! the store call plus the timeline upkeep and the activity that go with it, and every
//! rule (existence checks, no self-follow) lives here, once. The store is private: the
//! handlers and the seeder reach storage only through these operations.

mod activity;

use crate::domain::{
    ActivityLimits, ActivityType, FeedStrategy, NewUser, Post, PostId, User, now_ms,
};
use crate::feed::{FeedSettings, TimelinePage, Timelines};
use crate::store::{Store, StoreError, StoreResult};

pub use activity::ActivityLog;

/// A page of a keyset-paginated list: `next` is the cursor of the following page.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Page<T, C> {
    pub items: Vec<T>,
    pub next: Option<C>,
}

impl<T, C> Page<T, C> {
    /// Builds a page from up to `limit + 1` items fetched: the extra one only tells
    /// that another page exists.
    pub fn from_extra(mut items: Vec<T>, limit: usize, cursor: impl Fn(&T) -> C) -> Self {
        let next = (items.len() > limit).then(|| cursor(&items[limit - 1]));
        items.truncate(limit);
        Page { items, next }
    }
}

/// Which side of the follow graph a list shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    Following,
    Followers,
}

pub struct Social {
    store: Store,
    timelines: Timelines,
    activity: ActivityLog,
}

fn user_not_found(id: &str) -> StoreError {
    StoreError::NotFound(format!("user {id}"))
}

impl Social {
    pub fn new(store: Store, feed: &FeedSettings, limits: ActivityLimits) -> Self {
        Social {
            timelines: Timelines::new(store.clone(), feed),
            activity: ActivityLog::new(store.clone(), limits),
            store,
        }
    }

    pub fn activity(&self) -> &ActivityLog {
        &self.activity
    }

    pub fn backend(&self) -> &'static str {
        self.store.backend()
    }

    pub fn strategy(&self) -> FeedStrategy {
        self.timelines.strategy()
    }

    pub async fn ping(&self) -> StoreResult<()> {
        self.store.health.ping().await
    }

    pub async fn create_user(&self, id: &str, display_name: &str) -> StoreResult<User> {
        self.store
            .users
            .create_user(&NewUser {
                id: id.to_owned(),
                display_name: display_name.to_owned(),
                created_at_ms: now_ms(),
            })
            .await
    }

    pub async fn user(&self, id: &str) -> StoreResult<User> {
        self.store
            .users
            .user(id)
            .await?
            .ok_or_else(|| user_not_found(id))
    }

    pub async fn rename(&self, id: &str, display_name: &str) -> StoreResult<User> {
        self.store
            .users
            .rename_user(id, display_name)
            .await?
            .ok_or_else(|| user_not_found(id))
    }

    /// The edge first, then the backfill: a post racing with the follow is either seen
    /// by the backfill or fans out to the new edge. A new edge is recorded in the
    /// follower's activity log. Returns whether the edge is new.
    pub async fn follow(&self, follower: &str, followee: &str) -> StoreResult<bool> {
        if follower == followee {
            return Err(StoreError::Invalid(
                "a user cannot follow themselves".into(),
            ));
        }
        let added = self
            .store
            .graph
            .follow(follower, followee, now_ms())
            .await?;
        if added {
            self.timelines.followed(follower, followee).await?;
            self.activity
                .record(follower, ActivityType::Follow, followee)
                .await?;
        }
        Ok(added)
    }

    /// Idempotent. `NotFound` when either user is unknown.
    pub async fn unfollow(&self, follower: &str, followee: &str) -> StoreResult<()> {
        for id in [follower, followee] {
            self.user(id).await?;
        }
        if self.store.graph.unfollow(follower, followee).await? {
            self.timelines.unfollowed(follower, followee).await?;
        }
        Ok(())
    }

    /// One page of the users `user` follows, or of `user`'s followers, by id.
    pub async fn follow_list(
        &self,
        user: &str,
        direction: Direction,
        after: Option<&str>,
        limit: usize,
    ) -> StoreResult<Page<String, String>> {
        self.user(user).await?;
        let graph = &self.store.graph;
        let ids = match direction {
            Direction::Following => graph.following(user, after, limit + 1).await?,
            Direction::Followers => graph.followers(user, after, limit + 1).await?,
        };
        Ok(Page::from_extra(ids, limit, String::clone))
    }

    /// Stores the post, fans it out and records it in the author's activity log; the
    /// answer waits for all three.
    pub async fn post(&self, author: &str, text: &str) -> StoreResult<Post> {
        let post = self
            .store
            .content
            .insert_post(author, text, now_ms())
            .await?;
        self.timelines.post_created(&post).await?;
        self.activity
            .record(author, ActivityType::Post, &post.id.to_string())
            .await?;
        Ok(post)
    }

    pub async fn get_post(&self, id: PostId) -> StoreResult<Post> {
        self.store
            .content
            .post(id)
            .await?
            .ok_or_else(|| StoreError::NotFound(format!("post {id}")))
    }

    /// One page of `author`'s posts, newest first.
    pub async fn posts(
        &self,
        author: &str,
        before: Option<PostId>,
        limit: usize,
    ) -> StoreResult<Page<Post, PostId>> {
        self.user(author).await?;
        let posts = self
            .store
            .content
            .posts_by_author(author, before, limit + 1)
            .await?;
        Ok(Page::from_extra(posts, limit, |p| p.id))
    }

    /// Deletes the post and retracts it from timelines. `None` when it did not exist (or
    /// was already deleted).
    pub async fn delete_post(&self, id: PostId) -> StoreResult<Option<Post>> {
        let deleted = self.store.content.delete_post(id).await?;
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
