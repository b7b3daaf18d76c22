//! Listings of posts across authors, newest first with keyset pages both ways: the
//! public timeline (every post) and the tag timeline (the posts carrying a hashtag).

use std::future::Future;

use super::{Page, Social};
use crate::domain::relations::Hidden;
use crate::domain::{Post, PostId, is_tag};
use crate::store::{PostRange, StoreError, StoreResult};

/// A listing that keeps meeting hidden authors stops refilling after this many reads
/// and serves what it has, with a cursor at the last post it examined.
const MAX_READS: usize = 8;

impl Social {
    /// A page of the public timeline: every post, replies included (reposts are not
    /// posts), newest first. `range` `Older(before)` is the newest `limit` below
    /// `before`; `Newer(after)` the page just above `after` (its oldest `limit` posts),
    /// still newest first. With a `caller`, the posts of authors hidden from them
    /// (blocks either way, standing mutes: `RelationStore::hidden`) are left out.
    /// `next` continues in the range's direction: pass it as `before` (`Older`) or as
    /// `after` (`Newer`); `None` when nothing more lies that way. A page can be shorter
    /// than `limit` with a `next` when it met many hidden posts.
    pub async fn public_posts(
        &self,
        caller: Option<&str>,
        range: PostRange,
        limit: usize,
    ) -> StoreResult<Page<Post, PostId>> {
        let content = &self.store.content;
        self.listed(caller, range, limit, |range, n| {
            content.public_posts(range, n)
        })
        .await
    }

    /// A page of the tag timeline: the posts carrying the hashtag `tag` (as
    /// `domain::hashtags` parses a post's text: lower-case, no `#`), otherwise as
    /// [`Social::public_posts`]. A `tag` that [`is_tag`] refuses is `Invalid`.
    pub async fn tagged_posts(
        &self,
        caller: Option<&str>,
        tag: &str,
        range: PostRange,
        limit: usize,
    ) -> StoreResult<Page<Post, PostId>> {
        if !is_tag(tag) {
            return Err(StoreError::Invalid(format!(
                "a tag is 1 to 64 lower-case letters, digits or _, got {tag:?}"
            )));
        }
        let content = &self.store.content;
        self.listed(caller, range, limit, |range, n| {
            content.tagged_posts(tag, range, n)
        })
        .await
    }

    /// One page of a listing that `read` answers in store order (see
    /// [`ContentStore::public_posts`](crate::store::ContentStore::public_posts)), with
    /// hidden authors left out in as many reads as it takes to fill the page.
    async fn listed<F, Fut>(
        &self,
        caller: Option<&str>,
        range: PostRange,
        limit: usize,
        read: F,
    ) -> StoreResult<Page<Post, PostId>>
    where
        F: Fn(PostRange, usize) -> Fut,
        Fut: Future<Output = StoreResult<Vec<Post>>>,
    {
        let hidden = match caller {
            Some(caller) => {
                let now = self.timelines.now_ms();
                self.store.relations.hidden(caller, now).await?
            }
            None => Hidden::default(),
        };
        let limit = limit.max(1);
        let want = limit + 1;
        let mut kept: Vec<Post> = Vec::with_capacity(want);
        let mut cursor = range;
        let mut exhausted = false;
        for _ in 0..MAX_READS {
            let posts = read(cursor, want).await?;
            exhausted = posts.len() < want;
            if let Some(last) = posts.last() {
                cursor = match cursor {
                    PostRange::Older(_) => PostRange::Older(Some(last.id)),
                    PostRange::Newer(_) => PostRange::Newer(last.id),
                };
            }
            kept.extend(posts.into_iter().filter(|p| !hidden.hides(&p.author)));
            if kept.len() >= want || exhausted {
                break;
            }
        }
        let next = if kept.len() > limit {
            Some(kept[limit - 1].id)
        } else if exhausted {
            None
        } else {
            // The reads ran out among hidden posts: more may lie beyond the last one.
            match cursor {
                PostRange::Older(before) => before,
                PostRange::Newer(after) => Some(after),
            }
        };
        kept.truncate(limit);
        if let PostRange::Newer(_) = range {
            kept.reverse();
        }
        Ok(Page { items: kept, next })
    }
}
