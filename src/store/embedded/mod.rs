//! The embedded adapter: one SQLite file in WAL mode.
//!
//! Writes go through a single connection, one `BEGIN IMMEDIATE` transaction per port
//! call (a push to a whole audience: one per chunk), so every invariant that MongoDB
//! keeps with single-document atomic commands (bucket sizes, counters, cache bounds)
//! holds here because writers are serialised; they take the connection in the order
//! they asked for it. Reads use a small pool of connections and run beside the writer,
//! which WAL allows. Writes run on tokio's blocking pool, and so do reads whose cost
//! grows with the data; the hot path's bounded reads run inline (see `read_inline`).
//! Only the writer's queue is awaited while held.

mod activity;
mod audit;
pub mod backup;
mod bulk;
mod changes;
mod claims;
mod content;
mod deliveries;
mod events;
mod graph;
mod idempotency;
mod leases;
mod likers;
pub mod lock;
mod markers;
mod name_words;
mod notifications;
mod oauth;
#[cfg(test)]
mod plans;
#[cfg(test)]
mod pragmas;
mod readonly;
mod relations;
mod reposts;
pub mod restore;
mod rows;
mod schema;
mod threads;
mod timelines;
mod tokens;
mod trends;
mod users;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use anyhow::Context;
use async_trait::async_trait;
use rusqlite::config::DbConfig;
use rusqlite::{Connection, OpenFlags, Transaction, TransactionBehavior};

use super::{Health, StoreError, StoreResult};
use rows::{
    POST_COLUMNS, add_to_counter, placeholders, post_after, post_before, post_from_row, post_id_at,
    record_change, rows_in, text_after, text_at, user_exists,
};

/// How hard SQLite works to make a commit durable.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Synchronous {
    /// fsync on every commit: an acknowledged write survives power loss.
    Full,
    /// fsync at checkpoints: an acknowledged write survives a process crash only.
    Normal,
}

impl From<rusqlite::Error> for StoreError {
    fn from(error: rusqlite::Error) -> Self {
        StoreError::Backend(anyhow::Error::new(error))
    }
}

/// Read transactions running at once. More than the cores can run only adds threads
/// and context switches; SQLite reads are CPU-bound once the pages are cached.
fn reader_count() -> usize {
    std::thread::available_parallelism().map_or(4, |n| n.get() * 2)
}
const STATEMENT_CACHE: usize = 256;
/// How much of the database file each connection maps by default, in MiB (beyond it,
/// pages are read into the connection's page cache).
pub const DEFAULT_MMAP_MIB: u32 = 128;
/// Keeps `IN (...)` lists well under SQLite's variable limit.
const IN_CHUNK: usize = 500;

pub struct EmbeddedStore {
    inner: Arc<Inner>,
}

struct Inner {
    path: PathBuf,
    /// How every connection opens the file: read-write, or read-only (`readonly.rs`).
    flags: OpenFlags,
    /// Held while the store is open, so that `restore` never replaces it under us.
    _lock: lock::StoreLock,
    /// The serve lock, held while serving or loading (`bulk.rs`).
    gate: bulk::Gate,
    /// The one write connection, handed out first come, first served: a request's write
    /// waits for the transactions queued before it, never for a stream of later ones.
    writer: Arc<tokio::sync::Mutex<Connection>>,
    readers: Mutex<Vec<Connection>>,
    /// One permit per pooled reader connection, so the pool never grows past it.
    read_slots: Arc<tokio::sync::Semaphore>,
    /// Woken after every append to the event log, for tailing readers in this process.
    events_appended: tokio::sync::Notify,
    /// The configured durability, which a bulk load lowers and then restores.
    synchronous: Synchronous,
    /// How much of the file each connection maps.
    mmap_bytes: u64,
}

impl EmbeddedStore {
    /// Opens (creating when needed) the database file and brings its schema up to date,
    /// mapping the default [`DEFAULT_MMAP_MIB`] per connection.
    pub fn open(path: &Path, synchronous: Synchronous) -> anyhow::Result<Self> {
        Self::open_mapped(path, synchronous, DEFAULT_MMAP_MIB)
    }

