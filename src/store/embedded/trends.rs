//! Hashtag counts on SQLite: `tags (tag, total, w)` and `tag_hours (tag, hour, n)`.
//! A batch is one transaction that checks the fence, skips what the watermark (the
//! `aggregates` lease row's position) or a tag's `w` already covers, writes one row per
//! touched tag and per touched hour, and moves the watermark: exact across crashes.

use std::collections::BTreeMap;

use async_trait::async_trait;
use rusqlite::{Connection, OptionalExtension, params};

use super::EmbeddedStore;
use super::leases::check_fence;
use crate::domain::{EventId, Fence, PostId, hashtags};
use crate::store::StoreResult;
use crate::store::trends::{HOUR_MS, TagChange, TagCounts, TrendStore};

pub(super) const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS tags (
    tag   TEXT PRIMARY KEY,
    total INTEGER NOT NULL,
    w     INTEGER NOT NULL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS tag_hours (
    tag  TEXT NOT NULL,
    hour INTEGER NOT NULL,
    n    INTEGER NOT NULL,
    PRIMARY KEY (tag, hour)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS tag_hours_by_hour ON tag_hours (hour, tag, n);
";

/// One tag's net change in a batch.
#[derive(Default)]
struct Net {
    total: i64,
    hours: BTreeMap<i64, i64>,
}

fn watermark(conn: &Connection, lease: &str) -> StoreResult<i64> {
    let position: Option<String> = conn
        .prepare_cached("SELECT position FROM leases WHERE name = ?1")?
        .query_row([lease], |row| row.get(0))
        .optional()?
        .flatten();
    Ok(position.and_then(|p| p.parse().ok()).unwrap_or(0))
}

fn set_watermark(conn: &Connection, lease: &str, through: i64) -> StoreResult<()> {
    conn.prepare_cached("UPDATE leases SET position = ?2 WHERE name = ?1")?
        .execute(params![lease, through.to_string()])?;
    Ok(())
}

fn write_net(conn: &Connection, tag: &str, net: &Net, w: i64, from_hour: i64) -> StoreResult<()> {
    conn.prepare_cached(
        "INSERT INTO tags (tag, total, w) VALUES (?1, max(?2, 0), ?3)
         ON CONFLICT (tag) DO UPDATE SET total = max(total + ?2, 0), w = ?3",
    )?
    .execute(params![tag, net.total, w])?;
    for (hour, n) in net
        .hours
        .iter()
        .filter(|(h, n)| **h >= from_hour && **n != 0)
    {
        conn.prepare_cached(
            "INSERT INTO tag_hours (tag, hour, n) VALUES (?1, ?2, ?3)
             ON CONFLICT (tag, hour) DO UPDATE SET n = n + ?3",
        )?
        .execute(params![tag, hour, n])?;
        conn.prepare_cached("DELETE FROM tag_hours WHERE tag = ?1 AND hour = ?2 AND n <= 0")?
            .execute(params![tag, hour])?;
    }
    Ok(())
}

/// Replaces every tag's counts with a count from the posts, each tag's `w` set to
/// `newest`; returns how many tags there are. Shared by the rebuild and the bulk loader.
pub(super) fn recount_tags(tx: &Connection, newest: i64, from_hour: i64) -> StoreResult<u64> {
    let mut nets: BTreeMap<String, Net> = BTreeMap::new();
    {
        let mut stmt = tx.prepare_cached("SELECT id, text FROM posts")?;
        let mut rows = stmt.query([])?;
        while let Some(row) = rows.next()? {
            let id = super::post_id_at(row, 0)?;
            let text = super::text_at(row, 1)?;
            let hour = PostId::timestamp_ms(&id).div_euclid(HOUR_MS);
            for tag in hashtags(text) {
                let net = nets.entry(tag).or_default();
                net.total += 1;
                *net.hours.entry(hour).or_default() += 1;
            }
        }
    }
    tx.execute_batch("DELETE FROM tags; DELETE FROM tag_hours;")?;
    for (tag, net) in &nets {
        write_net(tx, tag, net, newest, from_hour)?;
    }
    Ok(nets.len() as u64)
}

#[async_trait]
impl TrendStore for EmbeddedStore {
    async fn apply_tags(
        &self,
        fence: &Fence,
        through: EventId,
        changes: &[TagChange],
        from_hour: i64,
    ) -> StoreResult<()> {
        let (fence, changes) = (fence.clone(), changes.to_vec());
        self.write(move |tx| {
            check_fence(tx, &fence.lease, &fence.holder, fence.version)?;
            let floor = watermark(tx, &fence.lease)?;
            let mut nets: BTreeMap<String, (i64, Net)> = BTreeMap::new();
            for change in changes.iter().filter(|c| c.event.0 as i64 > floor) {
                if !nets.contains_key(&change.tag) {
                    let w: i64 = tx
                        .prepare_cached("SELECT w FROM tags WHERE tag = ?1")?
                        .query_row([&change.tag], |row| row.get(0))
                        .optional()?
                        .unwrap_or(0);
                    nets.insert(change.tag.clone(), (w, Net::default()));
                }
                let (w, net) = nets.get_mut(&change.tag).expect("inserted above");
                if change.event.0 as i64 > *w {
                    net.total += change.delta;
                    *net.hours.entry(change.hour).or_default() += change.delta;
                }
            }
            let through = (through.0 as i64).max(floor);
            for (tag, (_, net)) in &nets {
                write_net(tx, tag, net, through, from_hour)?;
            }
            tx.prepare_cached("DELETE FROM tag_hours WHERE hour < ?1")?
                .execute([from_hour])?;
            set_watermark(tx, &fence.lease, through)
        })
        .await
    }

    async fn rebuild_tags(&self, fence: &Fence, from_hour: i64) -> StoreResult<EventId> {
        let fence = fence.clone();
        self.write(move |tx| {
            check_fence(tx, &fence.lease, &fence.holder, fence.version)?;
            // The write transaction is the snapshot: no change commits while it runs.
            let newest: i64 = tx
                .prepare_cached("SELECT seq FROM sqlite_sequence WHERE name = 'changes'")?
                .query_row([], |row| row.get(0))
                .optional()?
                .unwrap_or(0);
            recount_tags(tx, newest, from_hour)?;
            set_watermark(tx, &fence.lease, newest)?;
            Ok(EventId(newest as u64))
        })
        .await
    }

    async fn tag_counts(&self, tag: &str, from_hour: i64) -> StoreResult<TagCounts> {
        let tag = tag.to_owned();
        self.read(move |conn| {
            let total: i64 = conn
                .prepare_cached("SELECT total FROM tags WHERE tag = ?1")?
                .query_row([&tag], |row| row.get(0))
                .optional()?
                .unwrap_or(0);
            let hours = conn
                .prepare_cached(
                    "SELECT hour, n FROM tag_hours WHERE tag = ?1 AND hour >= ?2 AND n > 0 ORDER BY hour",
                )?
                .query_map(params![tag, from_hour], |row| {
                    Ok((row.get::<_, i64>(0)?, row.get::<_, i64>(1)? as u64))
                })?
                .collect::<rusqlite::Result<_>>()?;
            Ok(TagCounts {
                tag,
                total: total.max(0) as u64,
                hours,
            })
        })
        .await
    }

    async fn top_tags(&self, from_hour: i64, limit: usize) -> StoreResult<Vec<(String, u64)>> {
        self.read(move |conn| {
            let rows = conn
                .prepare_cached(
                    "SELECT tag, sum(n) AS posts FROM tag_hours WHERE hour >= ?1
                     GROUP BY tag HAVING posts > 0 ORDER BY posts DESC, tag LIMIT ?2",
                )?
                .query_map(params![from_hour, limit as i64], |row| {
                    Ok((row.get::<_, String>(0)?, row.get::<_, i64>(1)? as u64))
                })?
                .collect::<rusqlite::Result<_>>()?;
            Ok(rows)
        })
        .await
    }
}
