//! What serving a cache and renaming authors need on SQLite: the cache as its owner may
//! be served it, in one read transaction, and name stamps replaced only by newer ones.

use std::collections::HashMap;
use std::sync::LazyLock;

use rusqlite::{Connection, OptionalExtension, Transaction, params};

use super::{entry_from_row, kind_code};
use crate::domain::{NameStamp, PostId, TimelineEntry, TimelineKind};
use crate::store::StoreResult;
use crate::store::embedded::post_before;
use crate::store::timelines::CacheView;

/// A page of a cache's entries, newest first, by [`cache_current`]'s variant: bit 0
/// checks each entry against the posts and the follow graph (a retraction is pending),
/// bit 1 serves an embedded name stamp older than the author's profile as the profile's
/// name (one primary-key seek per entry; a rename is pending).
pub(in crate::store::embedded) static CACHE_PAGE: LazyLock<[String; 4]> = LazyLock::new(|| {
    let checked = "AND (e.author = ?1 OR EXISTS (
                        SELECT 1 FROM follows WHERE follower = ?1 AND followee = e.author))
                   AND (EXISTS (SELECT 1 FROM posts WHERE id = e.post_id)
                        OR EXISTS (SELECT 1 FROM reposts WHERE id = e.post_id))";
    let stale = "e.name IS NOT NULL AND u.version > IFNULL(e.name_v, -1)";
    let stamped = "e.name, e.name_v, e.reply_to_author, e.repost_post, e.repost_author FROM cache_entries AS e";
    let restamped = format!(
        "CASE WHEN {stale} THEN u.display_name ELSE e.name END,
         CASE WHEN {stale} THEN u.version ELSE e.name_v END, e.reply_to_author,
         e.repost_post, e.repost_author
         FROM cache_entries AS e LEFT JOIN users AS u ON u.id = e.author"
    );
    [
        (stamped, ""),
        (stamped, checked),
        (&*restamped, ""),
        (&*restamped, checked),
    ]
    .map(|(names, checks)| {
        format!(
            "SELECT e.post_id, e.author, e.text, {names}
                 WHERE e.user = ?1 AND e.post_id < ?2 {checks}
                 ORDER BY e.post_id DESC LIMIT ?3"
        )
    })
});

/// One read transaction: the cache's state, its entries whose post exists and whose
/// author is the owner or followed by the owner, and its oldest entry.
///
/// Only while a retraction that may concern the owner is pending (see [`retractions`])
/// is each entry checked against the posts and the follow graph (two index seeks per
/// entry); otherwise every entry the cache holds is one the owner may be served.
/// Likewise, only while a rename is pending (see [`record_rename`]) is each entry's
/// name checked against its author's profile (one seek per entry, 15-20% of a warm
/// read's CPU); otherwise every stamp is the profile's. The entries carry the cache's
/// version unless a retraction is pending or a rename of one of their authors: a
/// stamp of an author with no rename pending is the profile's, so with renames of
/// others pending the entries are still a function of the cache's rows.
///
/// [`retractions`]: super::retractions
pub(super) fn cache_current(
    conn: &Connection,
    user: &str,
    before: Option<PostId>,
    limit: usize,
) -> StoreResult<Option<CacheView>> {
    let head: Option<(bool, i64, bool, bool, bool, i64, i64)> = conn
        .prepare_cached(
            "SELECT ready, started_at, complete,
                    EXISTS (SELECT 1 FROM pending_deletes)
                    OR EXISTS (SELECT 1 FROM pending_unfollows WHERE user = ?1),
                    EXISTS (SELECT 1 FROM pending_renames),
                    version, last_read
             FROM caches WHERE user = ?1",
        )?
        .query_row([user], |row| {
            Ok((
                row.get(0)?,
                row.get(1)?,
                row.get(2)?,
                row.get(3)?,
                row.get(4)?,
                row.get(5)?,
                row.get(6)?,
            ))
        })
        .optional()?;
    let Some((ready, started_at_ms, complete, retracting, renaming, version, read_ms)) = head
    else {
        return Ok(None);
    };
    let variant = usize::from(retracting) | usize::from(renaming) << 1;
    let entries: Vec<TimelineEntry> = conn
        .prepare_cached(&CACHE_PAGE[variant])?
        .query_map(
            params![user, post_before(before), limit as i64],
            entry_from_row,
        )?
        .collect::<rusqlite::Result<_>>()?;
    // The page is then a function of the cache's rows, and every write of those moves
    // the version.
    let version = (ready && !retracting && !(renaming && any_pending(conn, &entries)?))
        .then_some(version as u64);
    // A full page needs no read past the cache: its last entry stands in for the
    // oldest, and the seek is saved.
    if entries.len() >= limit && limit > 0 {
        return Ok(Some(CacheView {
            ready,
            started_at_ms,
            complete,
            oldest: entries.last().map(|e| e.id),
            entries,
            version,
            read_ms,
        }));
    }
    let oldest = conn
        .prepare_cached(
            "SELECT post_id FROM cache_entries WHERE user = ?1 ORDER BY post_id LIMIT 1",
        )?
        .query_row([user], |row| crate::store::embedded::post_id_at(row, 0))
        .optional()?;
    Ok(Some(CacheView {
        ready,
        started_at_ms,
        complete,
        entries,
        oldest,
        version,
        read_ms,
    }))
}