    /// As [`EmbeddedStore::open`], with each connection mapping at most `mmap_mib` MiB of
    /// the file (0: none). Refused while `socialite restore` replaces the file.
    pub fn open_mapped(
        path: &Path,
        synchronous: Synchronous,
        mmap_mib: u32,
    ) -> anyhow::Result<Self> {
        let mmap_bytes = u64::from(mmap_mib) << 20;
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent)
                .with_context(|| format!("creating {}", parent.display()))?;
        }
        let lock = lock::StoreLock::shared(path).map_err(|error| match error {
            lock::LockError::Busy(_) => anyhow::anyhow!(
                "{} is being replaced by `socialite restore`; start again once it is done",
                path.display()
            ),
            lock::LockError::Io(error) => error,
        })?;
        let flags = OpenFlags::default();
        let writer = connect(path, flags, mmap_bytes)
            .with_context(|| format!("opening {}", path.display()))?;
        let mode: String = writer.query_row("PRAGMA journal_mode=WAL", [], |row| row.get(0))?;
        anyhow::ensure!(
            mode.eq_ignore_ascii_case("wal"),
            "SQLite refused WAL mode ({mode})"
        );
        let sync = match synchronous {
            Synchronous::Full => "FULL",
            Synchronous::Normal => "NORMAL",
        };
        // A 64 MiB page cache keeps the hot B-tree pages of fan-out writes in memory.
        writer.execute_batch(&format!(
            "PRAGMA synchronous={sync}; PRAGMA foreign_keys=OFF; PRAGMA cache_size=-65536;"
        ))?;
        set_up(&writer)?;
        Ok(EmbeddedStore {
            inner: Arc::new(Inner {
                path: path.to_path_buf(),
                flags,
                _lock: lock,
                gate: bulk::Gate::default(),
                writer: Arc::new(tokio::sync::Mutex::new(writer)),
                readers: Mutex::new(Vec::new()),
                read_slots: Arc::new(tokio::sync::Semaphore::new(reader_count())),
                events_appended: tokio::sync::Notify::new(),
                synchronous,
                mmap_bytes,
            }),
        })
    }

    /// Runs `f` in one write transaction on the blocking pool, once the writer is free.
    async fn write<T, F>(&self, f: F) -> StoreResult<T>
    where
        T: Send + 'static,
        F: FnOnce(&Transaction<'_>) -> StoreResult<T> + Send + 'static,
    {
        // Awaited, not blocked on: a queued write holds no thread. Moved into the task, so
        // a cancelled caller cannot free the writer while its transaction runs.
        let mut conn = self.inner.writer.clone().lock_owned().await;
        run_blocking(move || {
            let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
            let value = f(&tx)?;
            tx.commit()?;
            Ok(value)
        })
        .await
    }

    /// Runs `f` on a pooled read connection on the blocking pool, inside one read
    /// transaction so that multi-statement reads see one snapshot. For reads whose cost
    /// grows with the data (scans, fan-in over followees, change-feed batches).
    async fn read<T, F>(&self, f: F) -> StoreResult<T>
    where
        T: Send + 'static,
        F: FnOnce(&Connection) -> StoreResult<T> + Send + 'static,
    {
        let slot = self.read_slot().await?;
        let inner = self.inner.clone();
        // The slot moves into the task, so that a cancelled caller cannot free it while
        // its connection is still in use.
        run_blocking(move || inner.with_reader(slot, f)).await
    }

    /// Runs `f` like [`Self::read`], but on the calling thread: for the hot path's
    /// bounded reads (an index seek and at most a page of rows, tens of microseconds
    /// when warm). Handing such a read to another thread cost more than the read: a
    /// warm timeline read took 125 µs of CPU inline, 180 µs through the blocking pool
    /// and 205 µs through `block_in_place`, measured in one run. A cold read stalls this
    /// worker thread for as long as its page faults take; other workers steal its queue.
    async fn read_inline<T, F>(&self, f: F) -> StoreResult<T>
    where
        F: FnOnce(&Connection) -> StoreResult<T>,
    {
        let slot = self.read_slot().await?;
        self.inner.with_reader(slot, f)
    }

    /// [`Self::read_inline`] for one statement, which SQLite runs as a read transaction
    /// of its own: no `BEGIN` and `COMMIT` around it.
    async fn read_statement_inline<T, F>(&self, f: F) -> StoreResult<T>
    where
        F: FnOnce(&Connection) -> StoreResult<T>,
    {
        let _slot = self.read_slot().await?;
        let conn = self.inner.reader()?;
        let result = f(&conn);
        self.inner.give_back(conn);
        result
    }

    async fn read_slot(&self) -> StoreResult<tokio::sync::OwnedSemaphorePermit> {
        self.inner
            .read_slots
            .clone()
            .acquire_owned()
            .await
            .map_err(|e| StoreError::Backend(anyhow::anyhow!("reader pool closed: {e}")))
    }
}

