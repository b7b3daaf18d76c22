//! Cache versions (see `TimelineStore::cache_version`): what lets a rendered page be
//! served again while it stands (`service::pages`).
//!
//! A `hybrid` page also merges the posts, reposts and names of the reader's flagged
//! followees.
//! Which followees those are is covered by the reader's cache version: every graph
//! transaction that adds or removes an edge of the reader's (any edge, since which
//! replies a page shows depends on whom the reader follows, see
//! `domain::reply_visible`), or flags them, moves it ([`bump_version`],
//! [`enter_merged`]). What each of them serves is covered by
//! their merge version, a row of `merge_versions` that exists for every author ever
//! marked merged, moved by every insert and delete of their posts, every insert and
//! removal of their reposts (an unrepost, or the original's delete) and every rename
//! ([`bump_merge_version`]); the row keyed by the empty id, which no user has, is the
//! clock, moved with every one of them. So a kept merged page is checked with one
//! statement while no merged author changed anything, and otherwise by reading the
//! merge versions of its own followees alone.
//!
//! A version also names the span of the cache's rows its page shows ([`CacheRows`]),
//! and stands only while no rename of an author of those rows is pending: their stamps
//! are then their profiles' names (see `names::PENDING_RENAMES`), so the page is a
//! function of the rows alone. A rename of anyone else leaves it standing. The span's
//! rows are looked at only while some rename is pending: the statement walks the
//! pending renames first, and each one's seek is the span's range of the owner's rows.
//!
//! A page read on below the cache also stands on the posts below it and their authors'
//! names, read from the posts and the profiles: the below clock (the `below_clock` row
//! of `meta`), moved by every delete of a post, every removal of a repost (an unrepost,
//! or an original's delete) and every rename ([`bump_below_clock`]), is read before
//! those rows, and such a page stands while the cache's version and the clock both do.
//! Which authors the rows are by is the cache version's (edges, blocks and mutes move
//! it); inserts need no clock, their ids being above every page's. A page that serves
//! from repost entries stands on the reposts and originals it checks them against
//! (`feed::reposts`) the same way: under the clock, read before them.

use std::sync::Arc;

use rusqlite::{Connection, OptionalExtension, Transaction};

use super::super::EmbeddedStore;
use crate::store::StoreResult;
use crate::store::embedded::post_before;
use crate::store::timelines::{CacheRows, CacheVersion, MergedVersion};

impl EmbeddedStore {
    /// `TimelineStore::cache_version`.
    pub(super) async fn read_cache_version(
        &self,
        user: &str,
        rows: CacheRows,
        merged: bool,
    ) -> StoreResult<Option<CacheVersion>> {
        let read = |conn: &Connection| cache_version(conn, user, rows, merged);
        // Without `merged`, one statement: run as its own read transaction, 6-8% of a
        // kept page's CPU saved (`loadtest/read_cost.sh`, 2026-11-25). With it, two, in
        // one transaction.
        match merged {
            false => self.read_statement_inline(read).await,
            true => self.read_inline(read).await,
        }
    }

    /// `TimelineStore::below_clock`: one statement.
    pub(super) async fn read_below_clock(&self) -> StoreResult<Option<u64>> {
        let clock: i64 = self
            .read_statement_inline(|conn| {
                Ok(conn
                    .prepare_cached(BELOW_CLOCK)?
                    .query_row([], |row| row.get(0))?)
            })
            .await?;
        Ok(Some(clock as u64))
    }

    /// `TimelineStore::cache_stands`.
    pub(super) async fn read_cache_stands(
        &self,
        user: &str,
        kept: &CacheVersion,
    ) -> StoreResult<Option<CacheVersion>> {
        let stands = self
            .read_statement_inline(|conn| cache_stands(conn, user, kept))
            .await?;
        let (Stands::IfFolloweesStand { clock }, Some(merged)) = (stands, &kept.merged) else {
            return Ok(matches!(stands, Stands::Yes).then(|| kept.clone()));
        };
        // The cache and the flagged edges stood when the clock was read, and the
        // followees' merge versions stand after it: the page stood then, under `clock`.
        let stand = self
            .read_inline(|conn| followees_stand(conn, merged))
            .await?;
        Ok(stand.then(|| CacheVersion {
            cache: kept.cache,
            rows: kept.rows,
            merged: Some(MergedVersion {
                clock,
                followees: merged.followees.clone(),
            }),
            below: kept.below,
        }))
    }
}

pub(in crate::store::embedded) const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS merge_versions (
    author  TEXT PRIMARY KEY,
    version INTEGER NOT NULL
) WITHOUT ROWID;";

