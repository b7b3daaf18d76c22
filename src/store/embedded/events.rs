//! The event log on SQLite: the `events` table, keyed by id, trimmed to
//! `events.max_count` in the append's own transaction. `meta.events_trimmed_through`
//! records the newest id ever trimmed, so a reader below it gets `PositionLost`
//! exactly; `meta.events_count` keeps the row count, so a trim never counts the table.
//! `event_gaps` holds the ids a restore retired (see `restore/ids.rs`): ids the replaced
//! store may have issued past the copy's newest, which no event of this log will ever
//! carry, so a reader positioned at one gets `PositionLost` too.

use std::time::Duration;

use async_trait::async_trait;
use futures::stream::{self, BoxStream, StreamExt};
use rusqlite::{Connection, OptionalExtension, params};

use super::EmbeddedStore;
use super::leases::check_fence;
use crate::domain::{Event, EventId, EventType, Fence, PostId};
use crate::store::events::{EventStore, LogBounds};
use crate::store::{StoreError, StoreResult};

pub(super) const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS events (
    id      INTEGER PRIMARY KEY,
    type    TEXT NOT NULL,
    at      INTEGER NOT NULL,
    post    BLOB,
    payload TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS events_by_post ON events (post) WHERE post IS NOT NULL;
-- Ids after `after` up to `through` were retired by a restore: never ids of this log.
CREATE TABLE IF NOT EXISTS event_gaps (
    after   INTEGER PRIMARY KEY,
    through INTEGER NOT NULL
);
";

/// Events read per query while tailing.
const TAIL_READ: usize = 512;

fn meta(conn: &Connection, key: &str) -> rusqlite::Result<i64> {
    Ok(conn
        .prepare_cached("SELECT value FROM meta WHERE key = ?1")?
        .query_row([key], |row| row.get::<_, i64>(0))
        .optional()?
        .unwrap_or(0))
}

fn set_meta(conn: &Connection, key: &str, value: i64) -> rusqlite::Result<()> {
    conn.prepare_cached(
        "INSERT INTO meta (key, value) VALUES (?1, ?2)
         ON CONFLICT (key) DO UPDATE SET value = excluded.value",
    )?
    .execute(params![key, value])?;
    Ok(())
}

fn event_from_row(row: &rusqlite::Row<'_>) -> rusqlite::Result<(i64, String, i64, String)> {
    Ok((row.get(0)?, row.get(1)?, row.get(2)?, row.get(3)?))
}

fn decode((id, kind, at_ms, payload): (i64, String, i64, String)) -> StoreResult<Event> {
    let kind = EventType::parse(&kind).ok_or_else(|| {
        StoreError::Backend(anyhow::anyhow!("event {id} has unknown type {kind:?}"))
    })?;
    Ok(Event {
        id: EventId(id as u64),
        kind,
        at_ms,
        payload: serde_json::from_str(&payload).map_err(|e| StoreError::Backend(e.into()))?,
    })
}

fn post_of(event: &Event) -> Option<Vec<u8>> {
    if event.kind != EventType::PostCreated {
        return None;
    }
    let id: PostId = event.field("post")?.parse().ok()?;
    Some(id.bytes().to_vec())
}

/// Records that ids after `after` through `through` are retired (a restore, on the copy
/// it installs): no event will carry one, and a reader positioned at one is lost.
pub(super) fn retire_ids(conn: &Connection, after: i64, through: i64) -> rusqlite::Result<()> {
    conn.prepare_cached("INSERT INTO event_gaps (after, through) VALUES (?1, ?2)")?
        .execute(params![after, through])?;
    Ok(())
}

/// The read behind `events_after`, in one read transaction.
fn read_after(conn: &Connection, after: Option<EventId>, limit: usize) -> StoreResult<Vec<Event>> {
    let trimmed = meta(conn, "events_trimmed_through")?;
    // Ids are stored as i64: nothing follows a position above them all.
    let Ok(from) = after.map_or(Ok(0), |a| i64::try_from(a.0)) else {
        return Ok(Vec::new());
    };
    if after.is_some() && from < trimmed {
        return Err(StoreError::PositionLost(format!(
            "events after {from} were trimmed (through {trimmed})"
        )));
    }
    if after.is_some() {
        let retired: Option<(i64, i64)> = conn
            .prepare_cached(
                "SELECT after, through FROM event_gaps WHERE after < ?1 AND through >= ?1 LIMIT 1",
            )?
            .query_row([from], |row| Ok((row.get(0)?, row.get(1)?)))
            .optional()?;
        if let Some((gap_after, through)) = retired {
            return Err(StoreError::PositionLost(format!(
                "event {from} was issued before a restore: ids after {gap_after} through \
                 {through} were retired"
            )));
        }
    }
    let mut stmt = conn.prepare_cached(
        "SELECT id, type, at, payload FROM events WHERE id > ?1 ORDER BY id LIMIT ?2",
    )?;
    let rows = stmt.query_map(params![from, limit as i64], event_from_row)?;
    rows.map(|row| decode(row?)).collect()
}

#[async_trait]
impl EventStore for EmbeddedStore {
    async fn prepare_log(&self, _bounds: LogBounds) -> StoreResult<()> {
        Ok(())
    }

    async fn append(
        &self,
        fence: &Fence,
        events: &[Event],
        bounds: LogBounds,
    ) -> StoreResult<usize> {
        let (fence, events) = (fence.clone(), events.to_vec());
        let added = self
            .write(move |tx| {
                check_fence(tx, &fence.lease, &fence.holder, fence.version)?;
                let mut added = 0_i64;
                // A replay of events already trimmed must not bring them back.
                let trimmed = meta(tx, "events_trimmed_through")?;
                for event in events.iter().filter(|e| e.id.0 as i64 > trimmed) {
                    let payload = serde_json::to_string(&event.payload)
                        .map_err(|e| StoreError::Backend(e.into()))?;
                    added += tx
                        .prepare_cached(
                            "INSERT OR IGNORE INTO events (id, type, at, post, payload)
                             VALUES (?1, ?2, ?3, ?4, ?5)",
                        )?
                        .execute(params![
                            event.id.0 as i64,
                            event.kind.as_str(),
                            event.at_ms,
                            post_of(event),
                            payload
                        ])? as i64;
                }
                let count = meta(tx, "events_count")? + added;
                let excess = count - bounds.max_count as i64;
                let mut kept = count;
                if excess > 0 {
                    let through: i64 = tx
                        .prepare_cached("SELECT id FROM events ORDER BY id LIMIT 1 OFFSET ?1")?
                        .query_row([excess - 1], |row| row.get(0))?;
                    let dropped = tx
                        .prepare_cached("DELETE FROM events WHERE id <= ?1")?
                        .execute([through])?;
                    kept -= dropped as i64;
                    let before = meta(tx, "events_trimmed_through")?;
                    set_meta(tx, "events_trimmed_through", before.max(through))?;
                }
                set_meta(tx, "events_count", kept)?;
                Ok(added as usize)
            })
            .await?;
        if added > 0 {
            self.inner.events_appended.notify_waiters();
        }
        Ok(added)
    }

    async fn mark_lost(&self, fence: &Fence) -> StoreResult<()> {
        let fence = fence.clone();
        self.write(move |tx| {
            check_fence(tx, &fence.lease, &fence.holder, fence.version)?;
            let newest: i64 = tx
                .prepare_cached("SELECT seq FROM sqlite_sequence WHERE name = 'changes'")?
                .query_row([], |row| row.get(0))
                .optional()?
                .unwrap_or(0);
            let before = meta(tx, "events_trimmed_through")?;
            set_meta(tx, "events_trimmed_through", before.max(newest))?;
            Ok(())
        })
        .await
    }

    async fn events_after(&self, after: Option<EventId>, limit: usize) -> StoreResult<Vec<Event>> {
        self.read(move |conn| read_after(conn, after, limit)).await
    }

    async fn newest_event(&self) -> StoreResult<Option<EventId>> {
        self.read(|conn| {
            let id: Option<i64> = conn
                .prepare_cached("SELECT max(id) FROM events")?
                .query_row([], |row| row.get(0))?;
            Ok(id.map(|id| EventId(id as u64)))
        })
        .await
    }

    async fn post_created_event(&self, post: PostId) -> StoreResult<Option<Event>> {
        self.read(move |conn| {
            conn.prepare_cached(
                "SELECT id, type, at, payload FROM events WHERE post = ?1 ORDER BY id LIMIT 1",
            )?
            .query_row([&post.bytes()[..]], event_from_row)
            .optional()?
            .map(decode)
            .transpose()
        })
        .await
    }

    fn tail(
        &self,
        after: Option<EventId>,
        poll: Duration,
    ) -> BoxStream<'static, StoreResult<Vec<Event>>> {
        let store = EmbeddedStore {
            inner: self.inner.clone(),
        };
        // (position, ended): the stream ends after yielding an error.
        stream::unfold((after, false), move |(position, ended)| {
            let store = EmbeddedStore {
                inner: store.inner.clone(),
            };
            async move {
                if ended {
                    return None;
                }
                loop {
                    // Registered before the read, so an append between the read and the
                    // wait is not missed.
                    let appended = store.inner.events_appended.notified();
                    tokio::pin!(appended);
                    appended.as_mut().enable();
                    match store.events_after(position, TAIL_READ).await {
                        Ok(batch) if batch.is_empty() => {
                            tokio::select! {
                                _ = appended => {}
                                _ = tokio::time::sleep(poll) => {}
                            }
                        }
                        Ok(batch) => {
                            let last = batch.last().map(|e| e.id);
                            return Some((Ok(batch), (last, false)));
                        }
                        Err(error) => return Some((Err(error), (position, true))),
                    }
                }
            }
        })
        .boxed()
    }
}
