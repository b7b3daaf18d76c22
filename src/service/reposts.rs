//! Reposts: a user passes a post on to their followers. The rules live here: a post
//! that does not exist, or whose author blocks the reposter, cannot be reposted (404,
//! as a read of it would answer); reposting one's own post is allowed.

use super::Social;
use crate::domain::{Post, PostId, Repost, now_ms};
use crate::store::{Reposted, StoreResult};

impl Social {
    /// `user` reposts `post`, or answers the repost that stands (`created: false`),
    /// with the original as read after the write. The block check is a read before the
    /// write: a block made in between hides the repost at every read anyway (reads
    /// filter reposts by both authors), so the check guards the source, not what is
    /// served.
    pub async fn repost(&self, user: &str, post: PostId) -> StoreResult<(Reposted, Post)> {
        self.user(user).await?;
        let original = self.get_post_as(post, Some(user)).await?;
        let reposted = self.store.reposts.repost(user, post, now_ms()).await?;
        if reposted.created {
            self.wakers.wake_all();
        }
        // The count as it stands once this repost moved it.
        let original = self.store.content.post(post).await?.unwrap_or(original);
        Ok((reposted, original))
    }

    /// Removes `user`'s repost of `post`, and its timeline entries; nothing when none
    /// stands (idempotent).
    pub async fn unrepost(&self, user: &str, post: PostId) -> StoreResult<Option<Repost>> {
        self.user(user).await?;
        let removed = self.store.reposts.unrepost(user, post).await?;
        if let Some(repost) = &removed {
            self.wakers.wake_all();
            self.timelines.retract(repost.id).await?;
        }
        Ok(removed)
    }

    /// Removes the reposts of a deleted post. On the embedded store the delete's own
    /// transaction did, and this finds none; on MongoDB this is the step right after
    /// the delete (a crash before it leaves reposts whose original is gone, which every
    /// read drops, and which the next call for the post removes).
    pub(super) async fn remove_reposts_of(&self, post: PostId) -> StoreResult<()> {
        for repost in self.store.reposts.remove_reposts_of(post).await? {
            self.timelines.retract(repost.id).await?;
        }
        Ok(())
    }
}
