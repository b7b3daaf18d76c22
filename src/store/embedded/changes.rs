//! The change feed on SQLite: the `changes` table, written in the same transaction as
//! the change it records, read in `pos` order.

use async_trait::async_trait;
use rusqlite::{OptionalExtension, params};

use super::EmbeddedStore;
use crate::domain::{Change, ChangeOp, ChangePosition};
use crate::store::{ChangeFeed, StoreError, StoreResult};

/// Moves the feed's sequence to `to`, so the next change is `to + 1` (a restore, on the
/// copy it installs, see `restore/ids.rs`). Never moves it back. Positions in between
/// are no change: readers go from the last change before them to the first after.
pub(super) fn advance_sequence(conn: &rusqlite::Connection, to: i64) -> rusqlite::Result<()> {
    let moved = conn
        .prepare_cached("UPDATE sqlite_sequence SET seq = max(seq, ?1) WHERE name = 'changes'")?
        .execute([to])?;
    if moved == 0 {
        conn.prepare_cached("INSERT INTO sqlite_sequence (name, seq) VALUES ('changes', ?1)")?
            .execute([to])?;
    }
    Ok(())
}

#[async_trait]
impl ChangeFeed for EmbeddedStore {
    async fn changes(
        &self,
        after: Option<&ChangePosition>,
        limit: usize,
    ) -> StoreResult<Vec<Change>> {
        let after = match after {
            None => None,
            Some(position) => Some(
                position
                    .0
                    .parse::<i64>()
                    .map_err(|_| StoreError::InvalidPosition(position.0.clone()))?,
            ),
        };
        self.read(move |conn| {
            let trimmed: i64 = conn
                .prepare_cached("SELECT value FROM meta WHERE key = 'changes_trimmed_through'")?
                .query_row([], |row| row.get(0))
                .optional()?
                .unwrap_or(0);
            // No position reads from the oldest change kept: once anything was trimmed,
            // that is not the whole history (a forced trim passes a lease that never
            // committed, see `trim_changes`), so it is lost, not a start.
            if after.unwrap_or(0) < trimmed {
                return Err(StoreError::HistoryLost(after.unwrap_or(0).to_string()));
            }
            let mut stmt = conn.prepare_cached(
                "SELECT pos, coll, op, key, doc, ts FROM changes WHERE pos > ?1 ORDER BY pos LIMIT ?2",
            )?;
            let rows = stmt.query_map(params![after.unwrap_or(0), limit as i64], |row| {
                let pos: i64 = row.get(0)?;
                let op: String = row.get(2)?;
                let doc: Option<String> = row.get(4)?;
                Ok((
                    pos,
                    row.get::<_, String>(1)?,
                    op,
                    row.get::<_, String>(3)?,
                    doc,
                    row.get::<_, i64>(5)?,
                ))
            })?;
            let mut changes = Vec::new();
            for row in rows {
                let (pos, collection, op, key, doc, at_ms) = row?;
                let op = ChangeOp::parse(&op).ok_or_else(|| {
                    StoreError::Backend(anyhow::anyhow!("change {pos} has unknown op {op:?}"))
                })?;
                let document = doc
                    .map(|d| serde_json::from_str(&d))
                    .transpose()
                    .map_err(|e| StoreError::Backend(e.into()))?;
                changes.push(Change {
                    position: ChangePosition(pos.to_string()),
                    seq: pos as u64,
                    at_ms,
                    collection,
                    op,
                    key,
                    document,
                });
            }
            Ok(changes)
        })
        .await
    }

    async fn head(&self) -> StoreResult<Option<ChangePosition>> {
        self.read(|conn| {
            // A feed trimmed empty still has a head: the last change trimmed (a rebuild
            // goes on from it, rather than from no position, which is history lost).
            let newest: Option<i64> = conn
                .prepare_cached(
                    "SELECT coalesce((SELECT max(pos) FROM changes),
                                     (SELECT value FROM meta WHERE key = 'changes_trimmed_through'))",
                )?
                .query_row([], |row| row.get(0))?;
            Ok(newest.map(|pos| ChangePosition(pos.to_string())))
        })
        .await
    }

    /// A count over a range of the integer primary key.
    async fn backlog(&self, after: &ChangePosition, cap: u64) -> StoreResult<Option<u64>> {
        let after: i64 = after
            .0
            .parse()
            .map_err(|_| StoreError::InvalidPosition(after.0.clone()))?;
        self.read(move |conn| {
            let waiting: i64 = conn
                .prepare_cached(
                    "SELECT count(*) FROM (SELECT 1 FROM changes WHERE pos > ?1 LIMIT ?2)",
                )?
                .query_row(params![after, cap as i64], |row| row.get(0))?;
            Ok(Some(waiting.max(0) as u64))
        })
        .await
    }

    async fn trim_changes(&self, older_than_ms: i64, hard_cutoff_ms: i64) -> StoreResult<u64> {
        self.write(move |tx| {
            let newest_before = |cutoff: i64| -> rusqlite::Result<i64> {
                let pos: Option<i64> = tx
                    .prepare_cached("SELECT max(pos) FROM changes WHERE ts < ?1")?
                    .query_row([cutoff], |row| row.get(0))?;
                Ok(pos.unwrap_or(0))
            };
            // The slowest worker's committed position; a lease that never committed
            // needs the whole feed (it bootstraps from the oldest change).
            let leases: Vec<(String, Option<String>)> = tx
                .prepare_cached("SELECT name, position FROM leases")?
                .query_map([], |row| Ok((row.get(0)?, row.get(1)?)))?
                .collect::<rusqlite::Result<_>>()?;
            let needed = |position: &Option<String>| {
                position.as_deref().and_then(|p| p.parse::<i64>().ok()).unwrap_or(0)
            };
            let slowest = leases.iter().map(|(_, p)| needed(p)).min().unwrap_or(i64::MAX);
            let by_age = newest_before(older_than_ms)?.min(slowest);
            let forced = newest_before(hard_cutoff_ms)?;
            let through = by_age.max(forced);
            if through <= 0 {
                return Ok(0);
            }
            for (name, position) in &leases {
                if needed(position) < through {
                    tracing::error!(
                        worker = %name,
                        position = needed(position),
                        through,
                        "trimming the change feed past a lagging worker's position (change_feed.max_retention); it will rebuild"
                    );
                    metrics::counter!("socialite_change_feed_forced_trims_total", "worker" => name.clone())
                        .increment(1);
                }
            }
            let dropped = tx
                .prepare_cached("DELETE FROM changes WHERE pos <= ?1")?
                .execute([through])?;
            tx.prepare_cached(
                "INSERT INTO meta (key, value) VALUES ('changes_trimmed_through', ?1)
                 ON CONFLICT (key) DO UPDATE SET value = max(value, excluded.value)",
            )?
            .execute([through])?;
            Ok(dropped as u64)
        })
        .await
    }
}
