//! Reposts: a user passes a post on to their followers. The rules live here: a post
//! that does not exist, or whose author blocks the reposter, cannot be reposted (404,
//! as a read of it would answer); reposting one's own post is allowed.

use super::{Page, Social};
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
            // Into home timelines as a post of the reposter's would go: the reposter's
            // own at once, a small audience's in the request, a larger one's by the
            // timelines worker (the repost is not marked delivered until then).
            let (repost, name) = (&reposted.repost, &reposted.reposter_name);
            if self.timelines.fans_out_inline(reposted.reposter_followers) {
                self.timelines
                    .repost_created(repost, &original.text, name)
                    .await?;
            } else {
                self.timelines
                    .repost_created_own(repost, &original.text, name)
                    .await?;
            }
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

/// An item of a user's post list: their post, or their repost with its original.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Listed {
    Post(Post),
    Repost(Repost, Post),
}

impl Listed {
    /// The entry's id: the post's, or the repost's own (both in the posts' id space).
    pub fn id(&self) -> PostId {
        match self {
            Listed::Post(post) => post.id,
            Listed::Repost(repost, _) => repost.id,
        }
    }
}

impl Social {
    /// One page of `author`'s post list as `caller` sees it: their posts and their
    /// reposts, newest first by entry id. Empty when `author` blocks the caller (their
    /// posts do not exist for them; the user still exists); a repost of a post whose author is in a
    /// block with the caller (either way), or whose original is gone (a delete whose removal of its
    /// reposts has not run yet), is left out. Three reads (the posts, the reposts, the originals)
    /// and, with a caller, one of what is hidden from them.
    pub async fn post_list(
        &self,
        author: &str,
        caller: Option<&str>,
        before: Option<PostId>,
        limit: usize,
    ) -> StoreResult<Page<Listed, PostId>> {
        if let Some(caller) = caller
            && self.store.relations.blocks(author, caller).await?
        {
            self.user(author).await?;
            return Ok(Page {
                items: Vec::new(),
                next: None,
            });
        }
        self.user(author).await?;
        let want = limit + 1;
        let (posts, reposts) = tokio::try_join!(
            self.store.content.posts_by_author(author, before, want),
            self.store.reposts.reposts_by(author, before, want)
        )?;
        let originals: Vec<PostId> = reposts.iter().map(|r| r.post.post).collect();
        let authors: Vec<String> = reposts.iter().map(|r| r.post.author.clone()).collect();
        let found = self
            .store
            .content
            .posts_by_ids(&originals, &authors)
            .await?;
        let found: std::collections::HashMap<PostId, Post> =
            found.into_iter().map(|p| (p.id, p)).collect();
        let hidden = match caller {
            Some(caller) if !reposts.is_empty() => {
                Some(self.store.relations.hidden(caller, now_ms()).await?)
            }
            _ => None,
        };
        let mut items: Vec<Listed> = posts.into_iter().map(Listed::Post).collect();
        for repost in reposts {
            if hidden
                .as_ref()
                .is_some_and(|h| h.blocks(&repost.post.author))
            {
                continue;
            }
            // A post reposted once only; the map keeps each original once.
            let Some(original) = found.get(&repost.post.post).cloned() else {
                continue;
            };
            items.push(Listed::Repost(repost, original));
        }
        items.sort_unstable_by_key(|item| std::cmp::Reverse(item.id()));
        items.truncate(want);
        Ok(Page::from_extra(items, limit, Listed::id))
    }
}
