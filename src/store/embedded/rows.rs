//! Row helpers every port file of the embedded adapter shares: post ids and texts read
//! from rows, the key bounds of paged reads, `IN (...)` placeholders, and the two writes
//! that ride along in a port call's transaction (the change-feed entry and a counter).

use rusqlite::{Connection, Transaction, params};
use serde::Serialize;

use crate::domain::{ChangeOp, Post, PostId, ReplyTo};
use crate::store::{StoreError, StoreResult};

pub(super) fn post_id_at(row: &rusqlite::Row<'_>, idx: usize) -> rusqlite::Result<PostId> {
    // Copied straight from the row's blob: no `Vec` per id.
    let array: [u8; 12] = row.get_ref(idx)?.as_blob()?.try_into().map_err(|_| {
        rusqlite::Error::FromSqlConversionFailure(
            idx,
            rusqlite::types::Type::Blob,
            "post id is not 12 bytes".into(),
        )
    })?;
    Ok(PostId::from_bytes(array))
}

// Key bounds. SQLite's planner cannot seek an index on `(?1 IS NULL OR id > ?1)`: a
// page read that way scans from the start of the table, so walking a table by pages is
// quadratic. Every paged read binds a real bound instead, made by these.

/// Below every post id: an empty blob sorts before any 12-byte one.
pub(super) fn post_after(after: Option<PostId>) -> Vec<u8> {
    after.map_or_else(Vec::new, |id| id.bytes().to_vec())
}

/// Above every post id: 13 bytes of 0xFF sort after any 12.
pub(super) fn post_before(before: Option<PostId>) -> Vec<u8> {
    before.map_or_else(|| vec![0xFF; 13], |id| id.bytes().to_vec())
}

/// Below every user id and tag: both are never empty.
pub(super) fn text_after(after: Option<&str>) -> &str {
    after.unwrap_or("")
}

/// Column `idx` as borrowed text, without copying it into a `String`.
pub(super) fn text_at<'r>(row: &'r rusqlite::Row<'_>, idx: usize) -> rusqlite::Result<&'r str> {
    row.get_ref(idx)?.as_str().map_err(|e| {
        rusqlite::Error::FromSqlConversionFailure(idx, rusqlite::types::Type::Text, Box::new(e))
    })
}

/// The columns [`post_from_row`] reads, in its order.
pub(super) const POST_COLUMNS: &str =
    "id, author, text, reply_to, reply_to_author, replies_count, reposts_count";

/// A post from a row of [`POST_COLUMNS`].
pub(super) fn post_from_row(row: &rusqlite::Row<'_>) -> rusqlite::Result<Post> {
    let reply_to = match row.get_ref(3)? {
        rusqlite::types::ValueRef::Null => None,
        _ => Some(ReplyTo {
            post: post_id_at(row, 3)?,
            author: row.get::<_, Option<String>>(4)?.unwrap_or_default(),
        }),
    };
    let replies: i64 = row.get(5)?;
    let reposts: i64 = row.get(6)?;
    Ok(Post {
        id: post_id_at(row, 0)?,
        author: row.get(1)?,
        text: row.get(2)?,
        reply_to,
        replies_count: replies.max(0) as u64,
        reposts_count: reposts.max(0) as u64,
    })
}

pub(super) fn placeholders(n: usize) -> String {
    let mut text = String::with_capacity(n * 2);
    for i in 0..n {
        if i > 0 {
            text.push(',');
        }
        text.push('?');
    }
    text
}

/// Every row `sql(n)` answers for `ids`, read with `from_row`: `sql` gets the
/// [`placeholders`] of `n` ids for its `IN (...)`, and runs once per chunk of at most
/// `IN_CHUNK` ids (SQLite bounds a statement's parameters), from the statement cache.
pub(super) fn rows_in<P, T>(
    conn: &Connection,
    ids: &[P],
    sql: impl Fn(usize) -> String,
    from_row: impl Fn(&rusqlite::Row<'_>) -> rusqlite::Result<T>,
) -> rusqlite::Result<Vec<T>>
where
    P: rusqlite::ToSql,
{
    let mut found = Vec::with_capacity(ids.len());
    for chunk in ids.chunks(super::IN_CHUNK) {
        let mut stmt = conn.prepare_cached(&sql(chunk.len()))?;
        for row in stmt.query_map(rusqlite::params_from_iter(chunk), &from_row)? {
            found.push(row?);
        }
    }
    Ok(found)
}

pub(super) fn user_exists(conn: &Connection, id: &str) -> rusqlite::Result<bool> {
    conn.prepare_cached("SELECT 1 FROM users WHERE id = ?1")?
        .exists([id])
}

/// Appends to the change feed inside the caller's transaction.
pub(super) fn record_change<D: Serialize>(
    tx: &Transaction<'_>,
    collection: &str,
    op: ChangeOp,
    key: &str,
    document: Option<&D>,
) -> StoreResult<()> {
    let doc = document
        .map(serde_json::to_string)
        .transpose()
        .map_err(|e| StoreError::Backend(e.into()))?;
    tx.prepare_cached("INSERT INTO changes (ts, coll, op, key, doc) VALUES (?1, ?2, ?3, ?4, ?5)")?
        .execute(params![
            crate::domain::now_ms(),
            collection,
            op.as_str(),
            key,
            doc
        ])?;
    Ok(())
}

/// Moves one of `user`'s counters, and their version (see `UserStore::write_counts`).
pub(super) fn add_to_counter(
    tx: &Transaction<'_>,
    column: &str,
    user: &str,
    delta: i64,
) -> StoreResult<()> {
    tx.prepare_cached(&format!(
        "UPDATE users SET {column} = {column} + ?1, counter_version = counter_version + 1
         WHERE id = ?2"
    ))?
    .execute(params![delta, user])?;
    Ok(())
}
