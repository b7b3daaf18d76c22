//! `socialite restore` on the embedded store: replace the store file with a backup.
//!
//! In order, stopping at the first refusal with the store untouched:
//! 1. **Nobody has the store open.** The restore takes the store's lock file
//!    exclusively (see `lock.rs`): refused while any server, seed, rebuild or backup
//!    of this store runs, and granted the moment such a process ends, `kill -9`
//!    included. Then, for processes that do not take the lock (an older socialite, or
//!    one on another host over a shared file system), no worker lease of the store may
//!    be held and unexpired: a holder that died stops counting once its lease expires
//!    (`workers.lease_ttl`), so a dead server delays a restore by one lease at most.
//! 2. **The copy is sound.** It is copied beside the store, and that copy must be as
//!    long as its header says, pass `PRAGMA integrity_check`, have the tables of a
//!    socialite store and a format version this binary reads, and hold exactly what its
//!    manifest records (`verify.rs`); the manifest is then dropped, and the copy brought
//!    to this binary's format.
//! 3. **The workers start cleanly.** The copy's lease holders belong to the processes
//!    that ran when it was taken: they are cleared, while each lease keeps the copy's
//!    version and position. The copy carries its own change feed, event log and
//!    derived data as of one instant, so the positions are exactly those of the copy
//!    (never the replaced store's): the next server's workers resume from them, as
//!    after a crash at the instant of the backup. The event ids the replaced store may
//!    have issued after the backup are retired (`ids.rs`), so no id names two events.
//! 4. **The swap.** The copy is flushed; the old store is checkpointed, and its WAL
//!    and shared-memory files are removed (a WAL left beside the new file would be
//!    replayed into it); the copy is renamed over the store and the directory flushed.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, bail};
use rusqlite::{Connection, OpenFlags, params};

use super::backup::manifest;
use super::backup::{Progress, TempFile, sqlite_files};
use super::lock::{LockError, StoreLock, lock_path};
use super::schema::SCHEMA_VERSION;

mod ids;
mod verify;

pub use super::backup::manifest::Verdict;
pub use ids::Retired;
use verify::has_table;

/// Bytes copied between two progress reports.
const CHUNK: usize = 1 << 20;

/// What a restore may let through.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RestoreOptions {
    /// Restore a copy without a manifest (an older socialite's backup), whose content
    /// cannot be checked beyond its length and SQLite's integrity check.
    pub allow_no_manifest: bool,
}

/// Each worker lease's name and position.
pub type Positions = Vec<(String, Option<String>)>;

/// What a restore did.
#[derive(Debug, Clone, PartialEq)]
pub struct RestoreReport {
    pub store: PathBuf,
    pub bytes: u64,
    pub pages: u64,
    pub seconds: f64,
    /// The format version of the copy (brought to this binary's by the restore).
    pub version: i64,
    /// Whether the content was checked against the copy's manifest.
    pub manifest: Verdict,
    /// The event ids retired: those the replaced store may have issued past the copy.
    pub retired: Option<Retired>,
    /// Lease holders of the copy's processes that were cleared.
    pub holders_cleared: usize,
    /// Each worker's position in the copy, where it resumes.
    pub positions: Positions,
}

impl std::fmt::Display for RestoreReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "restored {}: {} bytes, {} pages in {:.2} s (format {}",
            self.store.display(),
            self.bytes,
            self.pages,
            self.seconds,
            self.version,
        )?;
        if self.version < SCHEMA_VERSION {
            write!(f, ", brought to {SCHEMA_VERSION}")?;
        }
        write!(f, "); {} stale lease holders cleared", self.holders_cleared)?;
        match self.manifest {
            Verdict::Verified(entries) => write!(
                f,
                "\n  content verified against the backup's manifest ({} tables and the schema)",
                entries.saturating_sub(1)
            )?,
            Verdict::Missing => write!(
                f,
                "\n  content NOT verified: the copy has no manifest (--allow-no-manifest)"
            )?,
        }
        if let Some(Retired { after, through }) = self.retired {
            write!(
                f,
                "\n  event ids {} to {through} retired: a client positioned there gets 410 or \
                 a reset; new ids start at {}",
                after + 1,
                through.saturating_add(2)
            )?;
        }
        for (name, position) in &self.positions {
            let at = position.as_deref().unwrap_or("none");
            write!(f, "\n  worker {name} resumes after position {at}")?;
        }
        Ok(())
    }
}

