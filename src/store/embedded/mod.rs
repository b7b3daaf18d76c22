//! The embedded adapter: one SQLite file in WAL mode.
//!
//! Writes go through a single connection, one `BEGIN IMMEDIATE` transaction per port
//! call (a push to a whole audience: one per chunk), so every invariant that MongoDB
//! keeps with single-document atomic commands (bucket sizes, counters, cache bounds)
//! holds here because writers are serialised; they take the connection in the order
//! they asked for it. Reads use a small pool of connections and run beside the writer,
//! which WAL allows. Writes run on tokio's blocking pool, reads in place where they can
//! (see `read_in_place`); only the writer's queue is awaited while held.

mod activity;
mod changes;
mod content;
mod deliveries;
mod events;
mod graph;
mod leases;
mod schema;
mod timelines;
mod tokens;
mod trends;
mod users;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use anyhow::Context;
use async_trait::async_trait;
use rusqlite::{Connection, Transaction, TransactionBehavior, params};
use serde::Serialize;

use super::{Health, StoreError, StoreResult};
use crate::domain::{ChangeOp, Post, PostId};

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
/// Keeps `IN (...)` lists well under SQLite's variable limit.
const IN_CHUNK: usize = 500;

pub struct EmbeddedStore {
    inner: Arc<Inner>,
}

struct Inner {
    path: PathBuf,
    /// The one write connection, handed out first come, first served: a request's write
    /// waits for the transactions queued before it, never for a stream of later ones.
    writer: Arc<tokio::sync::Mutex<Connection>>,
    readers: Mutex<Vec<Connection>>,
    /// One permit per pooled reader connection, so the pool never grows past it.
    read_slots: Arc<tokio::sync::Semaphore>,
    /// Woken after every append to the event log, for tailing readers in this process.
    events_appended: tokio::sync::Notify,
}