/// Gives every author marked merged before the table existed a row, and starts the
/// clock: a migration step to run once.
pub(in crate::store::embedded) const MIGRATE: &str = "
INSERT OR IGNORE INTO merge_versions (author, version)
SELECT id, random() FROM users WHERE merged;
INSERT OR IGNORE INTO merge_versions (author, version) VALUES ('', random());";

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

/// For `author` marked merged and every edge to them flagged, in this transaction:
/// gives them a merge version and moves the cache version of each of their followers.
pub(in crate::store::embedded) fn enter_merged(
    tx: &Transaction<'_>,
    author: &str,
) -> StoreResult<()> {
    tx.prepare_cached(
        "INSERT OR IGNORE INTO merge_versions (author, version) VALUES (?1, random())",
    )?
    .execute([author])?;
    bump_merge_version(tx, author)?;
    bump_versions_of(
        tx,
        "SELECT follower FROM follows WHERE followee = ?1",
        [author],
    )
}

/// After a bulk load marked authors merged and flagged every edge to them (with every
/// cache dropped): a new merge version for every author marked merged, and the clock.
pub(in crate::store::embedded) fn all_merged(tx: &Transaction<'_>) -> StoreResult<()> {
    tx.execute_batch(
        "INSERT OR REPLACE INTO merge_versions (author, version)
         SELECT id, random() FROM users WHERE merged;
         UPDATE merge_versions SET version = random() WHERE author = '';",
    )?;
    Ok(())
}

/// Moves `author`'s merge version, and the clock, when they were ever marked merged: in
/// every transaction that inserts or deletes a post or a repost of theirs or renames
/// them.
pub(in crate::store::embedded) fn bump_merge_version(
    tx: &Transaction<'_>,
    author: &str,
) -> StoreResult<()> {
    tx.prepare_cached(
        "UPDATE merge_versions SET version = random()
          WHERE author IN (?1, '') AND EXISTS (SELECT 1 FROM merge_versions WHERE author = ?1)",
    )?
    .execute([author])?;
    Ok(())
}

/// Moves the below clock (see `TimelineStore::below_clock`): in every transaction that
/// deletes a post, removes a repost or renames a user, since each changes what a page
/// read below a cache shows, or which of a page's repost entries it serves. Inserts
/// need not: a new post's or repost's id is above every page's rows.
pub(in crate::store::embedded) fn bump_below_clock(tx: &Transaction<'_>) -> StoreResult<()> {
    tx.prepare_cached(
        "INSERT INTO meta (key, value) VALUES ('below_clock', random())
         ON CONFLICT (key) DO UPDATE SET value = excluded.value",
    )?
    .execute([])?;
    Ok(())
}

/// `user`'s cache version for a page of `rows`, and with `merged` what a `hybrid` page
/// merges beside the cache. Without `merged`, one statement, which may run as a read
/// transaction of its own; with it, call it inside one.
fn cache_version(
    conn: &Connection,
    user: &str,
    rows: CacheRows,
    merged: bool,
) -> StoreResult<Option<CacheVersion>> {
    if !merged {
        let cache: Option<i64> = conn
            .prepare_cached(CACHE_VERSION)?
            .query_row(params(user, &rows), |row| row.get(0))
            .optional()?;
        return Ok(cache.map(|cache| CacheVersion {
            cache: cache as u64,
            rows,
            merged: None,
            below: None,
        }));
    }
    let Some((cache, clock)) = cache_and_clock(conn, user, &rows)? else {
        return Ok(None);
    };
    let mut followees = conn.prepare_cached(MERGED_FOLLOWEES)?;
    let followees = followees
        .query_map([user], |row| {
            Ok((row.get(0)?, row.get::<_, i64>(1)? as u64))
        })?
        .collect::<rusqlite::Result<Arc<[_]>>>()?;
    Ok(Some(CacheVersion {
        cache,
        rows,
        merged: Some(MergedVersion { clock, followees }),
        below: None,
    }))
}