/// Replaces the store at `store` with the backup `from`; `now_ms` judges lease expiry
/// and sets the floor of the event ids retired.
pub fn restore(
    from: &Path,
    store: &Path,
    now_ms: i64,
    options: RestoreOptions,
    progress: &mut dyn FnMut(Progress),
) -> anyhow::Result<RestoreReport> {
    let started = Instant::now();
    check_source(from, store)?;
    if let Some(parent) = store.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent)
            .with_context(|| format!("creating {}", parent.display()))?;
    }
    let _lock = StoreLock::exclusive(store).map_err(|error| match error {
        LockError::Busy(lock) => anyhow::anyhow!(
            "{} is in use: a running socialite process (server, seed, rebuild or backup) \
             holds {}; stop it before restoring",
            store.display(),
            lock.display()
        ),
        LockError::Io(error) => error,
    })?;
    let replaced_newest = match store.exists() {
        true => inspect_replaced(store, now_ms)?,
        false => None,
    };
    let temp = TempFile::beside(store, "restore")?;
    copy_file(from, temp.path(), progress)?;
    progress(Progress::Phase("verifying"));
    let conn = Connection::open_with_flags(
        temp.path(),
        OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )?;
    let refusing = || format!("refusing {}", from.display());
    let verified =
        verify::verify(temp.path(), &conn, options.allow_no_manifest).with_context(refusing)?;
    // Against the machine's clock: `now_ms` may be held back (tests of the id floor).
    verify::check_times(&conn, crate::domain::now_ms()).with_context(refusing)?;
    verify::check_reposts(&conn).with_context(refusing)?;
    progress(Progress::Phase("preparing"));
    conn.execute_batch("BEGIN IMMEDIATE")?;
    manifest::remove(&conn)?;
    super::set_up(&conn)
        .context("it cannot be brought to this socialite's format")
        .with_context(refusing)?;
    let (holders_cleared, positions) = clear_holders(&conn)?;
    let retired = ids::retire(&conn, replaced_newest, now_ms)?;
    conn.execute_batch("COMMIT")?;
    let mode: String = conn.query_row("PRAGMA journal_mode=DELETE", [], |row| row.get(0))?;
    anyhow::ensure!(mode.eq_ignore_ascii_case("delete"), "journal mode {mode}");
    let pages: i64 = conn.query_row("PRAGMA page_count", [], |row| row.get(0))?;
    conn.close().map_err(|(_, error)| error)?;
    progress(Progress::Phase("replacing"));
    retire(store)?;
    let bytes = temp.commit(store)?;
    Ok(RestoreReport {
        store: store.to_path_buf(),
        bytes,
        pages: pages as u64,
        seconds: started.elapsed().as_secs_f64(),
        version: verified.version,
        manifest: verified.manifest,
        retired,
        holders_cleared,
        positions,
    })
}

/// `from` must be a closed file other than the store and its companions.
fn check_source(from: &Path, store: &Path) -> anyhow::Result<()> {
    anyhow::ensure!(from.is_file(), "{} is not a file", from.display());
    let from_real = std::fs::canonicalize(from)?;
    if store.exists() {
        let store_real = std::fs::canonicalize(store)?;
        let ours = sqlite_files(&store_real)
            .into_iter()
            .chain([lock_path(&store_real)]);
        for file in ours {
            if file == from_real {
                bail!("{} is the store itself or one of its files", from.display());
            }
        }
    }
    // A database closed cleanly has no journal with content beside it; one that has is
    // in use or crashed, and its file alone is not the whole of it.
    let [_, wal, _, journal] = sqlite_files(from);
    for journal in [wal, journal] {
        if journal.metadata().is_ok_and(|m| m.len() > 0) {
            bail!(
                "{} has {} beside it: it is a database in use or not closed cleanly, not a \
                 backup; take one with `socialite backup`",
                from.display(),
                journal.display()
            );
        }
    }
    Ok(())
}

/// Refuses while a worker lease of the store is held and unexpired; returns the newest
/// change-feed id the store issued. A store that cannot be read (a damaged file being
/// replaced) is let through, its newest id unknown: the lock file already showed that no
/// process of this socialite has it open.
fn inspect_replaced(store: &Path, now_ms: i64) -> anyhow::Result<Option<i64>> {
    let (live, newest) = match read_replaced(store, now_ms) {
        Ok(found) => found,
        Err(error) => {
            tracing::warn!(error = %format!("{error:#}"), "the store's leases and change feed cannot be read; replacing it anyway");
            return Ok(None);
        }
    };
    if let Some((name, holder, expires_at)) = live.first() {
        let seconds = (expires_at - now_ms) as f64 / 1000.0;
        bail!(
            "{} may be in use: worker lease {name} is held by {holder} for another {seconds:.1} s \
             ({} live leases). A server that does not take {} (an older socialite, or one on \
             another host) may be running on it: stop it. If its process is gone, the lease \
             expires by itself: restore again after that",
            store.display(),
            live.len(),
            lock_path(store).display()
        );
    }
    Ok(Some(newest))
}

