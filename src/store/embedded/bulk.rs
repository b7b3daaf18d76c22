//! The bulk port on SQLite: each batch is one transaction through one prepared
//! statement per table, `ON CONFLICT DO NOTHING` so a re-run adds nothing, and no
//! change-feed row. While the load's mark (`meta.bulk_load_started`) is set, the writer
//! runs with `synchronous=OFF` and a 1 GiB page cache; `finish_load` restores both and
//! checkpoints the WAL into the database file. (A crash with `synchronous=OFF` can lose
//! the last commits, or with the OS, corrupt the file; the mark makes the re-run that an
//! interrupted load needs anyway, and the file is a fresh or a copied one in practice.)
//!
//! Derived data is built in `bulk/`: the activity logs and the bucket timelines user
//! chunk by user chunk in key order, the event log newest first, and counters, delivery
//! markers and tag counts with one statement or one scan each.

pub(super) mod activity;
mod derive;
mod events;
mod feed;
pub(super) mod notifications;
mod serving;
mod sources;
mod timelines;

use async_trait::async_trait;
use rusqlite::{Connection, OptionalExtension, params};

pub(super) use activity::build_logs;
pub(super) use serving::Gate;
use serving::held;

use super::lock::{LockError, StoreLock};
use super::{EmbeddedStore, Synchronous, run_blocking};
use crate::domain::ChangePosition;
use crate::store::bulk::{
    BulkStore, DeriveSettings, Derived, Exclusion, FollowRow, LikeRow, PostRow, RelationRow,
    RepostRow, Rows, StepReport, TokenRow, UserRow,
};
use crate::store::leases::initial_version;
use crate::store::{StoreError, StoreResult};

const MARK: &str = "bulk_load_started";

/// The writer's page cache while loading (the normal one is 64 MiB).
const LOAD_CACHE_KIB: i64 = 1 << 20;

/// A read of one chunk of users: `{chunk}` in `sql` becomes the chunk `(?1, ?2]` of
/// `column`'s key range, `?2` being `NULL` for the last chunk. Never
/// `(?2 IS NULL OR column <= ?2)`: SQLite's planner cannot end an index range on that,
/// so each chunk would read on to the end of the table (`plans.rs` checks they seek).
pub(super) struct ChunkRead {
    pub column: &'static str,
    pub sql: &'static str,
}

impl ChunkRead {
    pub fn sql(&self, through: Option<&str>) -> String {
        let column = self.column;
        let range = match through {
            Some(_) => format!("{column} > ?1 AND {column} <= ?2"),
            None => format!("{column} > ?1 AND ?2 IS NULL"),
        };
        self.sql.replace("{chunk}", &range)
    }
}

/// The ids of a chunk's users.
pub(super) const CHUNK_USERS: ChunkRead = ChunkRead {
    column: "id",
    sql: "SELECT id FROM users WHERE {chunk} ORDER BY id",
};

/// The ids of the users in `(after, through]`, ascending.
fn chunk_users(tx: &Connection, after: &str, through: Option<&str>) -> StoreResult<Vec<String>> {
    let users = tx
        .prepare_cached(&CHUNK_USERS.sql(through))?
        .query_map(params![after, through], |row| row.get(0))?
        .collect::<rusqlite::Result<_>>()?;
    Ok(users)
}

/// The newest change-feed position handed out: the `changes` sequence, which the event
/// log's bulk-built ids advance too, or the newest row.
pub(super) fn allocated_head(conn: &Connection) -> rusqlite::Result<i64> {
    let seq: Option<i64> = conn
        .prepare_cached("SELECT seq FROM sqlite_sequence WHERE name = 'changes'")?
        .query_row([], |row| row.get(0))
        .optional()?;
    let newest: Option<i64> = conn
        .prepare_cached("SELECT max(pos) FROM changes")?
        .query_row([], |row| row.get(0))?;
    Ok(seq.unwrap_or(0).max(newest.unwrap_or(0)))
}

impl EmbeddedStore {
    /// Runs `f` on the write connection outside any transaction (for pragmas).
    async fn with_writer<T, F>(&self, f: F) -> StoreResult<T>
    where
        T: Send + 'static,
        F: FnOnce(&Connection) -> StoreResult<T> + Send + 'static,
    {
        let conn = self.inner.writer.clone().lock_owned().await;
        run_blocking(move || f(&conn)).await
    }
}