impl Inner {
    /// Runs `f` on a pooled reader (opened when none is free) in one read transaction,
    /// holding `_slot` throughout.
    fn with_reader<T, F>(&self, _slot: tokio::sync::OwnedSemaphorePermit, f: F) -> StoreResult<T>
    where
        F: FnOnce(&Connection) -> StoreResult<T>,
    {
        let conn = self.reader()?;
        // `BEGIN` and `COMMIT` from the statement cache: `Transaction` parses them on
        // every read (4% of a warm timeline read's CPU).
        conn.prepare_cached("BEGIN")?.execute([])?;
        let result = f(&conn);
        let ended = conn
            .prepare_cached("COMMIT")
            .and_then(|mut s| s.execute([]));
        if ended.is_err() {
            let _ = conn.execute_batch("ROLLBACK");
        }
        self.give_back(conn);
        let value = result?;
        ended?;
        Ok(value)
    }

    /// A pooled reader, or a new one when none is free.
    fn reader(&self) -> StoreResult<Connection> {
        let pooled = self.readers.lock().unwrap_or_else(|p| p.into_inner()).pop();
        if let Some(conn) = pooled {
            return Ok(conn);
        }
        let conn = connect(&self.path, self.flags, self.mmap_bytes)?;
        conn.execute_batch("PRAGMA cache_size=-16384;")?;
        Ok(conn)
    }

    /// Pools `conn` again, unless it was left inside a transaction: that would pin its
    /// snapshot.
    fn give_back(&self, conn: Connection) {
        if conn.is_autocommit() {
            self.readers
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .push(conn);
        }
    }
}

/// Every table and index, made or migrated to this version.
fn set_up(conn: &Connection) -> anyhow::Result<()> {
    schema::migrate(conn)?;
    conn.execute_batch(leases::SCHEMA)?;
    conn.execute_batch(deliveries::SCHEMA)?;
    conn.execute_batch(events::SCHEMA)?;
    conn.execute_batch(trends::SCHEMA)?;
    conn.execute_batch(tokens::SCHEMA)?;
    activity::migrate(conn)?;
    schema::stamp_version(conn)?;
    Ok(())
}

/// A connection set up as every one of this store's: busy waits, a statement cache, a
/// stable query plan per statement, and the file mapped into memory.
fn connect(path: &Path, flags: OpenFlags, mmap_bytes: u64) -> rusqlite::Result<Connection> {
    let conn = Connection::open_with_flags(path, flags)?;
    conn.busy_timeout(std::time::Duration::from_secs(5))?;
    // `IN (...)` lists of every length up to a page are distinct statements; the
    // default cache of 16 would re-prepare them on every read.
    conn.set_prepared_statement_cache_capacity(STATEMENT_CACHE);
    // Without the query planner stability guarantee, SQLite expires a cached statement
    // whenever a parameter its plan looked at is bound to a new value (`LIMIT ?`, for
    // one), so every timeline read parsed and planned its query again: 15% of a warm
    // read's CPU. With it, a statement keeps the plan it was prepared with.
    conn.set_db_config(DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG, true)?;
    // Pages of the database file are read through a memory map instead of being copied
    // into each connection's page cache by `read()`: 5-10% less CPU per warm read. The
    // kernel's page cache holds the pages, but each connection maps them on its own, and
    // every page a connection touches counts in the process's RSS (`storage.mmap_mib`).
    conn.execute_batch(&format!("PRAGMA mmap_size={mmap_bytes};"))?;
    Ok(conn)
}

async fn run_blocking<T, F>(f: F) -> StoreResult<T>
where
    T: Send + 'static,
    F: FnOnce() -> StoreResult<T> + Send + 'static,
{
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| StoreError::Backend(anyhow::anyhow!("storage task failed: {e}")))?
}

#[async_trait]
impl Health for EmbeddedStore {
    fn backend(&self) -> &'static str {
        "embedded"
    }

    async fn ping(&self) -> StoreResult<()> {
        self.read_inline(|conn| {
            conn.query_row("SELECT count(*) FROM meta", [], |_| Ok(()))?;
            Ok(())
        })
        .await
    }
}
