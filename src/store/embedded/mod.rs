//! The embedded adapter: one SQLite file in WAL mode.
//!
//! Writes go through a single connection, one `BEGIN IMMEDIATE` transaction per port
//! call, so every invariant that MongoDB keeps with single-document atomic commands
//! (bucket sizes, counters, cache bounds) holds here because writers are serialised.
//! Reads use a small pool of connections and run beside the writer, which WAL allows.
//! All SQLite calls run on tokio's blocking pool; no lock is held across an `.await`.

mod activity;
mod schema;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use anyhow::Context;
use async_trait::async_trait;
use rusqlite::{Connection, OptionalExtension, Transaction, TransactionBehavior, params};
use serde::Serialize;

use super::{Store, StoreError, StoreResult};
use crate::domain::{
    AuthorView, Bucket, BucketKind, CacheState, Change, ChangeOp, ChangePosition, NewUser, Post,
    PostId, TimelineEntry, TimelineKind, User,
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
/// Keeps `IN (...)` lists well under SQLite's variable limit.
const IN_CHUNK: usize = 500;

pub struct EmbeddedStore {
    inner: Arc<Inner>,
}

struct Inner {
    path: PathBuf,
    writer: Mutex<Connection>,
    readers: Mutex<Vec<Connection>>,
    /// One permit per pooled reader connection, so the pool never grows past it.
    read_slots: Arc<tokio::sync::Semaphore>,
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
        Ok(EmbeddedStore {
            inner: Arc::new(Inner {
                path: path.to_path_buf(),
                writer: Mutex::new(writer),
                readers: Mutex::new(Vec::new()),
                read_slots: Arc::new(tokio::sync::Semaphore::new(reader_count())),
            }),
        })
    }

    /// Runs `f` in one write transaction on the blocking pool.
    async fn write<T, F>(&self, f: F) -> StoreResult<T>
    where
        T: Send + 'static,
        F: FnOnce(&Transaction<'_>) -> StoreResult<T> + Send + 'static,
    {
        let inner = self.inner.clone();
        run_blocking(move || {
            let mut conn = inner.writer.lock().unwrap_or_else(|p| p.into_inner());
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
        run_blocking(move || {
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

async fn run_blocking<T, F>(f: F) -> StoreResult<T>
where
    T: Send + 'static,
    F: FnOnce() -> StoreResult<T> + Send + 'static,
{
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| StoreError::Backend(anyhow::anyhow!("storage task failed: {e}")))?
}

fn kind_code(kind: BucketKind) -> i64 {
    match kind {
        BucketKind::Timed => 0,
        BucketKind::Sized => 1,
    }
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

fn user_from_row(row: &rusqlite::Row<'_>) -> rusqlite::Result<User> {
    Ok(User {
        id: row.get(0)?,
        display_name: row.get(1)?,
        followers_count: row.get::<_, i64>(2)? as u64,
        following_count: row.get::<_, i64>(3)? as u64,
        posts_count: row.get::<_, i64>(4)? as u64,
        created_at_ms: row.get(5)?,
        version: row.get::<_, i64>(6)? as u64,
    })
}

const USER_COLUMNS: &str =
    "id, display_name, followers_count, following_count, posts_count, created_at, version";

fn post_from_row(row: &rusqlite::Row<'_>) -> rusqlite::Result<Post> {
    Ok(Post {
        id: post_id_at(row, 0)?,
        author: row.get(1)?,
        text: row.get(2)?,
    })
}

fn entry_from_row(row: &rusqlite::Row<'_>) -> rusqlite::Result<TimelineEntry> {
    Ok(TimelineEntry {
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

fn get_user(conn: &Connection, id: &str) -> rusqlite::Result<Option<User>> {
    conn.prepare_cached(&format!("SELECT {USER_COLUMNS} FROM users WHERE id = ?1"))?
        .query_row([id], user_from_row)
        .optional()
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
    let op = match op {
        ChangeOp::Insert => "insert",
        ChangeOp::Update => "update",
        ChangeOp::Delete => "delete",
    };
    tx.prepare_cached("INSERT INTO changes (ts, coll, op, key, doc) VALUES (?1, ?2, ?3, ?4, ?5)")?
        .execute(params![crate::domain::now_ms(), collection, op, key, doc])?;
    Ok(())
}

#[derive(Serialize)]
struct FollowDoc<'a> {
    follower: &'a str,
    followee: &'a str,
}

fn add_to_counter(tx: &Transaction<'_>, column: &str, user: &str, delta: i64) -> StoreResult<()> {
    tx.prepare_cached(&format!(
        "UPDATE users SET {column} = {column} + ?1 WHERE id = ?2"
    ))?
    .execute(params![delta, user])?;
    Ok(())
}

fn insert_cache_entries(
    tx: &Transaction<'_>,
    user: &str,
    entries: &[TimelineEntry],
    cache_size: u32,
) -> StoreResult<()> {
    let mut insert = tx.prepare_cached(
        "INSERT OR IGNORE INTO cache_entries (user, post_id, author, text) VALUES (?1, ?2, ?3, ?4)",
    )?;
    for entry in entries {
        insert.execute(params![
            user,
            &entry.id.bytes()[..],
            entry.author,
            entry.text
        ])?;
    }
    // Keep the newest `cache_size` entries, as `$push` with `$sort` and `$slice` does.
    tx.prepare_cached(
        "DELETE FROM cache_entries WHERE user = ?1 AND post_id < (
             SELECT post_id FROM cache_entries WHERE user = ?1
             ORDER BY post_id DESC LIMIT 1 OFFSET ?2)",
    )?
    .execute(params![user, i64::from(cache_size) - 1])?;
    Ok(())
}

fn upsert_bucket_entries(
    tx: &Transaction<'_>,
    kind: BucketKind,
    user: &str,
    key: i64,
    entries: &[TimelineEntry],
) -> StoreResult<()> {
    let (Some(min), Some(max)) = (
        entries.iter().map(|e| e.id).min(),
        entries.iter().map(|e| e.id).max(),
    ) else {
        return Ok(());
    };
    let kind = kind_code(kind);
    tx.prepare_cached(
        "INSERT INTO buckets (kind, user, key, n, mn, mx) VALUES (?1, ?2, ?3, ?4, ?5, ?6)
         ON CONFLICT (kind, user, key) DO UPDATE SET
             n = n + excluded.n, mn = min(mn, excluded.mn), mx = max(mx, excluded.mx)",
    )?
    .execute(params![
        kind,
        user,
        key,
        entries.len() as i64,
        &min.bytes()[..],
        &max.bytes()[..]
    ])?;
    let mut insert = tx.prepare_cached(
        "INSERT OR IGNORE INTO bucket_entries (kind, user, key, post_id, author, text)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
    )?;
    for entry in entries {
        insert.execute(params![
            kind,
            user,
            key,
            &entry.id.bytes()[..],
            entry.author,
            entry.text
        ])?;
    }
    Ok(())
}

#[async_trait]
impl Store for EmbeddedStore {
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

    async fn create_user(&self, user: &NewUser) -> StoreResult<User> {
        let user = user.clone();
        self.write(move |tx| {
            let inserted = tx
                .prepare_cached(
                    "INSERT INTO users (id, display_name, created_at) VALUES (?1, ?2, ?3)
                     ON CONFLICT (id) DO NOTHING",
                )?
                .execute(params![user.id, user.display_name, user.created_at_ms])?;
            if inserted == 0 {
                return Err(StoreError::Conflict(format!("user {}", user.id)));
            }
            let created = get_user(tx, &user.id)?
                .ok_or_else(|| StoreError::NotFound(format!("user {}", user.id)))?;
            record_change(tx, "users", ChangeOp::Insert, &created.id, Some(&created))?;
            Ok(created)
        })
        .await
    }

    async fn user(&self, id: &str) -> StoreResult<Option<User>> {
        let id = id.to_owned();
        self.read(move |conn| Ok(get_user(conn, &id)?)).await
    }

    async fn rename_user(&self, id: &str, display_name: &str) -> StoreResult<Option<User>> {
        let (id, name) = (id.to_owned(), display_name.to_owned());
        self.write(move |tx| {
            let changed = tx
                .prepare_cached(
                    "UPDATE users SET display_name = ?1, version = version + 1 WHERE id = ?2",
                )?
                .execute(params![name, id])?;
            if changed == 0 {
                return Ok(None);
            }
            let user = get_user(tx, &id)?;
            record_change(tx, "users", ChangeOp::Update, &id, user.as_ref())?;
            Ok(user)
        })
        .await
    }

    async fn follow(&self, follower: &str, followee: &str, now_ms: i64) -> StoreResult<bool> {
        let (follower, followee) = (follower.to_owned(), followee.to_owned());
        self.write(move |tx| {
            for id in [&follower, &followee] {
                if !user_exists(tx, id)? {
                    return Err(StoreError::NotFound(format!("user {id}")));
                }
            }
            let added = tx
                .prepare_cached(
                    "INSERT OR IGNORE INTO follows (follower, followee, created_at) VALUES (?1, ?2, ?3)",
                )?
                .execute(params![follower, followee, now_ms])?;
            if added == 0 {
                return Ok(false);
            }
            add_to_counter(tx, "following_count", &follower, 1)?;
            add_to_counter(tx, "followers_count", &followee, 1)?;
            let doc = FollowDoc { follower: &follower, followee: &followee };
            record_change(tx, "follows", ChangeOp::Insert, &format!("{follower}/{followee}"), Some(&doc))?;
            Ok(true)
        })
        .await
    }

    async fn unfollow(&self, follower: &str, followee: &str) -> StoreResult<bool> {
        let (follower, followee) = (follower.to_owned(), followee.to_owned());
        self.write(move |tx| {
            let removed = tx
                .prepare_cached("DELETE FROM follows WHERE follower = ?1 AND followee = ?2")?
                .execute(params![follower, followee])?;
            if removed == 0 {
                return Ok(false);
            }
            add_to_counter(tx, "following_count", &follower, -1)?;
            add_to_counter(tx, "followers_count", &followee, -1)?;
            record_change::<()>(
                tx,
                "follows",
                ChangeOp::Delete,
                &format!("{follower}/{followee}"),
                None,
            )?;
            Ok(true)
        })
        .await
    }

    async fn following(
        &self,
        user: &str,
        after: Option<&str>,
        limit: usize,
    ) -> StoreResult<Vec<String>> {
        let (user, after) = (user.to_owned(), after.unwrap_or("").to_owned());
        self.read(move |conn| {
            let mut stmt = conn.prepare_cached(
                "SELECT followee FROM follows WHERE follower = ?1 AND followee > ?2
                 ORDER BY followee LIMIT ?3",
            )?;
            let rows = stmt.query_map(params![user, after, limit as i64], |row| row.get(0))?;
            Ok(rows.collect::<rusqlite::Result<_>>()?)
        })
        .await
    }

    async fn followers(
        &self,
        user: &str,
        after: Option<&str>,
        limit: usize,
    ) -> StoreResult<Vec<String>> {
        let (user, after) = (user.to_owned(), after.unwrap_or("").to_owned());
        self.read(move |conn| {
            let mut stmt = conn.prepare_cached(
                "SELECT follower FROM follows WHERE followee = ?1 AND follower > ?2
                 ORDER BY follower LIMIT ?3",
            )?;
            let rows = stmt.query_map(params![user, after, limit as i64], |row| row.get(0))?;
            Ok(rows.collect::<rusqlite::Result<_>>()?)
        })
        .await
    }

    async fn authors(&self, reader: &str, authors: &[String]) -> StoreResult<Vec<AuthorView>> {
        let (reader, authors) = (reader.to_owned(), authors.to_vec());
        self.read(move |conn| {
            let mut found = Vec::with_capacity(authors.len());
            for chunk in authors.chunks(IN_CHUNK) {
                let sql = format!(
                    "SELECT u.id, u.display_name,
                            EXISTS (SELECT 1 FROM follows f WHERE f.follower = ? AND f.followee = u.id)
                     FROM users u WHERE u.id IN ({})",
                    placeholders(chunk.len())
                );
                let mut stmt = conn.prepare_cached(&sql)?;
                let params = std::iter::once(&reader).chain(chunk);
                let rows = stmt.query_map(rusqlite::params_from_iter(params), |row| {
                    Ok(AuthorView {
                        id: row.get(0)?,
                        display_name: row.get(1)?,
                        followed: row.get(2)?,
                    })
                })?;
                for row in rows {
                    found.push(row?);
                }
            }
            Ok(found)
        })
        .await
    }

    async fn insert_post(&self, author: &str, text: &str, now_ms: i64) -> StoreResult<Post> {
        let (author, text) = (author.to_owned(), text.to_owned());
        self.write(move |tx| {
            if !user_exists(tx, &author)? {
                return Err(StoreError::NotFound(format!("user {author}")));
            }
            // The last id handed out lives in `meta`, so ids never go back or repeat,
            // even after the newest post is deleted or the clock steps back.
            let last: Option<Vec<u8>> = tx
                .prepare_cached("SELECT value FROM meta WHERE key = 'last_post_id'")?
                .query_row([], |row| row.get(0))
                .optional()?;
            let last = last
                .and_then(|b| <[u8; 12]>::try_from(b.as_slice()).ok())
                .map(PostId::from_bytes);
            let id = PostId::next_after(now_ms, last, 0);
            tx.prepare_cached(
                "INSERT OR REPLACE INTO meta (key, value) VALUES ('last_post_id', ?1)",
            )?
            .execute([&id.bytes()[..]])?;
            tx.prepare_cached("INSERT INTO posts (id, author, text) VALUES (?1, ?2, ?3)")?
                .execute(params![&id.bytes()[..], author, text])?;
            add_to_counter(tx, "posts_count", &author, 1)?;
            let post = Post { id, author, text };
            record_change(tx, "posts", ChangeOp::Insert, &id.to_string(), Some(&post))?;
            Ok(post)
        })
        .await
    }

    async fn post(&self, id: PostId) -> StoreResult<Option<Post>> {
        self.read(move |conn| {
            Ok(conn
                .prepare_cached("SELECT id, author, text FROM posts WHERE id = ?1")?
                .query_row([&id.bytes()[..]], post_from_row)
                .optional()?)
        })
        .await
    }

    async fn delete_post(&self, id: PostId) -> StoreResult<Option<Post>> {
        self.write(move |tx| {
            let post = tx
                .prepare_cached("DELETE FROM posts WHERE id = ?1 RETURNING id, author, text")?
                .query_row([&id.bytes()[..]], post_from_row)
                .optional()?;
            if let Some(post) = &post {
                add_to_counter(tx, "posts_count", &post.author, -1)?;
                record_change::<()>(tx, "posts", ChangeOp::Delete, &id.to_string(), None)?;
            }
            Ok(post)
        })
        .await
    }

    async fn posts_by_author(
        &self,
        author: &str,
        before: Option<PostId>,
        limit: usize,
    ) -> StoreResult<Vec<Post>> {
        let author = author.to_owned();
        let before = before.map(|b| b.bytes().to_vec());
        self.read(move |conn| {
            let mut stmt = conn.prepare_cached(
                "SELECT id, author, text FROM posts WHERE author = ?1 AND (?2 IS NULL OR id < ?2)
                 ORDER BY id DESC LIMIT ?3",
            )?;
            let rows = stmt.query_map(params![author, before, limit as i64], post_from_row)?;
            Ok(rows.collect::<rusqlite::Result<_>>()?)
        })
        .await
    }

    async fn posts_by_ids(&self, ids: &[PostId]) -> StoreResult<Vec<Post>> {
        let ids: Vec<Vec<u8>> = ids.iter().map(|id| id.bytes().to_vec()).collect();
        self.read(move |conn| {
            let mut posts = Vec::with_capacity(ids.len());
            for chunk in ids.chunks(IN_CHUNK) {
                let sql = format!(
                    "SELECT id, author, text FROM posts WHERE id IN ({})",
                    placeholders(chunk.len())
                );
                let mut stmt = conn.prepare_cached(&sql)?;
                let rows = stmt.query_map(rusqlite::params_from_iter(chunk), post_from_row)?;
                for row in rows {
                    posts.push(row?);
                }
            }
            Ok(posts)
        })
        .await
    }

    async fn home_posts(
        &self,
        user: &str,
        before: Option<PostId>,
        limit: usize,
    ) -> StoreResult<Vec<Post>> {
        let user = user.to_owned();
        let before = before.map(|b| b.bytes().to_vec());
        self.read(move |conn| {
            let mut stmt = conn.prepare_cached(
                "SELECT id, author, text FROM posts
                 WHERE author IN (SELECT followee FROM follows WHERE follower = ?1 UNION ALL SELECT ?1)
                   AND (?2 IS NULL OR id < ?2)
                 ORDER BY id DESC LIMIT ?3",
            )?;
            let rows = stmt.query_map(params![user, before, limit as i64], post_from_row)?;
            Ok(rows.collect::<rusqlite::Result<_>>()?)
        })
        .await
    }

    async fn timed_push(
        &self,
        users: &[String],
        key: i64,
        entries: &[TimelineEntry],
    ) -> StoreResult<()> {
        let (users, entries) = (users.to_vec(), entries.to_vec());
        self.write(move |tx| {
            for user in &users {
                upsert_bucket_entries(tx, BucketKind::Timed, user, key, &entries)?;
            }
            Ok(())
        })
        .await
    }

    async fn sized_push(
        &self,
        users: &[String],
        entries: &[TimelineEntry],
        bucket_size: u32,
    ) -> StoreResult<()> {
        let (users, entries) = (users.to_vec(), entries.to_vec());
        self.write(move |tx| {
            let mut newest_stmt = tx.prepare_cached(
                "SELECT key, n FROM buckets WHERE kind = 1 AND user = ?1 ORDER BY key DESC LIMIT 1",
            )?;
            for user in &users {
                for entry in &entries {
                    let newest: Option<(i64, i64)> = newest_stmt
                        .query_row([user], |row| Ok((row.get(0)?, row.get(1)?)))
                        .optional()?;
                    let key = match newest {
                        Some((key, pushes)) if pushes < i64::from(bucket_size) => key,
                        Some((key, _)) => key + 1,
                        None => 0,
                    };
                    upsert_bucket_entries(
                        tx,
                        BucketKind::Sized,
                        user,
                        key,
                        std::slice::from_ref(entry),
                    )?;
                }
            }
            Ok(())
        })
        .await
    }

    async fn buckets(
        &self,
        kind: BucketKind,
        user: &str,
        before: Option<PostId>,
        skip: usize,
        limit: usize,
        per_bucket: usize,
    ) -> StoreResult<Vec<Bucket>> {
        let user = user.to_owned();
        let per_bucket = i64::try_from(per_bucket).unwrap_or(i64::MAX);
        let before = before.map(|b| b.bytes().to_vec());
        self.read(move |conn| {
            let kind = kind_code(kind);
            let heads: Vec<(i64, i64, PostId)> = conn
                .prepare_cached(
                    "SELECT key, n, mx FROM buckets WHERE kind = ?1 AND user = ?2 AND (?3 IS NULL OR mn < ?3)
                     ORDER BY mx DESC, key DESC LIMIT ?4 OFFSET ?5",
                )?
                .query_map(params![kind, user, before, limit as i64, skip as i64], |row| {
                    Ok((row.get(0)?, row.get(1)?, post_id_at(row, 2)?))
                })?
                .collect::<rusqlite::Result<_>>()?;
            let mut entries_stmt = conn.prepare_cached(
                "SELECT post_id, author, text FROM bucket_entries WHERE kind = ?1 AND user = ?2 AND key = ?3
                   AND (?4 IS NULL OR post_id < ?4)
                 ORDER BY post_id DESC LIMIT ?5",
            )?;
            let mut buckets = Vec::with_capacity(heads.len());
            for (key, pushes, newest) in heads {
                let entries = entries_stmt
                    .query_map(params![kind, user, key, before, per_bucket], entry_from_row)?
                    .collect::<rusqlite::Result<_>>()?;
                buckets.push(Bucket { key, pushes: pushes as u64, newest, entries });
            }
            Ok(buckets)
        })
        .await
    }

    async fn cache_push(
        &self,
        users: &[String],
        entries: &[TimelineEntry],
        cache_size: u32,
    ) -> StoreResult<u64> {
        let (users, entries) = (users.to_vec(), entries.to_vec());
        self.write(move |tx| {
            let mut written = 0;
            for chunk in users.chunks(IN_CHUNK) {
                let sql = format!(
                    "SELECT user FROM caches WHERE user IN ({})",
                    placeholders(chunk.len())
                );
                let owners: Vec<String> = tx
                    .prepare_cached(&sql)?
                    .query_map(rusqlite::params_from_iter(chunk), |row| row.get(0))?
                    .collect::<rusqlite::Result<_>>()?;
                for owner in owners {
                    insert_cache_entries(tx, &owner, &entries, cache_size)?;
                    written += 1;
                }
            }
            Ok(written)
        })
        .await
    }

    async fn cache_push_to_audience(
        &self,
        author: &str,
        entries: &[TimelineEntry],
        cache_size: u32,
    ) -> StoreResult<u64> {
        let (author, entries) = (author.to_owned(), entries.to_vec());
        self.write(move |tx| {
            let caches: i64 = tx
                .prepare_cached("SELECT value FROM meta WHERE key = 'cache_count'")?
                .query_row([], |row| row.get(0))
                .optional()?
                .unwrap_or(0);
            let followers: i64 = tx
                .prepare_cached("SELECT followers_count FROM users WHERE id = ?1")?
                .query_row([&author], |row| row.get(0))
                .optional()?
                .unwrap_or(0);
            // Walk the smaller side: with few active readers, a post to many followers
            // touches only the caches that exist.
            let sql = if caches <= followers {
                "SELECT c.user FROM caches c WHERE c.user = ?1 OR EXISTS (
                     SELECT 1 FROM follows f WHERE f.follower = c.user AND f.followee = ?1)"
            } else {
                "SELECT c.user FROM caches c WHERE c.user = ?1
                 UNION ALL
                 SELECT f.follower FROM follows f CROSS JOIN caches c ON c.user = f.follower
                 WHERE f.followee = ?1"
            };
            let owners: Vec<String> = tx
                .prepare_cached(sql)?
                .query_map([&author], |row| row.get(0))?
                .collect::<rusqlite::Result<_>>()?;
            for owner in &owners {
                insert_cache_entries(tx, owner, &entries, cache_size)?;
            }
            Ok(owners.len() as u64)
        })
        .await
    }

    async fn cache(&self, user: &str) -> StoreResult<Option<CacheState>> {
        let user = user.to_owned();
        self.read(move |conn| {
            let head: Option<(bool, i64)> = conn
                .prepare_cached("SELECT ready, started_at FROM caches WHERE user = ?1")?
                .query_row([&user], |row| Ok((row.get(0)?, row.get(1)?)))
                .optional()?;
            let Some((ready, started_at_ms)) = head else {
                return Ok(None);
            };
            let entries = conn
                .prepare_cached(
                    "SELECT post_id, author, text FROM cache_entries WHERE user = ?1 ORDER BY post_id DESC",
                )?
                .query_map([&user], entry_from_row)?
                .collect::<rusqlite::Result<_>>()?;
            Ok(Some(CacheState { ready, started_at_ms, entries }))
        })
        .await
    }

    async fn cache_start(&self, user: &str, now_ms: i64) -> StoreResult<bool> {
        let user = user.to_owned();
        self.write(move |tx| {
            let created = tx
                .prepare_cached(
                    "INSERT OR IGNORE INTO caches (user, ready, started_at) VALUES (?1, 0, ?2)",
                )?
                .execute(params![user, now_ms])?;
            if created > 0 {
                tx.prepare_cached("UPDATE meta SET value = value + 1 WHERE key = 'cache_count'")?
                    .execute([])?;
            }
            Ok(created > 0)
        })
        .await
    }

    async fn cache_fill(
        &self,
        user: &str,
        entries: &[TimelineEntry],
        cache_size: u32,
    ) -> StoreResult<()> {
        let (user, entries) = (user.to_owned(), entries.to_vec());
        self.write(move |tx| {
            insert_cache_entries(tx, &user, &entries, cache_size)?;
            tx.prepare_cached("UPDATE caches SET ready = 1 WHERE user = ?1")?
                .execute([&user])?;
            Ok(())
        })
        .await
    }

    async fn remove_author_entries(
        &self,
        kind: TimelineKind,
        user: &str,
        author: &str,
    ) -> StoreResult<()> {
        let (user, author) = (user.to_owned(), author.to_owned());
        self.write(move |tx| {
            match kind {
                TimelineKind::Buckets(kind) => tx
                    .prepare_cached(
                        "DELETE FROM bucket_entries WHERE kind = ?1 AND user = ?2 AND author = ?3",
                    )?
                    .execute(params![kind_code(kind), user, author])?,
                TimelineKind::Cache => tx
                    .prepare_cached("DELETE FROM cache_entries WHERE user = ?1 AND author = ?2")?
                    .execute(params![user, author])?,
            };
            Ok(())
        })
        .await
    }

    async fn remove_post_entries(&self, kind: TimelineKind, post: PostId) -> StoreResult<()> {
        self.write(move |tx| {
            let id = &post.bytes()[..];
            match kind {
                TimelineKind::Buckets(kind) => tx
                    .prepare_cached("DELETE FROM bucket_entries WHERE post_id = ?1 AND kind = ?2")?
                    .execute(params![id, kind_code(kind)])?,
                TimelineKind::Cache => tx
                    .prepare_cached("DELETE FROM cache_entries WHERE post_id = ?1")?
                    .execute([id])?,
            };
            Ok(())
        })
        .await
    }

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
            if let Some(after) = after
                && after < trimmed
            {
                return Err(StoreError::HistoryLost(after.to_string()));
            }
            let mut stmt = conn.prepare_cached(
                "SELECT pos, coll, op, key, doc FROM changes WHERE pos > ?1 ORDER BY pos LIMIT ?2",
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
                ))
            })?;
            let mut changes = Vec::new();
            for row in rows {
                let (pos, collection, op, key, doc) = row?;
                let op = match op.as_str() {
                    "insert" => ChangeOp::Insert,
                    "update" => ChangeOp::Update,
                    _ => ChangeOp::Delete,
                };
                let document = doc
                    .map(|d| serde_json::from_str(&d))
                    .transpose()
                    .map_err(|e| StoreError::Backend(e.into()))?;
                changes.push(Change {
                    position: ChangePosition(pos.to_string()),
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

    async fn trim_changes(&self, older_than_ms: i64) -> StoreResult<u64> {
        self.write(move |tx| {
            let through: Option<i64> = tx
                .prepare_cached("SELECT max(pos) FROM changes WHERE ts < ?1")?
                .query_row([older_than_ms], |row| row.get(0))?;
            let Some(through) = through else {
                return Ok(0);
            };
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