#[async_trait]
impl BulkStore for EmbeddedStore {
    /// Takes the serve lock shared, then checks the mark: a load holds the lock for its
    /// whole run, and one that ended early left its mark.
    async fn enter_serving(&self, _holder: &str) -> StoreResult<Result<(), Exclusion>> {
        let busy = !self.share_serving_lock().await?;
        if busy {
            let since_ms = self.load_in_progress().await?;
            return Ok(Err(Exclusion::Loading { since_ms }));
        }
        match self.load_in_progress().await {
            Ok(None) => Ok(Ok(())),
            Ok(Some(at)) => {
                self.leave_serving().await?;
                Ok(Err(Exclusion::Loading { since_ms: Some(at) }))
            }
            Err(error) => {
                self.leave_serving().await?;
                Err(error)
            }
        }
    }

    async fn leave_serving(&self) -> StoreResult<()> {
        self.unshare_serving_lock();
        Ok(())
    }

    /// Takes the serve lock exclusively (kept until `finish_load`), then sets the mark.
    async fn begin_load(&self, at_ms: i64) -> StoreResult<Result<(), Exclusion>> {
        {
            let mut loading = held(&self.inner.gate.loading);
            if loading.is_none() {
                match StoreLock::loading(&self.inner.path) {
                    Ok(lock) => *loading = Some(lock),
                    Err(LockError::Busy(_)) => {
                        return Ok(Err(Exclusion::Serving {
                            holder: None,
                            expires_at_ms: None,
                        }));
                    }
                    Err(LockError::Io(error)) => return Err(StoreError::Backend(error)),
                }
            }
        }
        self.write(move |tx| {
            tx.prepare_cached("INSERT OR IGNORE INTO meta (key, value) VALUES (?1, ?2)")?
                .execute(params![MARK, at_ms])?;
            Ok(())
        })
        .await?;
        self.with_writer(|conn| {
            conn.execute_batch(&format!(
                "PRAGMA synchronous=OFF; PRAGMA cache_size=-{LOAD_CACHE_KIB};"
            ))?;
            Ok(())
        })
        .await?;
        Ok(Ok(()))
    }

    async fn load_in_progress(&self) -> StoreResult<Option<i64>> {
        self.read(|conn| {
            Ok(conn
                .prepare_cached("SELECT value FROM meta WHERE key = ?1")?
                .query_row([MARK], |row| row.get(0))
                .optional()?)
        })
        .await
    }

    async fn insert_users(&self, rows: Rows<UserRow>) -> StoreResult<u64> {
        self.write(move |tx| {
            let mut insert = tx.prepare_cached(
                "INSERT INTO users (id, display_name, created_at) VALUES (?1, ?2, ?3)
                 ON CONFLICT DO NOTHING",
            )?;
            let mut added = 0;
            for row in rows.rows() {
                let (id, name) = (rows.str(row.id), rows.str(row.display_name));
                let inserted = insert.execute(params![id, name, row.created_at_ms])?;
                if inserted > 0 {
                    // The name's words, in the transaction that writes the name.
                    super::name_words::write_words(tx, id, name)?;
                }
                added += inserted;
            }
            Ok(added as u64)
        })
        .await
    }

    /// Edges are marked backfilled: the derived timelines hold every post.
    async fn insert_follows(&self, rows: Rows<FollowRow>) -> StoreResult<u64> {
        self.write(move |tx| {
            let mut insert = tx.prepare_cached(
                "INSERT INTO follows (follower, followee, created_at, backfilled)
                 VALUES (?1, ?2, ?3, 1) ON CONFLICT DO NOTHING",
            )?;
            let mut added = 0;
            for row in rows.rows() {
                added += insert.execute(params![
                    rows.str(row.follower),
                    rows.str(row.followee),
                    row.created_at_ms
                ])?;
            }
            Ok(added as u64)
        })
        .await
    }

    /// Also moves `meta.last_post_id` up to the newest id, so the ids the API hands out
    /// afterwards stay above every loaded one.
    async fn insert_posts(&self, rows: Rows<PostRow>) -> StoreResult<u64> {
        self.write(move |tx| {
            let mut insert = tx.prepare_cached(
                "INSERT INTO posts (id, author, text, reply_to) VALUES (?1, ?2, ?3, ?4)
                 ON CONFLICT DO NOTHING",
            )?;
            let mut added = 0;
            for row in rows.rows() {
                let inserted = insert.execute(params![
                    &row.id.bytes()[..],
                    rows.str(row.author),
                    rows.str(row.text),
                    row.reply_to.map(|p| p.bytes().to_vec()),
                ])?;
                // The tag index, as a post's insert writes it.
                if inserted > 0 {
                    super::content::tags::index_post(tx, row.id, rows.str(row.text))?;
                }
                added += inserted;
            }
            if let Some(newest) = rows.rows().iter().map(|r| r.id).max() {
                tx.prepare_cached(
                    "INSERT INTO meta (key, value) VALUES ('last_post_id', ?1)
                     ON CONFLICT (key) DO UPDATE SET value = max(value, excluded.value)",
                )?
                .execute([&newest.bytes()[..]])?;
            }
            Ok(added as u64)
        })
        .await
    }

