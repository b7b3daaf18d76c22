//! Replies on SQLite: `posts.reply_to` (the parent's id, NULL for a post that answers
//! nothing) and `posts.reply_to_author` (the parent's author, copied at creation), with
//! the partial index `posts_by_parent (reply_to, id)`, and `posts.replies_count`, moved
//! in the transaction that inserts or deletes a reply.

use async_trait::async_trait;
use rusqlite::{OptionalExtension, Transaction};

use super::{EmbeddedStore, POST_COLUMNS, placeholders, post_from_row};
use crate::domain::{Post, PostId, ReplyTo};
use crate::store::{StoreError, StoreResult, ThreadStore};

/// The columns and index of replies, created by the format-6 migration.
pub(super) fn replies_schema(conn: &rusqlite::Connection) -> rusqlite::Result<()> {
    super::schema::add_column(conn, "posts", "reply_to", "BLOB")?;
    super::schema::add_column(conn, "posts", "reply_to_author", "TEXT")?;
    super::schema::add_column(conn, "posts", "replies_count", "INTEGER NOT NULL DEFAULT 0")?;
    // Entries of replies carry the parent's author for the home rule; entries from
    // before hold NULL, which reads take as "no reply".
    for table in ["bucket_entries", "cache_entries"] {
        super::schema::add_column(conn, table, "reply_to_author", "TEXT")?;
    }
    conn.execute_batch(
        "CREATE INDEX IF NOT EXISTS posts_by_parent ON posts (reply_to, id)
             WHERE reply_to IS NOT NULL;",
    )
}

/// The parent `id` as a reply to it names it, read in the reply's transaction;
/// `NotFound` when it does not exist.
pub(super) fn parent(tx: &Transaction<'_>, id: PostId) -> StoreResult<ReplyTo> {
    let author: Option<String> = tx
        .prepare_cached("SELECT author FROM posts WHERE id = ?1")?
        .query_row([&id.bytes()[..]], |row| row.get(0))
        .optional()?;
    match author {
        Some(author) => Ok(ReplyTo { post: id, author }),
        None => Err(StoreError::NotFound(format!("post {id}"))),
    }
}

/// Moves the reply count of `parent` by `delta`; nothing when it no longer exists.
pub(super) fn count_reply(tx: &Transaction<'_>, parent: PostId, delta: i64) -> StoreResult<()> {
    tx.prepare_cached("UPDATE posts SET replies_count = replies_count + ?2 WHERE id = ?1")?
        .execute(rusqlite::params![&parent.bytes()[..], delta])?;
    Ok(())
}

/// Sets every post's `replies_count` that differs from the posts answering it: the
/// counters' rebuild (`UserStore::recount_all`). Returns how many it wrote.
pub(super) fn recount_every_reply(tx: &rusqlite::Connection) -> rusqlite::Result<usize> {
    tx.execute(
        "UPDATE posts SET replies_count =
             (SELECT count(*) FROM posts r WHERE r.reply_to = posts.id)
         WHERE replies_count != (SELECT count(*) FROM posts r WHERE r.reply_to = posts.id)",
        [],
    )
}

#[async_trait]
impl ThreadStore for EmbeddedStore {
    async fn replies(&self, parents: &[PostId], limit: usize) -> StoreResult<Vec<Post>> {
        if parents.is_empty() || limit == 0 {
            return Ok(Vec::new());
        }
        let params: Vec<Vec<u8>> = parents.iter().map(|id| id.bytes().to_vec()).collect();
        self.read(move |conn| {
            let sql = format!(
                "SELECT {POST_COLUMNS} FROM posts
                 WHERE reply_to IN ({}) AND reply_to IS NOT NULL ORDER BY id LIMIT {limit}",
                placeholders(params.len())
            );
            let mut stmt = conn.prepare(&sql)?;
            let rows = stmt.query_map(rusqlite::params_from_iter(&params), post_from_row)?;
            Ok(rows.collect::<rusqlite::Result<_>>()?)
        })
        .await
    }
}
