//! The audit port: the reads `socialite audit` needs beyond the product's own ports, each
//! bounded by a page (users, edges, likes and posts in key order; tag totals), and the
//! one write of its repair that no worker has: dropping a user's cache, which the
//! user's next read builds again from the sources. Each adapter also opens its store
//! for reading only (`open_read_only`, `connect_read_only`), which is how the audit
//! opens it.

use async_trait::async_trait;

use super::StoreResult;
use crate::domain::{NotificationType, Post, PostId, User};

/// What the audit's read-only open (`open_read_only`, `connect_read_only`) says to do
/// with a store of an earlier format, which it refuses rather than migrate.
pub const UPGRADE_HINT: &str = "upgrade it first: start this socialite's server on it once \
     (`socialite serve`; stop it once it listens), which brings the store to this format in \
     place, after a backup, since older binaries refuse it afterwards (see \
     docs/operations-upgrade.md#upgrading-an-existing-store), then audit again";

/// What identifies a notification: (user, type, actor, post).
pub type NotificationKey = (String, NotificationType, String, Option<PostId>);

/// A follow edge as stored, seen from its follower.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FollowEdge {
    pub followee: String,
    /// When the follow ran (the request's clock), in milliseconds.
    pub created_ms: i64,
    /// Flagged merged (the hybrid strategy's celebrities, see `GraphStore::reclassify`).
    pub merged: bool,
}

#[async_trait]
pub trait AuditStore: Send + Sync + 'static {
    /// How many users exist (may be an estimate on MongoDB): the progress bar's length.
    async fn user_count(&self) -> StoreResult<u64>;
    /// Up to `limit` users with ids strictly after `after`, ascending by id.
    async fn users_after(&self, after: Option<&str>, limit: usize) -> StoreResult<Vec<User>>;
    /// Up to `limit` of `follower`'s edges with followees strictly after `after`,
    /// ascending by followee.
    async fn follow_edges(
        &self,
        follower: &str,
        after: Option<&str>,
        limit: usize,
    ) -> StoreResult<Vec<FollowEdge>>;
    /// Up to `limit` posts `user` likes, ids strictly after `after`, ascending.
    async fn likes_of(
        &self,
        user: &str,
        after: Option<PostId>,
        limit: usize,
    ) -> StoreResult<Vec<PostId>>;
    /// Up to `limit` posts with ids strictly after `after`, ascending by id.
    async fn posts_after(&self, after: Option<PostId>, limit: usize) -> StoreResult<Vec<Post>>;
    /// Up to `limit` tags strictly after `after`, ascending, with their stored totals.
    async fn tag_totals(
        &self,
        after: Option<&str>,
        limit: usize,
    ) -> StoreResult<Vec<(String, u64)>>;
    /// Up to `limit` tags strictly after `after`, ascending, with how many posts the tag
    /// index holds under each (embedded `post_tags`; MongoDB the posts' `tags`).
    async fn tag_index_totals(
        &self,
        after: Option<&str>,
        limit: usize,
    ) -> StoreResult<Vec<(String, u64)>>;
    /// Writes the tag index again from every post's text (`domain::hashtags`);
    /// answers how many posts' entries changed. Safe beside writers: a post's tags
    /// follow from its text, which never changes.
    async fn reindex_tags(&self) -> StoreResult<u64>;
    /// Up to `limit` users whose timeline (any bucket or cache) still holds `post`.
    async fn timelines_holding(&self, post: PostId, limit: usize) -> StoreResult<Vec<String>>;
    /// Those of `keys` that a notification is stored under, in no order.
    async fn notifications_held(
        &self,
        keys: &[NotificationKey],
    ) -> StoreResult<Vec<NotificationKey>>;
    /// How many stored posts answer each of `parents`, for those with any, in no order.
    async fn reply_counts(&self, parents: &[PostId]) -> StoreResult<Vec<(PostId, u64)>>;
    /// How many reposts stand of each of `posts`, for those with any, in no order.
    async fn repost_counts(&self, posts: &[PostId]) -> StoreResult<Vec<(PostId, u64)>>;
    /// Deletes `user`'s cache and its entries; returns whether there was one.
    async fn drop_cache(&self, user: &str) -> StoreResult<bool>;
}
