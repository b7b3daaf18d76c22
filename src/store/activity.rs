//! The activity port: each user's activity log, kept with the outlier pattern, and likes.

use async_trait::async_trait;

use super::StoreResult;
use crate::domain::{
    Activity, ActivityLayout, ActivityLimits, ActivityPage, ActivityType, Fence, PostId,
};

#[async_trait]
pub trait ActivityStore: Send + Sync + 'static {
    /// Appends an activity with the next sequence number. A user's first activity fixes
    /// the layout of their log to `limits`. `NotFound` when the user is unknown.
    async fn record_activity(
        &self,
        user: &str,
        kind: ActivityType,
        reference: &str,
        ts_ms: i64,
        limits: ActivityLimits,
    ) -> StoreResult<Activity>;
    /// Appends the activity derived from the change at feed order `seq`, at most once:
    /// a log that already applied `seq` or a later change is left as it is, so a replay
    /// changes nothing, and `None` is returned. The entry's time is raised to the log's
    /// newest, so the log stays newest first by time. Fenced by `fence` (embedded: the
    /// lease, in the write's transaction; both: the log's own `seq` watermark).
    #[allow(clippy::too_many_arguments)]
    async fn apply_activity(
        &self,
        fence: &Fence,
        seq: u64,
        user: &str,
        kind: ActivityType,
        reference: &str,
        ts_ms: i64,
        limits: ActivityLimits,
    ) -> StoreResult<Option<Activity>>;
    /// Recomputes every activity log from the sources (posts, follows, likes), oldest
    /// first, replacing what was there: the activity worker's rebuild after history
    /// was lost. Fenced like `apply_activity`.
    async fn rebuild_activity(&self, fence: &Fence, limits: ActivityLimits) -> StoreResult<()>;
    /// Entries `skip..skip+limit` counted from the newest, newest first, reading only
    /// the documents that hold them. `NotFound` when the user is unknown.
    async fn activities(&self, user: &str, skip: u64, limit: u64) -> StoreResult<ActivityPage>;
    /// How many entries the primary document and each page hold.
    async fn activity_layout(&self, user: &str) -> StoreResult<ActivityLayout>;
    /// Returns whether the like is new. `NotFound` when the user or post is unknown.
    async fn like(&self, user: &str, post: PostId, now_ms: i64) -> StoreResult<bool>;
    /// Returns whether a like was removed.
    async fn unlike(&self, user: &str, post: PostId) -> StoreResult<bool>;
    /// Those of `likes` (user, post) that stand, in no order: one read (embedded: the
    /// primary key per pair, in one read transaction; MongoDB: one `$in` on `_id`).
    /// What a notifications page and the audit ask of the likes its notifications name.
    async fn likes_standing(
        &self,
        likes: &[(String, PostId)],
    ) -> StoreResult<Vec<(String, PostId)>>;
    /// Who likes `post`, newest like first (ties by user, descending), strictly below
    /// `before`, at most `limit`: one index range (embedded: `likes_by_post (post,
    /// created_at, user)`; MongoDB: `{_id.p: 1, createdAt: -1, _id.u: -1}`).
    async fn likers(
        &self,
        post: PostId,
        before: Option<&Liker>,
        limit: usize,
    ) -> StoreResult<Vec<Liker>>;
    /// Who likes `post` by likes strictly newer than `after`, oldest first (the nearest
    /// first), at most `limit`: the page just before a cursor of
    /// [`ActivityStore::likers`], from the same index range read the other way.
    async fn likers_newer(
        &self,
        post: PostId,
        after: &Liker,
        limit: usize,
    ) -> StoreResult<Vec<Liker>>;
    /// How many standing likes each of `posts` has, as (post, count) for those with
    /// any, in no order: one grouped count over the likes-by-post index (embedded
    /// `likes_by_post`; MongoDB `{_id.p: 1, createdAt: -1, _id.u: -1}`).
    async fn like_counts(&self, posts: &[PostId]) -> StoreResult<Vec<(PostId, u64)>>;
}

/// A like of a post, as its likers list shows it; also the list's cursor.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Liker {
    pub user: String,
    pub at_ms: i64,
}
