//! Delivery markers on SQLite: one `deliveries` row per fanned-out post.

use async_trait::async_trait;
use rusqlite::params;

use super::{EmbeddedStore, placeholders, post_after, post_id_at, rows_in};
use crate::domain::PostId;
use crate::store::{DeliveryStore, StoreResult};

pub(super) const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS deliveries (
    post_id BLOB PRIMARY KEY
) WITHOUT ROWID;
";

/// Posts not marked delivered, a page after `?1` (`plans.rs` checks both walks seek).
pub(super) const UNDELIVERED: &str = "SELECT id FROM posts p WHERE id > ?1
       AND NOT EXISTS (SELECT 1 FROM deliveries d WHERE d.post_id = p.id)
     ORDER BY id LIMIT ?2";
/// Markers whose post or repost is gone, a page after `?1`.
pub(super) const ORPHANED: &str = "SELECT post_id FROM deliveries d WHERE post_id > ?1
       AND NOT EXISTS (SELECT 1 FROM posts p WHERE p.id = d.post_id)
       AND NOT EXISTS (SELECT 1 FROM reposts r WHERE r.id = d.post_id)
     ORDER BY post_id LIMIT ?2";
/// Reposts not marked delivered, a page after `?1`.
pub(super) const UNDELIVERED_REPOSTS: &str = "SELECT id FROM reposts r WHERE id > ?1
       AND NOT EXISTS (SELECT 1 FROM deliveries d WHERE d.post_id = r.id)
     ORDER BY id LIMIT ?2";

#[async_trait]
impl DeliveryStore for EmbeddedStore {
    async fn mark_delivered(&self, post: PostId) -> StoreResult<()> {
        self.write(move |tx| {
            tx.prepare_cached("INSERT OR IGNORE INTO deliveries (post_id) VALUES (?1)")?
                .execute([&post.bytes()[..]])?;
            Ok(())
        })
        .await
    }

    async fn delivered(&self, posts: &[PostId]) -> StoreResult<Vec<PostId>> {
        let ids: Vec<Vec<u8>> = posts.iter().map(|id| id.bytes().to_vec()).collect();
        self.read(move |conn| {
            let sql = |n| {
                format!(
                    "SELECT post_id FROM deliveries WHERE post_id IN ({})",
                    placeholders(n)
                )
            };
            Ok(rows_in(conn, &ids, sql, |row| post_id_at(row, 0))?)
        })
        .await
    }

    async fn undelivered(&self, after: Option<PostId>, limit: usize) -> StoreResult<Vec<PostId>> {
        self.post_ids(UNDELIVERED, after, limit).await
    }

    async fn undelivered_reposts(
        &self,
        after: Option<PostId>,
        limit: usize,
    ) -> StoreResult<Vec<PostId>> {
        self.post_ids(UNDELIVERED_REPOSTS, after, limit).await
    }

    async fn orphaned(&self, after: Option<PostId>, limit: usize) -> StoreResult<Vec<PostId>> {
        self.post_ids(ORPHANED, after, limit).await
    }

    async fn unmark(&self, posts: &[PostId]) -> StoreResult<()> {
        let ids: Vec<Vec<u8>> = posts.iter().map(|id| id.bytes().to_vec()).collect();
        self.write(move |tx| {
            for id in &ids {
                tx.prepare_cached("DELETE FROM deliveries WHERE post_id = ?1")?
                    .execute([id])?;
            }
            Ok(())
        })
        .await
    }
}

impl EmbeddedStore {
    /// Post ids from `query`, which takes the exclusive lower bound and the limit.
    async fn post_ids(
        &self,
        query: &'static str,
        after: Option<PostId>,
        limit: usize,
    ) -> StoreResult<Vec<PostId>> {
        let after = post_after(after);
        self.read(move |conn| {
            let mut stmt = conn.prepare_cached(query)?;
            let rows = stmt.query_map(params![after, limit as i64], |row| post_id_at(row, 0))?;
            Ok(rows.collect::<rusqlite::Result<_>>()?)
        })
        .await
    }
}
