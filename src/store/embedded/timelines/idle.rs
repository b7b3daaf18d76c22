//! Idle caches (see `TimelineStore::drop_idle_caches`): `caches.last_read` records when
//! the owner last read their cache, coarsely (`TimelineStore::cache_touch`), and the
//! timelines worker drops caches unread for `feed.cache_idle`.
//!
//! The sweep picks and deletes in one write transaction, and the embedded store's
//! writes are serialised, so no read stamp, build or push lands between the check of
//! a cache's age and its deletion: a stamp that commits first keeps the cache, one
//! that commits after finds none and writes nothing, and the next read builds it anew
//! (`cache_start` gives it a fresh random version, so no kept page of the old cache is
//! served for it). A cache being built (`ready` false) is never dropped: its build's
//! fill would otherwise find a newer build's cache and make it ready too early.
//! Retraction marks (`pending_deletes`, `pending_unfollows`) are left to the removals
//! that clear them; they concern entries, and a dropped cache has none.

use rusqlite::params;

use super::super::EmbeddedStore;
use crate::store::StoreResult;

pub(in crate::store::embedded) const SCHEMA: &str =
    "CREATE INDEX IF NOT EXISTS caches_by_last_read ON caches (last_read) WHERE ready;";

impl EmbeddedStore {
    /// `TimelineStore::cache_touch`.
    pub(super) async fn touch_cache(&self, user: &str, now_ms: i64) -> StoreResult<()> {
        let user = user.to_owned();
        self.write(move |tx| {
            tx.prepare_cached(
                "UPDATE caches SET last_read = ?2 WHERE user = ?1 AND last_read < ?2",
            )?
            .execute(params![user, now_ms])?;
            Ok(())
        })
        .await
    }

    /// `TimelineStore::drop_idle_caches`: one transaction, so at most `limit` caches of
    /// entries are deleted at a time, and the single writer is not held for long.
    pub(super) async fn drop_idle(&self, cutoff_ms: i64, limit: usize) -> StoreResult<u64> {
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        self.write(move |tx| {
            let users: Vec<String> = tx
                .prepare_cached(
                    "SELECT user FROM caches INDEXED BY caches_by_last_read
                      WHERE ready AND last_read < ?1 ORDER BY last_read LIMIT ?2",
                )?
                .query_map(params![cutoff_ms, limit], |row| row.get(0))?
                .collect::<rusqlite::Result<_>>()?;
            let mut entries = tx.prepare_cached("DELETE FROM cache_entries WHERE user = ?1")?;
            let mut caches = tx.prepare_cached(
                "DELETE FROM caches WHERE user = ?1 AND ready AND last_read < ?2",
            )?;
            let mut dropped = 0;
            for user in &users {
                if caches.execute(params![user, cutoff_ms])? > 0 {
                    entries.execute([user])?;
                    dropped += 1;
                }
            }
            tx.prepare_cached("UPDATE meta SET value = value - ?1 WHERE key = 'cache_count'")?
                .execute([dropped])?;
            Ok(dropped as u64)
        })
        .await
    }
}
