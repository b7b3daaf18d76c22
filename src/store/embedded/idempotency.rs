//! Idempotency keys on SQLite: `post_keys (author, key, post, created_at)`, primary key
//! `(author, key)`. A keyed insert reads the key, and claims it and inserts the post,
//! in one write transaction (`BEGIN IMMEDIATE`, writers serialised): the check is part
//! of the write, and a crash leaves either both or neither. Expired keys are replaced
//! when their key comes again and swept by age (`post_keys_by_age`) in the same write,
//! a few at a time. Format 11 (`post_keys_schema`).

use async_trait::async_trait;
use rusqlite::{OptionalExtension, params};

use super::content::{POST_BY_ID, insert_post_tx};
use super::{EmbeddedStore, post_from_row, post_id_at};
use crate::domain::PostId;
use crate::store::StoreResult;
use crate::store::idempotency::{IdempotencyStore, KeyedInsert, PostKey};

/// Expired keys removed by one keyed insert, beside its own: enough to outpace the keys
/// made, so the table holds about an hour of keys.
const SWEEP_PER_WRITE: i64 = 16;

/// The table and its index, created by the format-11 migration.
pub(super) fn post_keys_schema(conn: &rusqlite::Connection) -> rusqlite::Result<()> {
    conn.execute_batch(
        "CREATE TABLE IF NOT EXISTS post_keys (
             author     TEXT NOT NULL,
             key        TEXT NOT NULL,
             post       BLOB NOT NULL,
             created_at INTEGER NOT NULL,
             PRIMARY KEY (author, key)
         ) WITHOUT ROWID;
         CREATE INDEX IF NOT EXISTS post_keys_by_age ON post_keys (created_at);",
    )
}

#[async_trait]
impl IdempotencyStore for EmbeddedStore {
    async fn insert_post_once(
        &self,
        key: &PostKey,
        text: &str,
        in_reply_to: Option<PostId>,
        now_ms: i64,
    ) -> StoreResult<KeyedInsert> {
        let (key, text) = (key.clone(), text.to_owned());
        self.write(move |tx| {
            let cutoff = key.at_ms - key.ttl_ms;
            let claimed: Option<PostId> = tx
                .prepare_cached(
                    "SELECT post FROM post_keys WHERE author = ?1 AND key = ?2 AND created_at > ?3",
                )?
                .query_row(params![key.author, key.key, cutoff], |row| {
                    post_id_at(row, 0)
                })
                .optional()?;
            if let Some(id) = claimed {
                let post = tx
                    .prepare_cached(POST_BY_ID)?
                    .query_row([&id.bytes()[..]], post_from_row)
                    .optional()?;
                return Ok(match post {
                    Some(post) => KeyedInsert::Existing(post),
                    None => KeyedInsert::Deleted(id),
                });
            }
            sweep(tx, cutoff)?;
            let inserted = insert_post_tx(tx, key.author.clone(), text, in_reply_to, now_ms)?;
            // Replaces an expired claim of the same key, if the sweep left one.
            tx.prepare_cached(
                "INSERT OR REPLACE INTO post_keys (author, key, post, created_at)
                 VALUES (?1, ?2, ?3, ?4)",
            )?
            .execute(params![
                key.author,
                key.key,
                &inserted.post.id.bytes()[..],
                key.at_ms
            ])?;
            Ok(KeyedInsert::Created(inserted))
        })
        .await
    }
}

/// Removes a few keys claimed at or before `cutoff`, oldest first, by the age index.
fn sweep(tx: &rusqlite::Transaction<'_>, cutoff: i64) -> rusqlite::Result<usize> {
    tx.prepare_cached(
        "DELETE FROM post_keys WHERE (author, key) IN (SELECT author, key FROM post_keys
          WHERE created_at <= ?1 ORDER BY created_at LIMIT ?2)",
    )?
    .execute(params![cutoff, SWEEP_PER_WRITE])
}
