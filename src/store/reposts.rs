//! The reposts port: reposts are sources of their own (see `domain::reposts`), one per
//! (reposter, post), each with an id minted in the posts' id space when it was made.
//!
//! Every write appends its change-feed entry (collection `reposts`, keyed by the repost
//! id, carrying the repost on insert and on delete) and moves the original's
//! `reposts_count` like a reply moves its parent's `replies_count`: embedded in the
//! write's transaction; MongoDB by an `$inc` under the repost document's claim (see
//! `mongo::claims`). Deleting a post removes every repost of it: on the embedded store
//! in the delete's transaction, on MongoDB right after it (`remove_reposts_of`, which is
//! idempotent and which the embedded store answers with nothing left to remove).

use async_trait::async_trait;

use super::StoreResult;
use crate::domain::{NameStamp, PostId, Repost};

/// What a repost call did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reposted {
    /// The repost that stands: the new one, or the one that stood already.
    pub repost: Repost,
    /// Whether this call made it.
    pub created: bool,
    /// The reposter's follower count as the write read it (for the fan-out's decision).
    pub reposter_followers: u64,
    /// The reposter's display name as the write read it, for the timeline entries.
    pub reposter_name: NameStamp,
}

#[async_trait]
pub trait RepostStore: Send + Sync + 'static {
    /// Stores `user`'s repost of `post`, or answers the one that stands (`created:
    /// false`, and only once the call that made it has moved the count). `NotFound` when
    /// the user or the post is unknown (embedded: read in the write's transaction;
    /// MongoDB: read just before the insert, and a post deleted in between is as one
    /// deleted just after: its delete removes the repost).
    async fn repost(&self, user: &str, post: PostId, now_ms: i64) -> StoreResult<Reposted>;
    /// Removes `user`'s repost of `post`; `None` when none stood.
    async fn unrepost(&self, user: &str, post: PostId) -> StoreResult<Option<Repost>>;
    /// Removes every repost of `post` (a deleted post), each with its change-feed entry;
    /// answers those it removed.
    async fn remove_reposts_of(&self, post: PostId) -> StoreResult<Vec<Repost>>;
    /// `user`'s reposts, newest first, ids strictly below `before`.
    async fn reposts_by(
        &self,
        user: &str,
        before: Option<PostId>,
        limit: usize,
    ) -> StoreResult<Vec<Repost>>;
    /// Fanout on read: the newest reposts by `user` and everyone `user` follows, newest
    /// first, ids strictly below `before` (as `ContentStore::home_posts` for posts).
    async fn home_reposts(
        &self,
        user: &str,
        before: Option<PostId>,
        limit: usize,
    ) -> StoreResult<Vec<Repost>>;
    /// `hybrid`'s merged half, for reposts as `ContentStore::merged_posts` is for posts:
    /// the newest reposts below `before` and above `above`, at most `limit`, by the
    /// accounts `user` follows through an edge flagged merged (see
    /// `GraphStore::reclassify`), newest first. `above` is a lower bound the caller
    /// already knows the page stops at. Embedded: the flagged edges from
    /// `follows_flagged`, each one's newest repost id below the cursor from
    /// `reposts_by_user_id` (one seek each), then the `(user, id)` ids merged as
    /// `merged_posts` merges post ids, and the page's rows alone; MongoDB: the flagged
    /// edges, then one query of `{user: 1, _id: -1}`.
    async fn merged_reposts(
        &self,
        user: &str,
        before: Option<PostId>,
        above: Option<PostId>,
        limit: usize,
    ) -> StoreResult<Vec<Repost>>;
    /// The reposts among `ids` (repost ids) that still stand, in no particular order.
    async fn reposts_by_ids(&self, ids: &[PostId]) -> StoreResult<Vec<Repost>>;
    /// The reposts of any of `posts` by any of `reposters` with ids strictly below
    /// `below`, in no particular order: one query (embedded: the `(post, id)` index;
    /// MongoDB: `{post: 1, _id: 1}`). What a timeline page needs to decide which of its
    /// repost entries a reader saw first.
    async fn reposts_of(
        &self,
        posts: &[PostId],
        reposters: &[String],
        below: PostId,
    ) -> StoreResult<Vec<Repost>>;
    /// The reposts of `post`, newest first, ids strictly below `before`, at most
    /// `limit`: one index range (embedded: `reposts_by_post (post, id)`; MongoDB:
    /// `{post: 1, _id: 1}`). Its reposters list.
    async fn reposts_of_post(
        &self,
        post: PostId,
        before: Option<PostId>,
        limit: usize,
    ) -> StoreResult<Vec<Repost>>;
    /// The reposts of `post` with ids strictly above `after`, oldest first (the nearest
    /// first), at most `limit`: the page just before a cursor of
    /// [`RepostStore::reposts_of_post`], from the same index range read the other way.
    async fn reposts_of_post_newer(
        &self,
        post: PostId,
        after: PostId,
        limit: usize,
    ) -> StoreResult<Vec<Repost>>;
}
