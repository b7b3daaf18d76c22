//! The content port: posts.

use async_trait::async_trait;

use super::StoreResult;
use crate::domain::{NameStamp, Post, PostId};

/// Which part of the posts, in id (creation) order, a listing reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PostRange {
    /// The newest posts below the id (from the newest when `None`), read newest first.
    Older(Option<PostId>),
    /// The oldest posts above the id, read oldest first (a page just newer than it).
    Newer(PostId),
}

/// Changes here are appended to the change feed atomically with the change, and keep
/// the author's post counter.
/// A stored post, with what the insert learnt of its author on the way.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Inserted {
    pub post: Post,
    /// The author's follower count as the insert read it: the fan-out decides from it
    /// whether to deliver in the request, without another read.
    pub author_followers: u64,
    /// The author's display name as the insert read it, for the timeline entries.
    pub author_name: NameStamp,
}

#[async_trait]
pub trait ContentStore: Send + Sync + 'static {
    /// Stores a post with a fresh id greater than every earlier one. `NotFound` when the
    /// author is unknown, or `in_reply_to` names no existing post (the embedded store
    /// reads the parent in the insert's transaction, MongoDB just before the insert).
    /// A reply copies its parent's author into `Post::reply_to` and moves the parent's
    /// `replies_count` up; deleting it moves the count down while the parent exists.
    async fn insert_post(
        &self,
        author: &str,
        text: &str,
        in_reply_to: Option<PostId>,
        now_ms: i64,
    ) -> StoreResult<Inserted>;
    async fn post(&self, id: PostId) -> StoreResult<Option<Post>>;
    /// Returns the deleted post, `None` when it did not exist.
    async fn delete_post(&self, id: PostId) -> StoreResult<Option<Post>>;
    /// Newest first, ids strictly below `before`.
    async fn posts_by_author(
        &self,
        author: &str,
        before: Option<PostId>,
        limit: usize,
    ) -> StoreResult<Vec<Post>>;
    /// The posts that exist among `ids`, in no particular order. `authors`, when not
    /// empty, are the authors of those posts (timeline entries carry them): on a sharded
    /// MongoDB they route the lookup to the shards holding those authors' posts.
    async fn posts_by_ids(&self, ids: &[PostId], authors: &[String]) -> StoreResult<Vec<Post>>;
    /// The ids among `ids` whose post exists, in no particular order. Reads the id
    /// index only, never the posts. `authors` as for `posts_by_ids`.
    async fn existing_posts(&self, ids: &[PostId], authors: &[String]) -> StoreResult<Vec<PostId>>;
    /// Fanout on read: the newest posts by `user` and everyone `user` follows, newest
    /// first, ids strictly below `before`.
    async fn home_posts(
        &self,
        user: &str,
        before: Option<PostId>,
        limit: usize,
    ) -> StoreResult<Vec<Post>>;
    /// [`ContentStore::home_posts`] without the authors hidden from `user` at `now_ms`
    /// (blocks either way, mutes standing then: as `RelationStore::hidden` reads them),
    /// who are left out of the authors read rather than read and dropped: a reader who
    /// mutes most of whom they follow reads none of those posts. One lookup per author,
    /// never per post. Each post comes with its author's name as this read found it
    /// (their id when they have no profile), so the page needs no lookup of names. For
    /// reads below a cache (which the page filters again); a cache's build, which must
    /// hold everything, reads [`ContentStore::home_posts`]. Embedded: each shown
    /// author's newest ids from the `(author, id)` index, merged, stopping at the first
    /// author whose newest would not make the page, then the page's rows; MongoDB: the
    /// shown authors' posts by `$in` batches over `{author, _id}`, then their names.
    async fn shown_home_posts(
        &self,
        user: &str,
        before: Option<PostId>,
        limit: usize,
        now_ms: i64,
    ) -> StoreResult<Vec<(Post, NameStamp)>>;
    /// The newest posts below `before` and above `above`, at most `limit`, by the
    /// accounts `user` follows through an edge flagged merged (see
    /// `GraphStore::reclassify`), newest first, each with its author's name as this read
    /// found it (so a page that merges them needs no lookup of names). `above` is a lower
    /// bound the caller already knows the page stops at: a store may skip every author
    /// with nothing between the bounds without reading their posts.
    async fn merged_posts(
        &self,
        user: &str,
        before: Option<PostId>,
        above: Option<PostId>,
        limit: usize,
    ) -> StoreResult<Vec<(Post, NameStamp)>>;
    /// Every post, replies included (reposts are not posts), in `range`, at most
    /// `limit`, in the range's order: the public timeline. Embedded: the posts' primary
    /// key; MongoDB: `_id`.
    async fn public_posts(&self, range: PostRange, limit: usize) -> StoreResult<Vec<Post>>;
    /// [`ContentStore::public_posts`] of the posts carrying the hashtag `tag` (as
    /// `domain::hashtags` parses a post's text; `tag` as `domain::is_tag` accepts it),
    /// from the tag index: embedded `post_tags (tag, post)`, MongoDB the posts' `tags`
    /// with `{tags: 1, _id: -1}`.
    async fn tagged_posts(
        &self,
        tag: &str,
        range: PostRange,
        limit: usize,
    ) -> StoreResult<Vec<Post>>;
}