impl EmbeddedStore {
    /// Opens (creating when needed) the database file and brings its schema up to date.
    pub fn open(path: &Path, synchronous: Synchronous) -> anyhow::Result<Self> {
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent)
                .with_context(|| format!("creating {}", parent.display()))?;
        }
        let writer =
            Connection::open(path).with_context(|| format!("opening {}", path.display()))?;
        writer.busy_timeout(std::time::Duration::from_secs(5))?;
        // `IN (...)` lists of every length up to a page are distinct statements; the
        // default cache of 16 would re-prepare them on every read.
        writer.set_prepared_statement_cache_capacity(STATEMENT_CACHE);
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
        schema::migrate(&writer)?;
        writer.execute_batch(leases::SCHEMA)?;
        writer.execute_batch(deliveries::SCHEMA)?;
        writer.execute_batch(events::SCHEMA)?;
        writer.execute_batch(trends::SCHEMA)?;
        writer.execute_batch(tokens::SCHEMA)?;
        activity::migrate(&writer)?;
        Ok(EmbeddedStore {
            inner: Arc::new(Inner {
                path: path.to_path_buf(),
                writer: Arc::new(tokio::sync::Mutex::new(writer)),
                readers: Mutex::new(Vec::new()),
                read_slots: Arc::new(tokio::sync::Semaphore::new(reader_count())),
                events_appended: tokio::sync::Notify::new(),
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

    /// Runs `f` on a pooled read connection, inside one read transaction so that
    /// multi-statement reads see one snapshot.
    async fn read<T, F>(&self, f: F) -> StoreResult<T>
    where
        T: Send + 'static,
        F: FnOnce(&Connection) -> StoreResult<T> + Send + 'static,
    {
        let inner = self.inner.clone();
        // Owned, and moved into the task, so that a cancelled caller cannot free the slot
        // while its connection is still in use.
        let slot = self
            .inner
            .read_slots
            .clone()
            .acquire_owned()
            .await
            .map_err(|e| StoreError::Backend(anyhow::anyhow!("reader pool closed: {e}")))?;
        read_in_place(move || {
            let _slot = slot;
            let pooled = inner
                .readers
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .pop();
            let mut conn = match pooled {
                Some(conn) => conn,
                None => {
                    let conn = Connection::open(&inner.path)?;
                    conn.busy_timeout(std::time::Duration::from_secs(5))?;
                    conn.set_prepared_statement_cache_capacity(STATEMENT_CACHE);
                    conn.execute_batch("PRAGMA cache_size=-16384;")?;
                    conn
                }
            };
            let result = {
                let tx = conn.transaction_with_behavior(TransactionBehavior::Deferred)?;
                let value = f(&tx);
                tx.finish()?;
                value
            };
            inner
                .readers
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .push(conn);
            result
        })
        .await
    }
}

/// Runs a read on this worker thread when the runtime can move the thread's other tasks
/// elsewhere meanwhile (`block_in_place`, multi-threaded runtimes), otherwise on the
/// blocking pool. A warm read is tens of microseconds: handing it to the pool and back
/// cost more than the read itself (a warm timeline read served 33% of `/healthz`'s rate
/// through the pool, 40% in place, same run), and in place a slow read (a page-cache
/// miss) still stalls no other request.
async fn read_in_place<T, F>(f: F) -> StoreResult<T>
where
    T: Send + 'static,
    F: FnOnce() -> StoreResult<T> + Send + 'static,
{
    use tokio::runtime::{Handle, RuntimeFlavor};
    match Handle::current().runtime_flavor() {
        RuntimeFlavor::MultiThread => tokio::task::block_in_place(f),
        _ => run_blocking(f).await,
    }
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

fn post_id_at(row: &rusqlite::Row<'_>, idx: usize) -> rusqlite::Result<PostId> {
    let bytes: Vec<u8> = row.get(idx)?;
    let array: [u8; 12] = bytes.as_slice().try_into().map_err(|_| {
        rusqlite::Error::FromSqlConversionFailure(
            idx,
            rusqlite::types::Type::Blob,
            "post id is not 12 bytes".into(),
        )
    })?;
    Ok(PostId::from_bytes(array))
}

fn post_from_row(row: &rusqlite::Row<'_>) -> rusqlite::Result<Post> {
    Ok(Post {
        id: post_id_at(row, 0)?,
        author: row.get(1)?,
        text: row.get(2)?,
    })
}

fn placeholders(n: usize) -> String {
    let mut text = String::with_capacity(n * 2);
    for i in 0..n {
        if i > 0 {
            text.push(',');
        }
        text.push('?');
    }
    text
}

fn user_exists(conn: &Connection, id: &str) -> rusqlite::Result<bool> {
    conn.prepare_cached("SELECT 1 FROM users WHERE id = ?1")?
        .exists([id])
}

/// Appends to the change feed inside the caller's transaction.
fn record_change<D: Serialize>(
    tx: &Transaction<'_>,
    collection: &str,
    op: ChangeOp,
    key: &str,
    document: Option<&D>,
) -> StoreResult<()> {
    let doc = document
        .map(serde_json::to_string)
        .transpose()
        .map_err(|e| StoreError::Backend(e.into()))?;
    tx.prepare_cached("INSERT INTO changes (ts, coll, op, key, doc) VALUES (?1, ?2, ?3, ?4, ?5)")?
        .execute(params![
            crate::domain::now_ms(),
            collection,
            op.as_str(),
            key,
            doc
        ])?;
    Ok(())
}

fn add_to_counter(tx: &Transaction<'_>, column: &str, user: &str, delta: i64) -> StoreResult<()> {
    tx.prepare_cached(&format!(
        "UPDATE users SET {column} = {column} + ?1 WHERE id = ?2"
    ))?
    .execute(params![delta, user])?;
    Ok(())
}

#[async_trait]
impl Health for EmbeddedStore {
    fn backend(&self) -> &'static str {
        "embedded"
    }

    async fn ping(&self) -> StoreResult<()> {
        self.read(|conn| {
            conn.query_row("SELECT count(*) FROM meta", [], |_| Ok(()))?;
            Ok(())
        })
        .await
    }
}
