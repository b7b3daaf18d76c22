//! Posts: writing one (stored atomically with its change-feed entry, then delivered to
//! home timelines: to every follower before the answer for a small audience, to the
//! author alone otherwise, the timelines worker doing the rest), reading one or an
//! author's list, and deleting one (only its author may), which retracts it from
//! timelines and removes its reposts.

use super::{Page, Social};
use crate::domain::{Post, PostId, now_ms};
use crate::store::{Inserted, StoreError, StoreResult};

impl Social {
    /// Stores the post (atomically with its change-feed entry) and delivers it: to the
    /// author and every follower before the answer when the author has at most
    /// `feed.inline_fanout_max` followers, otherwise to the author only, leaving the
    /// followers to the timelines worker. The worker also finishes any fan-out a crash
    /// interrupted, and the activity worker records the post.
    pub async fn post(&self, author: &str, text: &str) -> StoreResult<Post> {
        self.post_reply(author, text, None).await
    }

    /// [`Social::post`], answering the post `in_reply_to` when set: `NotFound` when that
    /// post does not exist (checked by the store as part of the insert).
    pub async fn post_reply(
        &self,
        author: &str,
        text: &str,
        in_reply_to: Option<PostId>,
    ) -> StoreResult<Post> {
        let inserted = self
            .store
            .content
            .insert_post(author, text, in_reply_to, now_ms())
            .await?;
        self.deliver_post(inserted).await
    }

    /// Delivers a post just stored: see [`Social::post`].
    pub(super) async fn deliver_post(&self, inserted: Inserted) -> StoreResult<Post> {
        let Inserted {
            post,
            author_followers,
            author_name,
        } = inserted;
        self.wakers.wake_all();
        crate::faults::point("post.inserted").await;
        if self.timelines.fans_out_inline(author_followers) {
            self.timelines.post_created(&post, &author_name).await?;
        } else {
            self.timelines.post_created_own(&post, &author_name).await?;
        }
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

    /// Deletes the post as `caller`: `Forbidden` unless they wrote it (any caller when
    /// authentication is off, `caller` then being `None`). `None` when it did not exist.
    pub async fn delete_post_as(
        &self,
        id: PostId,
        caller: Option<&str>,
    ) -> StoreResult<Option<Post>> {
        if let Some(caller) = caller {
            match self.store.content.post(id).await? {
                None => return Ok(None),
                // Authors never change, so the check cannot go stale before the delete.
                Some(post) if post.author != caller => {
                    return Err(StoreError::Forbidden(format!(
                        "post {id} is not {caller}'s to delete"
                    )));
                }
                Some(_) => {}
            }
        }
        self.delete_post(id).await
    }

    /// Deletes the post and retracts it from timelines. `None` when it did not exist (or
    /// was already deleted).
    pub async fn delete_post(&self, id: PostId) -> StoreResult<Option<Post>> {
        let deleted = self.store.content.delete_post(id).await?;
        if let Some(post) = &deleted {
            self.wakers.wake_all();
            self.timelines.retract(post.id).await?;
            self.remove_reposts_of(post.id).await?;
        }
        Ok(deleted)
    }
}
