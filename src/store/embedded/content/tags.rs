//! The tag index (format 10): `post_tags (tag, post)`, one row per hashtag of a post as
//! `domain::hashtags` parses its text (the trends' parser), written in the transaction
//! that inserts the post and removed in the one that deletes it; the tag timeline reads
//! it newest first.

use rusqlite::{Connection, Transaction, params};

use super::super::{POST_COLUMNS, post_after, post_before, post_from_row};
use crate::domain::{Post, PostId, hashtags};
use crate::store::{PostRange, StoreResult};

pub(in crate::store::embedded) const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS post_tags (
    tag  TEXT NOT NULL,
    post BLOB NOT NULL,
    PRIMARY KEY (tag, post)
) WITHOUT ROWID;
";

/// The `meta` key that says the index was filled from the posts once.
const BACKFILLED: &str = "post_tags_backfilled";

/// Format 10: the table, filled once from the posts a file already holds (in one
/// savepoint with its marker, so an interrupted fill runs again whole).
pub(in crate::store::embedded) fn tags_schema(conn: &Connection) -> rusqlite::Result<()> {
    conn.execute_batch(SCHEMA)?;
    let done: bool = conn.query_row(
        "SELECT EXISTS (SELECT 1 FROM meta WHERE key = ?1)",
        [BACKFILLED],
        |row| row.get(0),
    )?;
    if done {
        return Ok(());
    }
    conn.execute_batch("SAVEPOINT post_tags;")?;
    let filled = (|| {
        fill_from_posts(conn, "post_tags")?;
        conn.execute(
            "INSERT OR IGNORE INTO meta (key, value) VALUES (?1, 1)",
            [BACKFILLED],
        )?;
        Ok(())
    })();
    match filled {
        Ok(()) => conn.execute_batch("RELEASE post_tags;"),
        Err(error) => {
            conn.execute_batch("ROLLBACK TO post_tags; RELEASE post_tags;")?;
            Err(error)
        }
    }
}

/// Indexes a post's hashtags, in the transaction that inserts it.
pub(in crate::store::embedded) fn index_post(
    tx: &Transaction<'_>,
    post: PostId,
    text: &str,
) -> rusqlite::Result<()> {
    let tags = hashtags(text);
    if tags.is_empty() {
        return Ok(());
    }
    let mut insert =
        tx.prepare_cached("INSERT OR IGNORE INTO post_tags (tag, post) VALUES (?1, ?2)")?;
    for tag in tags {
        insert.execute(params![tag, &post.bytes()[..]])?;
    }
    Ok(())
}

/// Takes a deleted post's hashtags out of the index, in the delete's transaction.
pub(in crate::store::embedded) fn unindex_post(
    tx: &Transaction<'_>,
    post: PostId,
    text: &str,
) -> rusqlite::Result<()> {
    let mut delete = tx.prepare_cached("DELETE FROM post_tags WHERE tag = ?1 AND post = ?2")?;
    for tag in hashtags(text) {
        delete.execute(params![tag, &post.bytes()[..]])?;
    }
    Ok(())
}

/// The posts carrying `tag` in `range`, at most `limit`, in its order: a seek of the
/// index's `(tag, post)` key, then each post by its primary key.
pub(in crate::store::embedded) fn tagged_posts(
    conn: &Connection,
    tag: &str,
    range: PostRange,
    limit: usize,
) -> StoreResult<Vec<Post>> {
    let columns = POST_COLUMNS
        .split(", ")
        .map(|c| format!("p.{c}"))
        .collect::<Vec<_>>()
        .join(", ");
    let (query, bound) = match range {
        PostRange::Older(before) => (
            format!(
                "SELECT {columns} FROM post_tags AS t JOIN posts AS p ON p.id = t.post
                 WHERE t.tag = ?1 AND t.post < ?2 ORDER BY t.post DESC LIMIT ?3"
            ),
            post_before(before),
        ),
        PostRange::Newer(after) => (
            format!(
                "SELECT {columns} FROM post_tags AS t JOIN posts AS p ON p.id = t.post
                 WHERE t.tag = ?1 AND t.post > ?2 ORDER BY t.post ASC LIMIT ?3"
            ),
            post_after(Some(after)),
        ),
    };
    let mut stmt = conn.prepare_cached(&query)?;
    let rows = stmt.query_map(params![tag, bound, limit as i64], post_from_row)?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// The index written again from every post's text, in the caller's transaction: the
/// rows no post's text stands for removed, the missing ones added. Answers how many
/// posts' rows changed.
pub(in crate::store::embedded) fn reindex(tx: &Transaction<'_>) -> rusqlite::Result<u64> {
    tx.execute_batch(
        "CREATE TEMP TABLE IF NOT EXISTS want_tags (tag TEXT NOT NULL, post BLOB NOT NULL,
             PRIMARY KEY (tag, post)) WITHOUT ROWID;
         DELETE FROM temp.want_tags;",
    )?;
    fill_from_posts(tx, "temp.want_tags")?;
    let changed: i64 = tx.query_row(
        "SELECT count(DISTINCT post) FROM (
             SELECT post FROM (SELECT tag, post FROM post_tags
                               EXCEPT SELECT tag, post FROM temp.want_tags)
             UNION ALL
             SELECT post FROM (SELECT tag, post FROM temp.want_tags
                               EXCEPT SELECT tag, post FROM post_tags))",
        [],
        |row| row.get(0),
    )?;
    tx.execute_batch(
        "DELETE FROM post_tags WHERE NOT EXISTS (SELECT 1 FROM temp.want_tags w
             WHERE w.tag = post_tags.tag AND w.post = post_tags.post);
         INSERT OR IGNORE INTO post_tags (tag, post) SELECT tag, post FROM temp.want_tags;
         DELETE FROM temp.want_tags;",
    )?;
    Ok(changed.max(0) as u64)
}

/// Writes into `table` (`tag`, `post`) one row per hashtag of every post, as
/// `domain::hashtags` parses its text: the index's backfill and its rewrite.
fn fill_from_posts(conn: &Connection, table: &str) -> rusqlite::Result<()> {
    let mut read = conn.prepare("SELECT id, text FROM posts WHERE instr(text, '#') > 0")?;
    let mut insert = conn.prepare(&format!(
        "INSERT OR IGNORE INTO {table} (tag, post) VALUES (?1, ?2)"
    ))?;
    let mut rows = read.query([])?;
    while let Some(row) = rows.next()? {
        let id: Vec<u8> = row.get(0)?;
        let text: String = row.get(1)?;
        for tag in hashtags(&text) {
            insert.execute(params![tag, id])?;
        }
    }
    Ok(())
}
