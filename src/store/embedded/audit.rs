//! The audit's reads on SQLite, each one index range of at most a page, and the drop of
//! a cache for its repair.

use std::sync::LazyLock;

use async_trait::async_trait;
use rusqlite::params;

use super::users::{USER_COLUMNS, user_from_row};
use super::{EmbeddedStore, post_after, post_from_row, post_id_at, text_after};
use crate::domain::{Post, PostId, User};
use crate::store::StoreResult;
use crate::store::audit::{AuditStore, FollowEdge, NotificationKey};
use rusqlite::OptionalExtension;

// The paged reads: each one index range (`plans.rs` checks that each one seeks).
pub(super) static USERS_AFTER: LazyLock<String> = LazyLock::new(|| {
    format!("SELECT {USER_COLUMNS} FROM users WHERE id > ?1 ORDER BY id LIMIT ?2")
});
pub(super) const FOLLOW_EDGES: &str = "SELECT followee, created_at, merged FROM follows
     WHERE follower = ?1 AND followee > ?2 ORDER BY followee LIMIT ?3";
pub(super) const LIKES_OF: &str =
    "SELECT post FROM likes WHERE user = ?1 AND post > ?2 ORDER BY post LIMIT ?3";
pub(super) const POSTS_AFTER: &str =
    "SELECT id, author, text, reply_to, reply_to_author, replies_count, reposts_count FROM posts
     WHERE id > ?1 ORDER BY id LIMIT ?2";
pub(super) const NOTIFICATION_HELD: &str = "SELECT 1 FROM notifications
     WHERE user = ?1 AND type = ?2 AND actor = ?3 AND post = ?4";
pub(super) const REPLY_COUNT: &str = "SELECT count(*) FROM posts WHERE reply_to = ?1";
const REPOST_COUNT: &str = "SELECT count(*) FROM reposts WHERE post = ?1";
pub(super) const TAG_INDEX_AFTER: &str = "SELECT tag, count(*) FROM post_tags WHERE tag > ?1
     GROUP BY tag ORDER BY tag LIMIT ?2";
pub(super) const TAGS_AFTER: &str =
    "SELECT tag, total FROM tags WHERE tag > ?1 ORDER BY tag LIMIT ?2";

impl EmbeddedStore {
    /// A page of `(tag, count)` rows from `sql` (`?1` the tag after, `?2` the limit).
    async fn tag_counts(
        &self,
        sql: &'static str,
        after: Option<&str>,
        limit: usize,
    ) -> StoreResult<Vec<(String, u64)>> {
        let after = text_after(after).to_owned();
        self.read(move |conn| {
            let mut stmt = conn.prepare_cached(sql)?;
            let rows = stmt.query_map(params![after, limit as i64], |r| {
                Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?.max(0) as u64))
            })?;
            Ok(rows.collect::<rusqlite::Result<_>>()?)
        })
        .await
    }
}

#[async_trait]
impl AuditStore for EmbeddedStore {
    async fn user_count(&self) -> StoreResult<u64> {
        self.read(|conn| {
            let n: i64 = conn.query_row("SELECT count(*) FROM users", [], |r| r.get(0))?;
            Ok(n.max(0) as u64)
        })
        .await
    }

    async fn users_after(&self, after: Option<&str>, limit: usize) -> StoreResult<Vec<User>> {
        let after = text_after(after).to_owned();
        self.read(move |conn| {
            let mut stmt = conn.prepare_cached(&USERS_AFTER)?;
            let rows = stmt.query_map(params![after, limit as i64], user_from_row)?;
            Ok(rows.collect::<rusqlite::Result<_>>()?)
        })
        .await
    }

    async fn follow_edges(
        &self,
        follower: &str,
        after: Option<&str>,
        limit: usize,
    ) -> StoreResult<Vec<FollowEdge>> {
        let (follower, after) = (follower.to_owned(), text_after(after).to_owned());
        self.read(move |conn| {
            let mut stmt = conn.prepare_cached(FOLLOW_EDGES)?;
            let rows = stmt.query_map(params![follower, after, limit as i64], |row| {
                Ok(FollowEdge {
                    followee: row.get(0)?,
                    created_ms: row.get(1)?,
                    merged: row.get(2)?,
                })
            })?;
            Ok(rows.collect::<rusqlite::Result<_>>()?)
        })
        .await
    }

