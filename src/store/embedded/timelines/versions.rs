//! Cache versions (see `TimelineStore::cache_version`): what lets a rendered page be
//! served again while it stands (`service::pages`).

use std::hash::{DefaultHasher, Hash, Hasher};

use rusqlite::{Connection, OptionalExtension, Transaction};

use crate::store::StoreResult;
use crate::store::timelines::CacheVersion;

/// Moves `user`'s cache to a new version (see `TimelineStore::cache_version`). Every
/// write of a cache's entries calls it (or [`bump_versions_of`]) in its own
/// transaction, so equal versions mean equal entries. A random 64-bit value, not a
/// count, so that a cache deleted and built again does not repeat an earlier one.
pub(in crate::store::embedded) fn bump_version(
    tx: &Transaction<'_>,
    user: &str,
) -> StoreResult<()> {
    tx.prepare_cached("UPDATE caches SET version = random() WHERE user = ?1")?
        .execute([user])?;
    Ok(())
}

/// [`bump_version`] for every cache of the users `users` selects (an SQL query, with
/// `params`), before their entries are removed.
pub(in crate::store::embedded) fn bump_versions_of(
    tx: &Transaction<'_>,
    users: &str,
    params: impl rusqlite::Params,
) -> StoreResult<()> {
    tx.prepare_cached(&format!(
        "UPDATE caches SET version = random() WHERE user IN ({users})"
    ))?
    .execute(params)?;
    Ok(())
}

/// `user`'s cache version, and with `merged` the digest of what a `hybrid` page merges
/// beside the cache. Without `merged`, one statement, which may run as a read
/// transaction of its own; with it, call it inside one. The digest covers, for each
/// followee whose edge is flagged merged (the set `merged_posts` reads), their id, their
/// profile's version (the names it serves) and their counter version, which every
/// insert and delete of their posts moves in its own transaction (`add_to_counter`).
pub(in crate::store::embedded) fn cache_version(
    conn: &Connection,
    user: &str,
    merged: bool,
) -> StoreResult<Option<CacheVersion>> {
    let cache: Option<i64> = conn
        .prepare_cached(CACHE_VERSION)?
        .query_row([user], |row| row.get(0))
        .optional()?;
    let Some(cache) = cache else {
        return Ok(None);
    };
    let mut digest = 0;
    if merged {
        let mut hasher = DefaultHasher::new();
        let mut followees = conn.prepare_cached(MERGED_DIGEST)?;
        let mut rows = followees.query([user])?;
        while let Some(row) = rows.next()? {
            let followee = row.get_ref(0)?.as_bytes().map_err(rusqlite::Error::from)?;
            (followee, row.get::<_, i64>(1)?, row.get::<_, i64>(2)?).hash(&mut hasher);
        }
        digest = hasher.finish();
    }
    Ok(Some(CacheVersion {
        cache: cache as u64,
        merged: digest,
    }))
}

/// A ready cache's version, while no removal or rename is pending.
const CACHE_VERSION: &str = "SELECT version FROM caches WHERE user = ?1 AND ready
       AND NOT EXISTS (SELECT 1 FROM pending_deletes)
       AND NOT EXISTS (SELECT 1 FROM pending_unfollows WHERE user = ?1)
       AND NOT EXISTS (SELECT 1 FROM pending_renames)";

/// What a `hybrid` page merges, as `content::MERGED_FOLLOWEES` reads it (the flagged
/// edges from the same covering index), with each followee's versions.
const MERGED_DIGEST: &str = "SELECT f.followee, IFNULL(u.version, 0), IFNULL(u.counter_version, 0)
     FROM follows AS f INDEXED BY follows_flagged LEFT JOIN users AS u ON u.id = f.followee
     WHERE f.follower = ?1 AND f.merged";
