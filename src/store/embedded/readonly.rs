//! The store opened for reading only, as `socialite audit` opens it: the file checked
//! before anything is opened, and every connection `SQLITE_OPEN_READ_ONLY`, so that
//! nothing the audit runs can change it. The file must exist (a mistyped path is an
//! error, not a new empty store), hold a socialite store, and be of this binary's
//! format: an older one is refused rather than migrated, since migrating is a write
//! and older binaries refuse the file afterwards.
//!
//! WAL: a read-only connection reads the WAL beside the file through its shared-memory
//! index (`-wal`, `-shm`). Beside a running server both exist. After a clean close
//! neither does, and SQLite creates them, empty, for the reader; a read-only connection
//! appends no frame and never checkpoints, so the store file is not written. They stay
//! beside the file, as after any reader, until the next writer to close removes them.

use std::path::Path;
use std::sync::{Arc, Mutex};

use anyhow::{Context, bail};
use rusqlite::{Connection, OpenFlags};

use super::schema::{CORE_TABLES, SCHEMA_VERSION};
use super::{EmbeddedStore, Inner, Synchronous, connect, lock, reader_count};
use crate::store::audit::UPGRADE_HINT;

impl EmbeddedStore {
    /// Opens the store at `path` for reading only, each connection mapping at most
    /// `mmap_mib` MiB of the file. Refused, with nothing created or written, when there
    /// is no file at `path`, when it holds no socialite store, when its format is not
    /// this binary's, and while `socialite restore` replaces it.
    pub fn open_read_only(path: &Path, mmap_mib: u32) -> anyhow::Result<Self> {
        match std::fs::metadata(path) {
            Ok(meta) if meta.is_file() => {}
            Ok(_) => bail!("{} is not a file, so it holds no store", path.display()),
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => bail!(
                "there is no store at {} (check storage.path); nothing was created",
                path.display()
            ),
            Err(error) => {
                return Err(error).with_context(|| format!("reading {}", path.display()));
            }
        }
        let lock = lock::StoreLock::shared(path).map_err(|error| match error {
            lock::LockError::Busy(_) => anyhow::anyhow!(
                "{} is being replaced by `socialite restore`; start again once it is done",
                path.display()
            ),
            lock::LockError::Io(error) => error,
        })?;
        let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let mmap_bytes = u64::from(mmap_mib) << 20;
        let conn = connect(path, flags, mmap_bytes)
            .with_context(|| format!("opening {} read-only", path.display()))?;
        check_format(&conn, path)?;
        Ok(EmbeddedStore {
            inner: Arc::new(Inner {
                path: path.to_path_buf(),
                flags,
                _lock: lock,
                writer: Arc::new(tokio::sync::Mutex::new(conn)),
                readers: Mutex::new(Vec::new()),
                read_slots: Arc::new(tokio::sync::Semaphore::new(reader_count())),
                events_appended: tokio::sync::Notify::new(),
                synchronous: Synchronous::Normal,
                mmap_bytes,
                gate: super::bulk::Gate::default(),
            }),
        })
    }
}

/// The file holds a socialite store of this binary's format, or why not.
fn check_format(conn: &Connection, path: &Path) -> anyhow::Result<()> {
    let mut missing = Vec::new();
    for table in CORE_TABLES {
        let found: bool = conn
            .query_row(
                "SELECT EXISTS (SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name = ?1)",
                [table],
                |row| row.get(0),
            )
            .with_context(|| format!("reading {}", path.display()))?;
        if !found {
            missing.push(table);
        }
    }
    if !missing.is_empty() {
        bail!(
            "{} is not a socialite store (it has no {} table{}): check storage.path",
            path.display(),
            missing.join(", "),
            if missing.len() > 1 { "s" } else { "" }
        );
    }
    let format: i64 = conn.query_row("PRAGMA user_version", [], |row| row.get(0))?;
    if format > SCHEMA_VERSION {
        bail!(
            "{} is a store of format {format}, written by a newer socialite; this one reads \
             format {SCHEMA_VERSION}: audit it with that newer socialite",
            path.display()
        );
    }
    if format < SCHEMA_VERSION {
        bail!(
            "{} is a store of format {format}{}, and this socialite audits format \
             {SCHEMA_VERSION} only; the audit never upgrades a store (it only reads, and \
             so does `--repair` until the store is upgraded): {UPGRADE_HINT}",
            path.display(),
            if format == 0 {
                " (before formats were numbered)"
            } else {
                ""
            }
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::Synchronous;
    use super::*;
    use crate::store::UserStore;

    #[tokio::test]
    async fn a_read_only_store_reads_and_refuses_every_write() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.db");
        EmbeddedStore::open(&path, Synchronous::Normal).unwrap();
        let store = EmbeddedStore::open_read_only(&path, 0).unwrap();
        assert!(store.user("nobody").await.unwrap().is_none());
        let new = crate::domain::NewUser {
            id: "ann".into(),
            display_name: "Ann".into(),
            created_at_ms: 1,
        };
        let refused = store.create_user(&new).await.unwrap_err();
        assert!(refused.to_string().contains("readonly"), "{refused}");
    }
}
