//! Blocks and mutes on SQLite: `blocks(user, other, created_ms)` keyed by the blocker
//! and indexed by the blocked user too, and `mutes(user, other, created_ms,
//! notifications, until_ms)` keyed by the muter. A block removes the follows between
//! the two in its own transaction (each as the unfollow it is, see
//! `graph::remove_edge`), and a follow checks for a block in its own
//! ([`blocked_between`]), so neither can slip between the other's check and write.
//! Every change moves the cache version of the readers whose pages it changes.

use async_trait::async_trait;
use rusqlite::{OptionalExtension, Transaction, params};

use super::timelines::versions;
use super::{EmbeddedStore, graph, user_exists};
use crate::domain::relations::{Hidden, MuteSettings, Relation};
use crate::store::relations::{Blocked, RelationCursor};
use crate::store::{RelationStore, StoreError, StoreResult};

/// The tables, created by format 6's migration (`schema::relations_schema`).
pub(super) const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS blocks (
    user       TEXT NOT NULL,
    other      TEXT NOT NULL,
    created_ms INTEGER NOT NULL,
    PRIMARY KEY (user, other)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS blocks_by_other ON blocks (other, user);
CREATE INDEX IF NOT EXISTS blocks_by_time ON blocks (user, created_ms, other);

CREATE TABLE IF NOT EXISTS mutes (
    user          TEXT NOT NULL,
    other         TEXT NOT NULL,
    created_ms    INTEGER NOT NULL,
    notifications INTEGER NOT NULL,
    until_ms      INTEGER,
    PRIMARY KEY (user, other)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS mutes_by_time ON mutes (user, created_ms, other);
";

/// Whether a block stands between `a` and `b`, either way, as `tx` sees it.
pub(super) fn blocked_between(tx: &Transaction<'_>, a: &str, b: &str) -> StoreResult<bool> {
    Ok(tx
        .prepare_cached(
            "SELECT 1 FROM blocks WHERE (user = ?1 AND other = ?2) OR (user = ?2 AND other = ?1)",
        )?
        .exists([a, b])?)
}

fn known(tx: &Transaction<'_>, ids: [&str; 2]) -> StoreResult<()> {
    for id in ids {
        if !user_exists(tx, id)? {
            return Err(StoreError::NotFound(format!("user {id}")));
        }
    }
    Ok(())
}

fn relation(row: &rusqlite::Row<'_>, mute: bool) -> rusqlite::Result<Relation> {
    Ok(Relation {
        other: row.get(0)?,
        created_ms: row.get(1)?,
        mute: match mute {
            true => Some(MuteSettings {
                notifications: row.get(2)?,
                until_ms: row.get(3)?,
            }),
            false => None,
        },
    })
}

/// A user's blocks or mutes from a cursor `(?2, ?3)`, at most `?4`: newest first below
/// it, or oldest first above it (the page just before it), on `blocks_by_time` and
/// `mutes_by_time`; mutes standing at `?5` only.
pub(super) const BLOCKS_OLDER: &str = "SELECT other, created_ms FROM blocks
     WHERE user = ?1 AND (created_ms, other) < (?2, ?3)
     ORDER BY created_ms DESC, other DESC LIMIT ?4";
pub(super) const BLOCKS_NEWER: &str = "SELECT other, created_ms FROM blocks
     WHERE user = ?1 AND (created_ms, other) > (?2, ?3)
     ORDER BY created_ms, other LIMIT ?4";
pub(super) const MUTES_OLDER: &str = "SELECT other, created_ms, notifications, until_ms
     FROM mutes WHERE user = ?1 AND (created_ms, other) < (?2, ?3)
       AND (until_ms IS NULL OR until_ms > ?5)
     ORDER BY created_ms DESC, other DESC LIMIT ?4";
pub(super) const MUTES_NEWER: &str = "SELECT other, created_ms, notifications, until_ms
     FROM mutes WHERE user = ?1 AND (created_ms, other) > (?2, ?3)
       AND (until_ms IS NULL OR until_ms > ?5)
     ORDER BY created_ms, other LIMIT ?4";

impl EmbeddedStore {
    /// One page of `sql` (one of the four above); `now_ms` for mutes only.
    async fn relation_page(
        &self,
        sql: &'static str,
        user: &str,
        (ms, other): RelationCursor,
        now_ms: Option<i64>,
        limit: usize,
    ) -> StoreResult<Vec<Relation>> {
        let user = user.to_owned();
        self.read(move |conn| {
            let mut stmt = conn.prepare_cached(sql)?;
            let limit = limit as i64;
            let rows = match now_ms {
                Some(now) => stmt
                    .query_map(params![user, ms, other, limit, now], |r| relation(r, true))?
                    .collect::<rusqlite::Result<_>>()?,
                None => stmt
                    .query_map(params![user, ms, other, limit], |r| relation(r, false))?
                    .collect::<rusqlite::Result<_>>()?,
            };
            Ok(rows)
        })
        .await
    }
}

#[async_trait]
impl RelationStore for EmbeddedStore {
    async fn block(&self, user: &str, other: &str, now_ms: i64) -> StoreResult<Blocked> {
        let (user, other) = (user.to_owned(), other.to_owned());
        self.write(move |tx| {
            known(tx, [&user, &other])?;
            let added = tx
                .prepare_cached(
                    "INSERT OR IGNORE INTO blocks (user, other, created_ms) VALUES (?1, ?2, ?3)",
                )?
                .execute(params![user, other, now_ms])?
                > 0;
            let mut removed = Vec::new();
            for (from, to) in [(&user, &other), (&other, &user)] {
                if graph::remove_edge(tx, from, to)? {
                    removed.push((from.clone(), to.clone()));
                }
            }
            if added {
                versions::bump_version(tx, &user)?;
                versions::bump_version(tx, &other)?;
            }
            Ok(Blocked { added, removed })
        })
        .await
    }

    async fn unblock(&self, user: &str, other: &str) -> StoreResult<bool> {
        let (user, other) = (user.to_owned(), other.to_owned());
        self.write(move |tx| {
            let removed = tx
                .prepare_cached("DELETE FROM blocks WHERE user = ?1 AND other = ?2")?
                .execute([&user, &other])?
                > 0;
            if removed {
                versions::bump_version(tx, &user)?;
                versions::bump_version(tx, &other)?;
            }
            Ok(removed)
        })
        .await
    }

    async fn blocks(&self, user: &str, other: &str) -> StoreResult<bool> {
        let (user, other) = (user.to_owned(), other.to_owned());
        self.read_statement_inline(move |conn| {
            Ok(conn
                .prepare_cached("SELECT 1 FROM blocks WHERE user = ?1 AND other = ?2")?
                .exists([&user, &other])?)
        })
        .await
    }

    async fn blocks_among(&self, pairs: &[(String, String)]) -> StoreResult<Vec<(String, String)>> {
        let pairs = pairs.to_vec();
        self.read(move |conn| {
            let mut lookup =
                conn.prepare_cached("SELECT 1 FROM blocks WHERE user = ?1 AND other = ?2")?;
            let mut standing = Vec::new();
            for (user, other) in pairs {
                if lookup.exists([&user, &other])? {
                    standing.push((user, other));
                }
            }
            Ok(standing)
        })
        .await
    }

    async fn mute(
        &self,
        user: &str,
        other: &str,
        settings: MuteSettings,
        now_ms: i64,
    ) -> StoreResult<bool> {
        let (user, other) = (user.to_owned(), other.to_owned());
        self.write(move |tx| {
            known(tx, [&user, &other])?;
            let existed = tx
                .prepare_cached("SELECT 1 FROM mutes WHERE user = ?1 AND other = ?2")?
                .query_row([&user, &other], |_| Ok(()))
                .optional()?
                .is_some();
            tx.prepare_cached(
                "INSERT INTO mutes (user, other, created_ms, notifications, until_ms)
                 VALUES (?1, ?2, ?3, ?4, ?5)
                 ON CONFLICT (user, other) DO UPDATE SET
                    created_ms = excluded.created_ms,
                    notifications = excluded.notifications,
                    until_ms = excluded.until_ms",
            )?
            .execute(params![
                user,
                other,
                now_ms,
                settings.notifications,
                settings.until_ms
            ])?;
            versions::bump_version(tx, &user)?;
            Ok(!existed)
        })
        .await
    }

    async fn unmute(&self, user: &str, other: &str) -> StoreResult<bool> {
        let (user, other) = (user.to_owned(), other.to_owned());
        self.write(move |tx| {
            let removed = tx
                .prepare_cached("DELETE FROM mutes WHERE user = ?1 AND other = ?2")?
                .execute([&user, &other])?
                > 0;
            if removed {
                versions::bump_version(tx, &user)?;
            }
            Ok(removed)
        })
        .await
    }

    async fn block_list(
        &self,
        user: &str,
        after: Option<RelationCursor>,
        limit: usize,
    ) -> StoreResult<Vec<Relation>> {
        let after = after.unwrap_or((i64::MAX, String::new()));
        self.relation_page(BLOCKS_OLDER, user, after, None, limit)
            .await
    }

    async fn mute_list(
        &self,
        user: &str,
        after: Option<RelationCursor>,
        now_ms: i64,
        limit: usize,
    ) -> StoreResult<Vec<Relation>> {
        let after = after.unwrap_or((i64::MAX, String::new()));
        self.relation_page(MUTES_OLDER, user, after, Some(now_ms), limit)
            .await
    }

    async fn block_list_newer(
        &self,
        user: &str,
        after: RelationCursor,
        limit: usize,
    ) -> StoreResult<Vec<Relation>> {
        self.relation_page(BLOCKS_NEWER, user, after, None, limit)
            .await
    }

    async fn mute_list_newer(
        &self,
        user: &str,
        after: RelationCursor,
        now_ms: i64,
        limit: usize,
    ) -> StoreResult<Vec<Relation>> {
        self.relation_page(MUTES_NEWER, user, after, Some(now_ms), limit)
            .await
    }

    /// One statement over three index seeks: the reader's blocks, the blocks of the
    /// reader (`blocks_by_other`), and the reader's standing mutes.
    async fn hidden(&self, reader: &str, now_ms: i64) -> StoreResult<Hidden> {
        let reader = reader.to_owned();
        self.read_statement_inline(move |conn| {
            let mut hidden = Hidden::default();
            let mut stmt = conn.prepare_cached(
                "SELECT other, 1, 1, NULL FROM blocks WHERE user = ?1
                 UNION ALL SELECT user, 1, 1, NULL FROM blocks WHERE other = ?1
                 UNION ALL SELECT other, 0, notifications, until_ms FROM mutes
                  WHERE user = ?1 AND (until_ms IS NULL OR until_ms > ?2)",
            )?;
            let mut rows = stmt.query(params![reader, now_ms])?;
            while let Some(row) = rows.next()? {
                let (user, block): (String, bool) = (row.get(0)?, row.get(1)?);
                match block {
                    true => hidden.add_block(user),
                    false => hidden.add_mute(
                        user,
                        MuteSettings {
                            notifications: row.get(2)?,
                            until_ms: row.get(3)?,
                        },
                    ),
                }
            }
            Ok(hidden)
        })
        .await
    }
}