    async fn insert_likes(&self, rows: Rows<LikeRow>) -> StoreResult<u64> {
        self.write(move |tx| {
            let mut insert = tx.prepare_cached(
                "INSERT INTO likes (user, post, created_at) VALUES (?1, ?2, ?3)
                 ON CONFLICT DO NOTHING",
            )?;
            let mut added = 0;
            for row in rows.rows() {
                added += insert.execute(params![
                    rows.str(row.user),
                    &row.post.bytes()[..],
                    row.created_at_ms
                ])?;
            }
            Ok(added as u64)
        })
        .await
    }

    async fn insert_tokens(&self, rows: Rows<TokenRow>) -> StoreResult<u64> {
        self.write(move |tx| {
            let mut insert = tx.prepare_cached(
                "INSERT INTO api_tokens (hash, user, token_id, created_at) VALUES (?1, ?2, ?3, ?4)
                 ON CONFLICT DO NOTHING",
            )?;
            let mut added = 0;
            for row in rows.rows() {
                added += insert.execute(params![
                    &row.hash[..],
                    rows.str(row.user),
                    rows.str(row.token_id),
                    row.created_at_ms
                ])?;
            }
            Ok(added as u64)
        })
        .await
    }

    async fn insert_relations(&self, rows: Rows<RelationRow>) -> StoreResult<u64> {
        self.write(move |tx| sources::insert_relations(tx, &rows))
            .await
    }

    async fn insert_reposts(&self, rows: Rows<RepostRow>) -> StoreResult<u64> {
        self.write(move |tx| sources::insert_reposts(tx, &rows))
            .await
    }

    async fn derive_all(
        &self,
        settings: &DeriveSettings,
        step: StepReport,
    ) -> StoreResult<Derived> {
        derive::derive_all(self, settings, step).await
    }

    async fn derive_timelines(
        &self,
        feed: &crate::store::bulk::TimelineLayout,
        step: StepReport,
    ) -> StoreResult<Derived> {
        derive::derive_timelines(self, feed, step).await
    }

    async fn feed_record(&self) -> StoreResult<Option<String>> {
        feed::record(self).await
    }

    async fn record_feed(&self, record: &str) -> StoreResult<()> {
        feed::set_record(self, record.to_owned()).await
    }

    /// One transaction: every named lease released at a new version, at the head.
    async fn set_positions_to_head(
        &self,
        change_workers: &[&str],
        event_workers: &[&str],
    ) -> StoreResult<()> {
        let names: Vec<String> = change_workers
            .iter()
            .chain(event_workers)
            .map(|n| (*n).to_owned())
            .collect();
        let version = initial_version(crate::domain::now_ms()) as i64;
        self.write(move |tx| {
            // Event ids are change-feed positions on this store, so one head serves both.
            let head = ChangePosition(allocated_head(tx)?.to_string());
            let mut set = tx.prepare_cached(
                "INSERT INTO leases (name, holder, version, expires_at, position)
                 VALUES (?1, NULL, ?2, 0, ?3)
                 ON CONFLICT (name) DO UPDATE SET
                     holder = NULL, expires_at = 0, version = version + 1,
                     position = excluded.position",
            )?;
            for name in &names {
                set.execute(params![name, version, head.0])?;
            }
            Ok(())
        })
        .await
    }

    async fn finish_load(&self) -> StoreResult<()> {
        let sync = match self.inner.synchronous {
            Synchronous::Full => "FULL",
            Synchronous::Normal => "NORMAL",
        };
        self.with_writer(move |conn| {
            conn.execute_batch(&format!(
                "PRAGMA synchronous={sync}; PRAGMA cache_size=-65536;"
            ))?;
            // Copies the load out of the WAL now, rather than in the first requests'
            // commits, and leaves the WAL file empty.
            conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))?;
            Ok(())
        })
        .await?;
        self.write(|tx| {
            tx.prepare_cached("DELETE FROM meta WHERE key = ?1")?
                .execute([MARK])?;
            Ok(())
        })
        .await?;
        *held(&self.inner.gate.loading) = None;
        Ok(())
    }
}