/// Whether a page kept under `kept` stands (see `TimelineStore::cache_stands`): the
/// cache's version and, for a merged page, the clock, in one statement, which may run
/// as a read transaction of its own.
fn cache_stands(conn: &Connection, user: &str, kept: &CacheVersion) -> StoreResult<Stands> {
    if let Some(below) = kept.below {
        // A page read on below the cache, or one with reposts (never a merged one):
        // the cache's version and the below clock, in one statement.
        let found: Option<(i64, i64)> = conn
            .prepare_cached(CACHE_AND_BELOW)?
            .query_row(params(user, &kept.rows), |row| {
                Ok((row.get(0)?, row.get(1)?))
            })
            .optional()?;
        let now = found.map(|(cache, clock)| (cache as u64, clock as u64));
        let stands = kept.merged.is_none() && now == Some((kept.cache, below));
        return Ok(if stands { Stands::Yes } else { Stands::No });
    }
    let Some(merged) = &kept.merged else {
        let cache = cache_version(conn, user, kept.rows, false)?.map(|v| v.cache);
        return Ok(match cache == Some(kept.cache) {
            true => Stands::Yes,
            false => Stands::No,
        });
    };
    Ok(match cache_and_clock(conn, user, &kept.rows)? {
        Some((cache, clock)) if cache == kept.cache && clock == merged.clock => Stands::Yes,
        Some((cache, clock)) if cache == kept.cache => Stands::IfFolloweesStand { clock },
        _ => Stands::No,
    })
}

/// What [`cache_stands`] found.
#[derive(Clone, Copy)]
enum Stands {
    Yes,
    No,
    /// The cache stands, but the clock moved to `clock`: the page stands, under it, if
    /// its followees' merge versions are as kept ([`followees_stand`]).
    IfFolloweesStand {
        clock: u64,
    },
}

/// Whether every followee in `merged` still has the merge version it was kept with.
fn followees_stand(conn: &Connection, merged: &MergedVersion) -> StoreResult<bool> {
    let mut version = conn.prepare_cached(MERGE_VERSION)?;
    for (followee, kept) in merged.followees.iter() {
        let now: Option<i64> = version.query_row([followee], |row| row.get(0)).optional()?;
        if now.map(|v| v as u64) != Some(*kept) {
            return Ok(false);
        }
    }
    Ok(true)
}

fn cache_and_clock(
    conn: &Connection,
    user: &str,
    rows: &CacheRows,
) -> StoreResult<Option<(u64, u64)>> {
    Ok(conn
        .prepare_cached(CACHE_AND_CLOCK)?
        .query_row(params(user, rows), |row| {
            Ok((row.get::<_, i64>(0)? as u64, row.get::<_, i64>(1)? as u64))
        })
        .optional()?)
}

/// The statements' parameters: the owner, and the span of rows as keys, `?2 <= post_id
/// < ?3`.
fn params<'a>(user: &'a str, rows: &CacheRows) -> (&'a str, [u8; 12], Vec<u8>) {
    (user, rows.from.bytes(), post_before(rows.below))
}

/// The owner's cache, ready, while no removal is pending and no rename of an author of
/// the rows `?2 <= post_id < ?3`: what a version is read from. `CROSS JOIN` keeps the
/// pending renames the outer loop, so that with none pending no row of the cache is
/// read.
macro_rules! standing_cache {
    () => {
        "FROM caches WHERE user = ?1 AND ready
           AND NOT EXISTS (SELECT 1 FROM pending_deletes)
           AND NOT EXISTS (SELECT 1 FROM pending_unfollows WHERE user = ?1)
           AND NOT EXISTS (
               SELECT 1 FROM pending_renames AS r CROSS JOIN cache_entries AS e
                WHERE e.user = ?1 AND e.post_id >= ?2 AND e.post_id < ?3
                  AND e.author = r.user)"
    };
}

/// A ready cache's version, while no removal is pending nor a rename of the span's
/// authors.
pub(in crate::store::embedded) const CACHE_VERSION: &str =
    concat!("SELECT version ", standing_cache!());

/// [`CACHE_VERSION`], with the merge clock.
pub(in crate::store::embedded) const CACHE_AND_CLOCK: &str = concat!(
    "SELECT version, IFNULL((SELECT version FROM merge_versions WHERE author = ''), 0) ",
    standing_cache!()
);

/// The below clock; 0 until the first delete or rename moves it.
const BELOW_CLOCK: &str = "SELECT IFNULL((SELECT value FROM meta WHERE key = 'below_clock'), 0)";

/// [`CACHE_VERSION`], with the below clock.
pub(in crate::store::embedded) const CACHE_AND_BELOW: &str = concat!(
    "SELECT version, IFNULL((SELECT value FROM meta WHERE key = 'below_clock'), 0) ",
    standing_cache!()
);

/// What a `hybrid` page merges, as `content::MERGED_FOLLOWEES` reads it (the flagged
/// edges from the same covering index), with each followee's merge version.
const MERGED_FOLLOWEES: &str = "SELECT f.followee, IFNULL(m.version, 0)
     FROM follows AS f INDEXED BY follows_flagged
     LEFT JOIN merge_versions AS m ON m.author = f.followee
     WHERE f.follower = ?1 AND f.merged";

const MERGE_VERSION: &str = "SELECT version FROM merge_versions WHERE author = ?1";