/// Whether a rename of an author of `entries` is pending: one seek per entry.
fn any_pending(conn: &Connection, entries: &[TimelineEntry]) -> StoreResult<bool> {
    let mut pending =
        conn.prepare_cached("SELECT EXISTS (SELECT 1 FROM pending_renames WHERE user = ?1)")?;
    for entry in entries {
        if pending.query_row([&entry.author], |row| row.get(0))? {
            return Ok(true);
        }
    }
    Ok(false)
}

/// Stamps `author`'s embedded entries in `users`' timelines where their stamp is older
/// or missing; each user's entries are one primary-key range.
pub(super) fn rename_author(
    tx: &Transaction<'_>,
    kind: TimelineKind,
    users: &[String],
    author: &str,
    name: &NameStamp,
) -> StoreResult<()> {
    let version = name.version as i64;
    let stale = "author = ?2 AND text IS NOT NULL AND (name_v IS NULL OR name_v < ?4)";
    match kind {
        TimelineKind::Buckets(bucket) => {
            let mut update = tx.prepare_cached(&format!(
                "UPDATE bucket_entries SET name = ?3, name_v = ?4
                 WHERE kind = ?5 AND user = ?1 AND {stale}"
            ))?;
            for user in users {
                update.execute(params![
                    user,
                    author,
                    name.display_name,
                    version,
                    kind_code(bucket)
                ])?;
            }
        }
        TimelineKind::Cache => {
            let mut update = tx.prepare_cached(&format!(
                "UPDATE cache_entries SET name = ?3, name_v = ?4 WHERE user = ?1 AND {stale}"
            ))?;
            for user in users {
                if update.execute(params![user, author, name.display_name, version])? > 0 {
                    super::versions::bump_version(tx, user)?;
                }
            }
        }
    }
    Ok(())
}

pub(super) fn renamed(conn: &Connection, authors: &[String]) -> StoreResult<Vec<(String, u64)>> {
    let mut select = conn.prepare_cached("SELECT version FROM renames WHERE user = ?1")?;
    let mut found = Vec::new();
    for author in authors {
        let version: Option<i64> = select.query_row([author], |row| row.get(0)).optional()?;
        if let Some(version) = version {
            found.push((author.clone(), version.max(0) as u64));
        }
    }
    Ok(found)
}

/// Records that `author`'s name at `version` reached every timeline, which ends a
/// pending rename up to that version (a newer one stays pending).
pub(super) fn mark_renamed(tx: &Transaction<'_>, author: &str, version: u64) -> StoreResult<()> {
    tx.prepare_cached(
        "INSERT INTO renames (user, version) VALUES (?1, ?2)
         ON CONFLICT (user) DO UPDATE SET version = max(version, excluded.version)",
    )?
    .execute(params![author, version as i64])?;
    tx.prepare_cached("DELETE FROM pending_renames WHERE user = ?1 AND version <= ?2")?
        .execute(params![author, version as i64])?;
    Ok(())
}

/// Pending renames: while a row names an author, cache pages read that author's name
/// from the profile (see [`cache_current`]), and no page of the cache rows showing
/// them is kept (`versions`). The rename writes its row in its own
/// transaction, and only `mark_renamed` takes it away, once the timelines worker has
/// stamped every timeline; entries that land later are stamped at landing
/// ([`current_stamps`]). So no stamp older than its author's profile is ever served.
pub(in crate::store::embedded) const PENDING_RENAMES: &str = "
CREATE TABLE IF NOT EXISTS pending_renames (
    user    TEXT PRIMARY KEY,
    version INTEGER NOT NULL
) WITHOUT ROWID;";

/// Marks `user`'s rename, just written in `tx`, pending.
pub(in crate::store::embedded) fn record_rename(
    tx: &Transaction<'_>,
    user: &str,
) -> StoreResult<()> {
    tx.prepare_cached(
        "INSERT INTO pending_renames (user, version) SELECT id, version FROM users WHERE id = ?1
         ON CONFLICT (user) DO UPDATE SET version = max(version, excluded.version)",
    )?
    .execute([user])?;
    Ok(())
}

/// Every pending rename, as `(author, version)`.
pub(super) fn pending_renames(conn: &Connection) -> StoreResult<Vec<(String, u64)>> {
    Ok(conn
        .prepare_cached("SELECT user, version FROM pending_renames ORDER BY user")?
        .query_map([], |row| {
            Ok((row.get(0)?, row.get::<_, i64>(1)?.max(0) as u64))
        })?
        .collect::<rusqlite::Result<_>>()?)
}

/// Replaces each stamp in `entries` older than its author's profile with the profile's
/// name, in the transaction that lands them: a writer that read a name before a rename
/// whose propagation has since ended would otherwise land a stale stamp that no pending
/// rename covers. One seek per author.
pub(in crate::store::embedded) fn current_stamps(
    tx: &Transaction<'_>,
    entries: &mut [TimelineEntry],
) -> StoreResult<()> {
    let mut profile = tx.prepare_cached("SELECT display_name, version FROM users WHERE id = ?1")?;
    let mut profiles: HashMap<String, Option<NameStamp>> = HashMap::new();
    for entry in entries.iter_mut() {
        let Some(stamp) = &entry.name else { continue };
        if !profiles.contains_key(&entry.author) {
            let found = profile
                .query_row([&entry.author], |row| {
                    Ok(NameStamp {
                        display_name: row.get(0)?,
                        version: row.get::<_, i64>(1)?.max(0) as u64,
                    })
                })
                .optional()?;
            profiles.insert(entry.author.clone(), found);
        }
        if let Some(Some(current)) = profiles.get(&entry.author)
            && current.version > stamp.version
        {
            entry.name = Some(current.clone());
        }
    }
    Ok(())
}
