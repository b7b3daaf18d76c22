//! Timeline entries as the `cache_entries` and `bucket_entries` rows hold them, and the
//! one insert into a cache that every cache write goes through.

use rusqlite::{OptionalExtension, Transaction, params};

use super::{retractions, versions};
use crate::domain::{NameStamp, ReplyTo, TimelineEntry};
use crate::store::StoreResult;
use crate::store::embedded::post_id_at;
use crate::store::timelines::CacheMerge;

/// Format 8: entries of reposts carry their original; rows from before hold NULL, a
/// post (no repost entry was ever written before this format).
pub(in crate::store::embedded) fn repost_entries_schema(
    conn: &rusqlite::Connection,
) -> rusqlite::Result<()> {
    for table in ["bucket_entries", "cache_entries"] {
        crate::store::embedded::schema::add_column(conn, table, "repost_post", "BLOB")?;
        crate::store::embedded::schema::add_column(conn, table, "repost_author", "TEXT")?;
    }
    Ok(())
}

/// The original of a repost entry as its row's `repost_post, repost_author` columns
/// at `at` and `at + 1` hold it.
pub(in crate::store::embedded) fn repost_at(
    row: &rusqlite::Row<'_>,
    at: usize,
) -> rusqlite::Result<Option<ReplyTo>> {
    if row.get_ref(at)?.as_blob_or_null()?.is_none() {
        return Ok(None);
    }
    Ok(Some(ReplyTo {
        post: post_id_at(row, at)?,
        author: row.get(at + 1)?,
    }))
}

/// An entry's original as the `repost_post, repost_author` columns store it.
pub(in crate::store::embedded) fn repost_columns(
    entry: &TimelineEntry,
) -> (Option<Vec<u8>>, Option<&str>) {
    match &entry.repost_of {
        Some(of) => (Some(of.post.bytes().to_vec()), Some(&of.author)),
        None => (None, None),
    }
}

/// An entry from a row of `post_id, author, text, name, name_v, reply_to_author,
/// repost_post, repost_author`.
pub(super) fn entry_from_row(row: &rusqlite::Row<'_>) -> rusqlite::Result<TimelineEntry> {
    let name: Option<String> = row.get(3)?;
    let version: Option<i64> = row.get(4)?;
    Ok(TimelineEntry {
        id: post_id_at(row, 0)?,
        author: row.get(1)?,
        text: row.get(2)?,
        name: name.map(|display_name| NameStamp {
            display_name,
            version: version.unwrap_or(0).max(0) as u64,
        }),
        reply_to_author: row.get(5)?,
        repost_of: repost_at(row, 6)?,
    })
}

/// An entry's name stamp as the `name` and `name_v` columns store it.
pub(super) fn name_columns(entry: &TimelineEntry) -> (Option<&str>, Option<i64>) {
    match &entry.name {
        Some(stamp) => (Some(&stamp.display_name), Some(stamp.version as i64)),
        None => (None, None),
    }
}

/// Inserts into `user`'s cache the entries it lacks and may take, and trims it to the
/// newest `cache_size`. Returns how many were new; nothing without a cache.
///
/// The coverage rule (see `feed::cache`): a cache being built takes every entry (its
/// fill merges them); a ready cache takes an entry below its oldest one only while it is
/// complete, since reads serve everything below the oldest entry from fanout on read and
/// a late entry there would hide what lies between. A trim that drops an entry ends
/// completeness; so does a fill or a backfill whose read was cut (see [`CacheMerge`]).
pub(super) fn insert_cache_entries(
    tx: &Transaction<'_>,
    user: &str,
    entries: &[TimelineEntry],
    cache_size: u32,
    merge: CacheMerge,
) -> StoreResult<usize> {
    let head: Option<(bool, bool, Option<Vec<u8>>)> = tx
        .prepare_cached(
            "SELECT ready, complete,
                    (SELECT post_id FROM cache_entries WHERE user = ?1 ORDER BY post_id LIMIT 1)
             FROM caches WHERE user = ?1",
        )?
        .query_row([user], |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)))
        .optional()?;
    let Some((ready, complete, oldest)) = head else {
        return Ok(0);
    };
    let takes = |id: &[u8]| !ready || complete || oldest.as_deref().is_some_and(|o| id > o);
    let mut insert = tx.prepare_cached(
        "INSERT OR IGNORE INTO cache_entries
             (user, post_id, author, text, name, name_v, reply_to_author,
              repost_post, repost_author)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
    )?;
    let mut inserted = 0;
    for entry in entries {
        let id = &entry.id.bytes()[..];
        if !takes(id) {
            continue;
        }
        let (name, version) = name_columns(entry);
        let (repost_post, repost_author) = repost_columns(entry);
        let new = insert.execute(params![
            user,
            id,
            entry.author,
            entry.text,
            name,
            version,
            entry.reply_to_author,
            repost_post,
            repost_author
        ])?;
        if new > 0 {
            retractions::mark_inserted(tx, user, id, &entry.author)?;
        }
        inserted += new;
    }
    // Keep the newest `cache_size` entries, as `$push` with `$sort` and `$slice` does.
    let trimmed = tx
        .prepare_cached(
            "DELETE FROM cache_entries WHERE user = ?1 AND post_id < (
                 SELECT post_id FROM cache_entries WHERE user = ?1
                 ORDER BY post_id DESC LIMIT 1 OFFSET ?2)",
        )?
        .execute(params![user, i64::from(cache_size) - 1])?;
    if inserted > 0 || trimmed > 0 {
        versions::bump_version(tx, user)?;
    }
    let ends = trimmed > 0 || merge.cut();
    if ends || merge.readies() {
        tx.prepare_cached(
            "UPDATE caches SET complete = complete AND NOT ?2, ready = ready OR ?3 WHERE user = ?1",
        )?
        .execute(params![user, ends, merge.readies()])?;
    }
    Ok(inserted)
}
