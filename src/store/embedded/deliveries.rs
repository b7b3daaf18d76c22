//! Delivery markers on SQLite: one `deliveries` row per fanned-out post.

use async_trait::async_trait;
use rusqlite::params_from_iter;

use super::{EmbeddedStore, IN_CHUNK, placeholders, post_id_at};
use crate::domain::PostId;
use crate::store::{DeliveryStore, StoreResult};

pub(super) const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS deliveries (
    post_id BLOB PRIMARY KEY
) WITHOUT ROWID;
";

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
            let mut found = Vec::new();
            for chunk in ids.chunks(IN_CHUNK) {
                let sql = format!(
                    "SELECT post_id FROM deliveries WHERE post_id IN ({})",
                    placeholders(chunk.len())
                );
                let mut stmt = conn.prepare_cached(&sql)?;
                for row in stmt.query_map(params_from_iter(chunk), |row| post_id_at(row, 0))? {
                    found.push(row?);
                }
            }
            Ok(found)
        })
        .await
    }
}