/// The store's live leases (name, holder, expiry) and its newest change-feed id.
type LiveLeases = Vec<(String, String, i64)>;

fn read_replaced(store: &Path, now_ms: i64) -> anyhow::Result<(LiveLeases, i64)> {
    // Read so that a refused restore changes no file: read-only never checkpoints, and
    // without a WAL (no connection has the file open, none crashed with one) the file
    // alone is the store, read as immutable so that no WAL or shared memory is created.
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let [_, wal, ..] = sqlite_files(store);
    let conn = if wal.metadata().is_ok_and(|m| m.len() > 0) {
        Connection::open_with_flags(store, flags)?
    } else {
        let uri = format!("file:{}?immutable=1", uri_path(store)?);
        Connection::open_with_flags(uri, flags | OpenFlags::SQLITE_OPEN_URI)?
    };
    let newest = ids::newest_issued(&conn)?;
    if !has_table(&conn, "leases")? {
        return Ok((Vec::new(), newest));
    }
    let mut stmt = conn.prepare(
        "SELECT name, holder, expires_at FROM leases
          WHERE holder IS NOT NULL AND expires_at > ?1 ORDER BY expires_at DESC",
    )?;
    let rows = stmt.query_map(params![now_ms], |row| {
        Ok((row.get(0)?, row.get(1)?, row.get(2)?))
    })?;
    Ok((rows.collect::<rusqlite::Result<_>>()?, newest))
}

/// `path` as the path of a `file:` URI: absolute, with every byte other than unreserved
/// characters and `/` percent-encoded.
fn uri_path(path: &Path) -> anyhow::Result<String> {
    let path = std::path::absolute(path)?;
    let mut encoded = String::new();
    for byte in path.as_os_str().as_encoded_bytes() {
        match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' | b'/' => {
                encoded.push(*byte as char)
            }
            _ => encoded.push_str(&format!("%{byte:02X}")),
        }
    }
    Ok(encoded)
}

fn copy_file(from: &Path, to: &Path, progress: &mut dyn FnMut(Progress)) -> anyhow::Result<()> {
    let mut source =
        std::fs::File::open(from).with_context(|| format!("opening {}", from.display()))?;
    let total = source.metadata()?.len();
    let mut dest = std::fs::File::create(to)?;
    let mut buffer = vec![0; CHUNK];
    let mut done = 0;
    loop {
        let n = source.read(&mut buffer)?;
        if n == 0 {
            break;
        }
        dest.write_all(&buffer[..n])?;
        done += n as u64;
        progress(Progress::Copied { done, total });
    }
    progress(Progress::Copied { done, total });
    Ok(())
}

/// Clears the copy's lease holders, keeping versions and positions; returns how many
/// were held and every lease's position.
fn clear_holders(conn: &Connection) -> anyhow::Result<(usize, Positions)> {
    if !has_table(conn, "leases")? {
        return Ok((0, Vec::new()));
    }
    let cleared = conn.execute(
        "UPDATE leases SET holder = NULL, expires_at = 0 WHERE holder IS NOT NULL",
        [],
    )?;
    let mut stmt = conn.prepare("SELECT name, position FROM leases ORDER BY name")?;
    let positions = stmt
        .query_map([], |row| Ok((row.get(0)?, row.get(1)?)))?
        .collect::<rusqlite::Result<_>>()?;
    Ok((cleared, positions))
}

/// Leaves nothing of the old store that SQLite would apply to the new file: a clean
/// close checkpoints the WAL and removes it with the shared memory; what a damaged store
/// leaves behind is removed by hand. Its content is being replaced: only a crash between
/// here and the rename could cost it, and only if it could not be checkpointed.
fn retire(store: &Path) -> anyhow::Result<()> {
    if store.exists() {
        let checkpointed = Connection::open_with_flags(store, OpenFlags::SQLITE_OPEN_READ_WRITE)
            .and_then(|conn| {
                conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))?;
                conn.close().map_err(|(_, error)| error)
            });
        if let Err(error) = checkpointed {
            tracing::warn!(error = %error, "the old store could not be checkpointed");
        }
    }
    for companion in &sqlite_files(store)[1..] {
        match std::fs::remove_file(companion) {
            Ok(()) => {}
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
            // A WAL left beside the new file would be replayed into it: stop here.
            Err(error) => {
                return Err(anyhow::Error::new(error)
                    .context(format!("removing {} of the old store", companion.display())));
            }
        }
    }
    Ok(())
}
