//! API tokens on SQLite: one `api_tokens` row per token, keyed by its SHA-256.

use async_trait::async_trait;
use rusqlite::{OptionalExtension, params};

use super::EmbeddedStore;
use crate::store::tokens::{TokenHash, TokenRecord, TokenStore};
use crate::store::{StoreError, StoreResult};

pub(super) const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS api_tokens (
    hash       BLOB PRIMARY KEY,
    user       TEXT NOT NULL,
    token_id   TEXT NOT NULL,
    created_at INTEGER NOT NULL
) WITHOUT ROWID;
CREATE UNIQUE INDEX IF NOT EXISTS api_tokens_by_user ON api_tokens (user, token_id);
";

#[async_trait]
impl TokenStore for EmbeddedStore {
    async fn insert_token(&self, hash: &TokenHash, record: &TokenRecord) -> StoreResult<()> {
        let (hash, record) = (*hash, record.clone());
        self.write(move |tx| {
            let inserted = tx
                .prepare_cached(
                    "INSERT INTO api_tokens (hash, user, token_id, created_at)
                     VALUES (?1, ?2, ?3, ?4) ON CONFLICT DO NOTHING",
                )?
                .execute(params![
                    &hash[..],
                    record.user,
                    record.id,
                    record.created_at_ms
                ])?;
            if inserted == 0 {
                return Err(StoreError::Conflict(format!("token {}", record.id)));
            }
            Ok(())
        })
        .await
    }

    async fn token_by_hash(&self, hash: &TokenHash) -> StoreResult<Option<TokenRecord>> {
        let hash = *hash;
        self.read_inline(move |conn| {
            Ok(conn
                .prepare_cached(
                    "SELECT token_id, user, created_at FROM api_tokens WHERE hash = ?1",
                )?
                .query_row([&hash[..]], |row| {
                    Ok(TokenRecord {
                        id: row.get(0)?,
                        user: row.get(1)?,
                        created_at_ms: row.get(2)?,
                    })
                })
                .optional()?)
        })
        .await
    }

    async fn revoke_token(&self, user: &str, id: &str) -> StoreResult<bool> {
        let (user, id) = (user.to_owned(), id.to_owned());
        self.write(move |tx| {
            let deleted = tx
                .prepare_cached("DELETE FROM api_tokens WHERE user = ?1 AND token_id = ?2")?
                .execute(params![user, id])?;
            Ok(deleted > 0)
        })
        .await
    }
}
