//! Threads: a post with the posts it answers (its ancestors) and the posts that answer
//! it (its descendants), bounded.

use std::collections::HashMap;

use super::Social;
use crate::domain::{MAX_ANCESTORS, MAX_DESCENDANTS, Post, PostId, ReplyTo};
use crate::store::{StoreError, StoreResult};

/// A post's place in its thread.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Context {
    /// Root first, at most [`MAX_ANCESTORS`], the nearest kept when cut.
    pub ancestors: Vec<Post>,
    /// More ancestors exist above the first one served.
    pub ancestors_truncated: bool,
    /// The post the oldest served ancestor (or the post itself) answers, when that post
    /// was deleted: the chain stops there, since the deleted post held the link to its
    /// own parent.
    pub missing_ancestor: Option<ReplyTo>,
    /// In thread order: depth first, each post's replies oldest first. At most
    /// [`MAX_DESCENDANTS`], taken level by level (the nearest replies first, oldest
    /// first within a level).
    pub descendants: Vec<Post>,
    /// More descendants exist than were served.
    pub descendants_truncated: bool,
}

impl Social {
    /// The thread around `id`: `NotFound` when the post does not exist. Reads one post
    /// per ancestor (at most [`MAX_ANCESTORS`] + 1 reads) and one query per level of
    /// descendants (at most [`MAX_DESCENDANTS`] + 1 queries, each bounded by what is
    /// left of the limit).
    pub async fn context(&self, id: PostId) -> StoreResult<Context> {
        let post = self
            .store
            .content
            .post(id)
            .await?
            .ok_or_else(|| StoreError::NotFound(format!("post {id}")))?;
        let mut ancestors = Vec::new();
        let mut ancestors_truncated = false;
        let mut missing_ancestor = None;
        let mut next = post.reply_to.clone();
        while let Some(parent) = next.take() {
            if ancestors.len() == MAX_ANCESTORS {
                ancestors_truncated = true;
                break;
            }
            match self.store.content.post(parent.post).await? {
                Some(found) => {
                    next = found.reply_to.clone();
                    ancestors.push(found);
                }
                None => missing_ancestor = Some(parent),
            }
        }
        ancestors.reverse();
        let (descendants, descendants_truncated) = self.descendants(id).await?;
        Ok(Context {
            ancestors,
            ancestors_truncated,
            missing_ancestor,
            descendants,
            descendants_truncated,
        })
    }

    /// The replies below `root`, level by level, then put in thread order.
    async fn descendants(&self, root: PostId) -> StoreResult<(Vec<Post>, bool)> {
        let mut children: HashMap<PostId, Vec<Post>> = HashMap::new();
        let mut level = vec![root];
        let (mut count, mut truncated) = (0, false);
        while !level.is_empty() {
            let want = MAX_DESCENDANTS - count;
            let mut replies = self.store.threads.replies(&level, want + 1).await?;
            if replies.len() > want {
                truncated = true;
                replies.truncate(want);
            }
            count += replies.len();
            level = replies.iter().map(|p| p.id).collect();
            for reply in replies {
                if let Some(parent) = &reply.reply_to {
                    children.entry(parent.post).or_default().push(reply);
                }
            }
            if truncated {
                break;
            }
        }
        // Depth first; each list is oldest first, as the store answered.
        let mut ordered = Vec::with_capacity(count);
        let mut stack: Vec<std::vec::IntoIter<Post>> = Vec::new();
        if let Some(first) = children.remove(&root) {
            stack.push(first.into_iter());
        }
        while let Some(top) = stack.last_mut() {
            match top.next() {
                Some(post) => {
                    let below = children.remove(&post.id);
                    ordered.push(post);
                    if let Some(below) = below {
                        stack.push(below.into_iter());
                    }
                }
                None => {
                    stack.pop();
                }
            }
        }
        Ok((ordered, truncated))
    }
}
