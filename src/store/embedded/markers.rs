//! Reading positions on SQLite: `markers(user, timeline, last_read_id, version,
//! updated_at)`, keyed by user and timeline. A write is one `INSERT .. ON CONFLICT DO
//! UPDATE` that moves the version in the row it writes, returning what it wrote.

use async_trait::async_trait;
use rusqlite::params;

use super::EmbeddedStore;
use crate::domain::markers::{Marker, MarkerTimeline};
use crate::store::{MarkerStore, StoreError, StoreResult};

/// The table, created at open (`schema::migrate`).
pub(super) const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS markers (
    user         TEXT NOT NULL,
    timeline     TEXT NOT NULL,
    last_read_id TEXT NOT NULL,
    version      INTEGER NOT NULL,
    updated_at   INTEGER NOT NULL,
    PRIMARY KEY (user, timeline)
) WITHOUT ROWID;
";

fn timeline_of(name: &str) -> StoreResult<MarkerTimeline> {
    MarkerTimeline::parse(name).ok_or_else(|| {
        StoreError::Backend(anyhow::anyhow!("a marker of an unknown timeline {name:?}"))
    })
}

#[async_trait]
impl MarkerStore for EmbeddedStore {
    async fn markers(&self, user: &str, timelines: &[MarkerTimeline]) -> StoreResult<Vec<Marker>> {
        let user = user.to_owned();
        let timelines = timelines.to_vec();
        self.read_inline(move |conn| {
            let mut stmt = conn.prepare_cached(
                "SELECT timeline, last_read_id, version, updated_at FROM markers
                  WHERE user = ?1 ORDER BY timeline",
            )?;
            let rows = stmt.query_map([&user], |row| {
                Ok((
                    row.get::<_, String>(0)?,
                    row.get::<_, String>(1)?,
                    row.get::<_, i64>(2)?,
                    row.get::<_, i64>(3)?,
                ))
            })?;
            let mut markers = Vec::new();
            for row in rows {
                let (timeline, last_read_id, version, updated_at_ms) = row?;
                let timeline = timeline_of(&timeline)?;
                if timelines.contains(&timeline) {
                    markers.push(Marker {
                        timeline,
                        last_read_id,
                        version: version.max(0) as u64,
                        updated_at_ms,
                    });
                }
            }
            markers.sort_by_key(|m| m.timeline);
            Ok(markers)
        })
        .await
    }

    async fn set_marker(
        &self,
        user: &str,
        timeline: MarkerTimeline,
        last_read_id: &str,
        now_ms: i64,
    ) -> StoreResult<Marker> {
        let (user, last_read_id) = (user.to_owned(), last_read_id.to_owned());
        self.write(move |tx| {
            let version: i64 = tx
                .prepare_cached(
                    "INSERT INTO markers (user, timeline, last_read_id, version, updated_at)
                     VALUES (?1, ?2, ?3, 1, ?4)
                     ON CONFLICT (user, timeline) DO UPDATE
                        SET last_read_id = excluded.last_read_id,
                            version = markers.version + 1,
                            updated_at = excluded.updated_at
                     RETURNING version",
                )?
                .query_row(
                    params![user, timeline.as_str(), last_read_id, now_ms],
                    |row| row.get(0),
                )?;
            Ok(Marker {
                timeline,
                last_read_id,
                version: version.max(0) as u64,
                updated_at_ms: now_ms,
            })
        })
        .await
    }
}
