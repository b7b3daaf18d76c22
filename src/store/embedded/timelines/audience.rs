//! A post's delivery to the caches of its author's audience on SQLite.
//!
//! Every write shares one connection, so a transaction's length is how long every other
//! write, a request's included, may wait. The audience is therefore listed in one read
//! and written [`AUDIENCE_CHUNK`] cache holders per transaction, each chunk retried on
//! its own as MongoDB retries each batch. Listing from a snapshot loses nothing: a cache
//! started after it is built by reading the posts, this one included, and a follow made
//! after it backfills the followee's posts; each chunk's transaction pushes only to the
//! caches that still exist then.

use std::future::Future;

use rusqlite::{Connection, OptionalExtension, Transaction};

use super::insert_cache_entries;
use crate::domain::TimelineEntry;
use crate::store::StoreResult;
use crate::store::embedded::{IN_CHUNK, placeholders};
use crate::store::timelines::{CacheMerge, with_retries};

/// Cache holders written per transaction: at about 10 µs per cache, a few milliseconds
/// of holding the writer, against 150-250 ms for 10,000 caches in one transaction.
pub(super) const AUDIENCE_CHUNK: usize = 250;

/// `author` and those of `author`'s followers that have a cache, walking whichever is
/// smaller, the followers or the caches, so a post costs nothing per follower without
/// a cache when few users read.
pub(super) fn cache_owners(conn: &Connection, author: &str) -> StoreResult<Vec<String>> {
    let caches: i64 = conn
        .prepare_cached("SELECT value FROM meta WHERE key = 'cache_count'")?
        .query_row([], |row| row.get(0))
        .optional()?
        .unwrap_or(0);
    let followers: i64 = conn
        .prepare_cached("SELECT followers_count FROM users WHERE id = ?1")?
        .query_row([author], |row| row.get(0))
        .optional()?
        .unwrap_or(0);
    let sql = if caches <= followers {
        "SELECT c.user FROM caches c WHERE c.user = ?1 OR EXISTS (
             SELECT 1 FROM follows f WHERE f.follower = c.user AND f.followee = ?1)"
    } else {
        "SELECT c.user FROM caches c WHERE c.user = ?1
         UNION ALL
         SELECT f.follower FROM follows f CROSS JOIN caches c ON c.user = f.follower
         WHERE f.followee = ?1"
    };
    let owners = conn
        .prepare_cached(sql)?
        .query_map([author], |row| row.get(0))?
        .collect::<rusqlite::Result<_>>()?;
    Ok(owners)
}

/// Pushes `entries` into the caches of those `users` that have one. Returns how many
/// caches took at least one entry.
pub(super) fn push_to_caches(
    tx: &Transaction<'_>,
    users: &[String],
    entries: &[TimelineEntry],
    cache_size: u32,
) -> StoreResult<u64> {
    let mut entries = entries.to_vec();
    super::names::current_stamps(tx, &mut entries)?;
    let mut written = 0;
    for chunk in users.chunks(IN_CHUNK) {
        let sql = format!(
            "SELECT user FROM caches WHERE user IN ({})",
            placeholders(chunk.len())
        );
        let owners: Vec<String> = tx
            .prepare_cached(&sql)?
            .query_map(rusqlite::params_from_iter(chunk), |row| row.get(0))?
            .collect::<rusqlite::Result<_>>()?;
        for owner in owners {
            let inserted =
                insert_cache_entries(tx, &owner, &entries, cache_size, CacheMerge::Push)?;
            written += u64::from(inserted > 0);
        }
    }
    Ok(written)
}

/// Calls `push` on `owners` a chunk at a time, retrying each failed chunk; a chunk that
/// still fails does not stop the others, and the first persistent error is returned.
/// Otherwise returns the sum of what `push` reports (each chunk is one transaction, so
/// a failed try counts nothing).
pub(super) async fn in_chunks<'a, F, Fut>(owners: &'a [String], push: F) -> StoreResult<u64>
where
    F: Fn(&'a [String]) -> Fut,
    Fut: Future<Output = StoreResult<u64>>,
{
    let (mut written, mut failure) = (0, None);
    for chunk in owners.chunks(AUDIENCE_CHUNK) {
        match with_retries(|| push(chunk)).await {
            Ok(n) => written += n,
            Err(error) => {
                tracing::error!(error = %error, "a cache push chunk failed; pushing the rest");
                failure.get_or_insert(error);
            }
        }
    }
    match failure {
        Some(error) => Err(error),
        None => Ok(written),
    }
}
