//! Pushes into buckets. As on MongoDB, sized buckets and the parts of a timed period are
//! one thing: a group of buckets numbered in sequence, of which only the newest takes
//! entries, each holding at most a fixed number. A timed period's parts are the keys
//! `period << PART_BITS | part`, so that `ORDER BY mx DESC, key DESC` orders them as
//! MongoDB's `{mx: -1, "_id.t": -1, "_id.p": -1}` does.

use rusqlite::{OptionalExtension, Transaction, params};

use crate::domain::{BucketKind, TimelineEntry};
use crate::store::{StoreError, StoreResult};

/// Bits of a timed key that number the parts of a period.
pub(in crate::store::embedded) const PART_BITS: u32 = 20;

pub(super) fn kind_code(kind: BucketKind) -> i64 {
    match kind {
        BucketKind::Timed => 0,
        BucketKind::Sized => 1,
    }
}

/// The first and last stored key of a group: sized buckets are numbered from 0, a timed
/// period's parts from `period << PART_BITS`.
pub(super) fn group_keys(kind: BucketKind, period: i64) -> StoreResult<(i64, i64)> {
    match kind {
        BucketKind::Sized => Ok((0, i64::MAX)),
        BucketKind::Timed => {
            let low = period.checked_mul(1 << PART_BITS).ok_or_else(|| {
                StoreError::Backend(anyhow::anyhow!("timed bucket period {period} out of range"))
            })?;
            Ok((low, low + (1 << PART_BITS) - 1))
        }
    }
}

/// The key a bucket is known by: the period of a timed part, the sequence number of a
/// sized bucket.
pub(super) fn public_key(kind: BucketKind, stored: i64) -> i64 {
    match kind {
        BucketKind::Timed => stored >> PART_BITS,
        BucketKind::Sized => stored,
    }
}

/// Appends `entries` in order to `user`'s group `keys`, `cap` entries per bucket at
/// most, skipping entries the group already holds. Writers are serialised, so reading
/// the newest bucket and writing to it cannot race.
pub(super) fn push_group(
    tx: &Transaction<'_>,
    kind: BucketKind,
    user: &str,
    (low, high): (i64, i64),
    cap: u32,
    entries: &[TimelineEntry],
) -> StoreResult<()> {
    let kind = kind_code(kind);
    // Only buckets whose newest id reaches the entry can hold it, so the check of a
    // fresh post is one empty range of the `(kind, user, mx)` index.
    let mut held = tx.prepare_cached(
        "SELECT 1 FROM buckets AS b INDEXED BY buckets_by_newest
         JOIN bucket_entries AS e
           ON e.kind = b.kind AND e.user = b.user AND e.key = b.key AND e.post_id = ?5
         WHERE b.kind = ?1 AND b.user = ?2 AND b.mx >= ?5 AND b.key BETWEEN ?3 AND ?4",
    )?;
    let mut newest = tx.prepare_cached(
        "SELECT key, n FROM buckets WHERE kind = ?1 AND user = ?2 AND key BETWEEN ?3 AND ?4
         ORDER BY key DESC LIMIT 1",
    )?;
    let mut bucket = tx.prepare_cached(
        "INSERT INTO buckets (kind, user, key, n, mn, mx) VALUES (?1, ?2, ?3, 1, ?4, ?4)
         ON CONFLICT (kind, user, key) DO UPDATE SET
             n = n + 1, mn = min(mn, excluded.mn), mx = max(mx, excluded.mx)",
    )?;
    let mut entry_row = tx.prepare_cached(
        "INSERT OR IGNORE INTO bucket_entries
             (kind, user, key, post_id, author, text, name, name_v, reply_to_author,
              repost_post, repost_author)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
    )?;
    for entry in entries {
        let id = &entry.id.bytes()[..];
        if held.exists(params![kind, user, low, high, id])? {
            continue;
        }
        let head: Option<(i64, i64)> = newest
            .query_row(params![kind, user, low, high], |row| {
                Ok((row.get(0)?, row.get(1)?))
            })
            .optional()?;
        let key = match head {
            None => low,
            Some((key, n)) if n < i64::from(cap) => key,
            Some((key, _)) if key < high => key + 1,
            Some(_) => {
                return Err(StoreError::Backend(anyhow::anyhow!(
                    "every part of {user}'s timed bucket is full"
                )));
            }
        };
        bucket.execute(params![kind, user, key, id])?;
        let (name, version) = super::name_columns(entry);
        let (repost_post, repost_author) = super::entries::repost_columns(entry);
        entry_row.execute(params![
            kind,
            user,
            key,
            id,
            entry.author,
            entry.text,
            name,
            version,
            entry.reply_to_author,
            repost_post,
            repost_author
        ])?;
    }
    Ok(())
}