    async fn likes_of(
        &self,
        user: &str,
        after: Option<PostId>,
        limit: usize,
    ) -> StoreResult<Vec<PostId>> {
        let user = user.to_owned();
        let after = post_after(after);
        self.read(move |conn| {
            let mut stmt = conn.prepare_cached(LIKES_OF)?;
            let rows = stmt.query_map(params![user, after, limit as i64], |r| post_id_at(r, 0))?;
            Ok(rows.collect::<rusqlite::Result<_>>()?)
        })
        .await
    }

    async fn posts_after(&self, after: Option<PostId>, limit: usize) -> StoreResult<Vec<Post>> {
        let after = post_after(after);
        self.read(move |conn| {
            let mut stmt = conn.prepare_cached(POSTS_AFTER)?;
            let rows = stmt.query_map(params![after, limit as i64], post_from_row)?;
            Ok(rows.collect::<rusqlite::Result<_>>()?)
        })
        .await
    }

    async fn tag_totals(
        &self,
        after: Option<&str>,
        limit: usize,
    ) -> StoreResult<Vec<(String, u64)>> {
        self.tag_counts(TAGS_AFTER, after, limit).await
    }

    async fn tag_index_totals(
        &self,
        after: Option<&str>,
        limit: usize,
    ) -> StoreResult<Vec<(String, u64)>> {
        self.tag_counts(TAG_INDEX_AFTER, after, limit).await
    }

    async fn reindex_tags(&self) -> StoreResult<u64> {
        self.write(|tx| Ok(super::content::tags::reindex(tx)?))
            .await
    }

    async fn timelines_holding(&self, post: PostId, limit: usize) -> StoreResult<Vec<String>> {
        let post = post.bytes().to_vec();
        self.read(move |conn| {
            let mut stmt = conn.prepare_cached(
                "SELECT user FROM cache_entries WHERE post_id = ?1
                 UNION SELECT user FROM bucket_entries WHERE post_id = ?1
                 LIMIT ?2",
            )?;
            let rows = stmt.query_map(params![post, limit as i64], |r| r.get(0))?;
            Ok(rows.collect::<rusqlite::Result<_>>()?)
        })
        .await
    }

    async fn notifications_held(
        &self,
        keys: &[NotificationKey],
    ) -> StoreResult<Vec<NotificationKey>> {
        let keys = keys.to_vec();
        self.read(move |conn| {
            let mut stmt = conn.prepare_cached(NOTIFICATION_HELD)?;
            let mut held = Vec::new();
            for key in keys {
                let post = key.3.map_or_else(Vec::new, |p| p.bytes().to_vec());
                let found = stmt
                    .query_row(params![key.0, key.1.as_str(), key.2, post], |_| Ok(()))
                    .optional()?;
                if found.is_some() {
                    held.push(key);
                }
            }
            Ok(held)
        })
        .await
    }

    async fn reply_counts(&self, parents: &[PostId]) -> StoreResult<Vec<(PostId, u64)>> {
        self.counts_by_post(REPLY_COUNT, parents).await
    }

    async fn repost_counts(&self, posts: &[PostId]) -> StoreResult<Vec<(PostId, u64)>> {
        self.counts_by_post(REPOST_COUNT, posts).await
    }

    async fn drop_cache(&self, user: &str) -> StoreResult<bool> {
        let user = user.to_owned();
        self.write(move |tx| {
            tx.prepare_cached("DELETE FROM cache_entries WHERE user = ?1")?
                .execute([&user])?;
            let deleted = tx
                .prepare_cached("DELETE FROM caches WHERE user = ?1")?
                .execute([&user])?;
            if deleted > 0 {
                tx.prepare_cached("UPDATE meta SET value = value - 1 WHERE key = 'cache_count'")?
                    .execute([])?;
            }
            Ok(deleted > 0)
        })
        .await
    }
}

impl EmbeddedStore {
    /// `count` (one `?1`, a post id) for each of `parents`, for those with any.
    async fn counts_by_post(
        &self,
        count: &'static str,
        parents: &[PostId],
    ) -> StoreResult<Vec<(PostId, u64)>> {
        let parents = parents.to_vec();
        self.read(move |conn| {
            let mut stmt = conn.prepare_cached(count)?;
            let mut counts = Vec::new();
            for parent in parents {
                let n: i64 = stmt.query_row([&parent.bytes()[..]], |r| r.get(0))?;
                if n > 0 {
                    counts.push((parent, n as u64));
                }
            }
            Ok(counts)
        })
        .await
    }
}
