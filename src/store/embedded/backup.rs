//! `socialite backup` on the embedded store: a consistent copy of the live file through
//! SQLite's online backup API.
//!
//! The copy is one snapshot: the source connection opens a read transaction before the
//! first page is copied and keeps it until the last, so the backup never restarts
//! however busy the writers are (in WAL mode a reader blocks no writer; the WAL only
//! grows until the copy is done, because a checkpoint cannot pass the reader). Every
//! write acknowledged before the backup began is in it; none that began after it ended
//! is. The copy is written to a temporary file beside the target, switched to a
//! rollback journal so that it is one self-contained file, flushed to disk, and only
//! then renamed over the target: a failed backup leaves no half file there. Before the
//! rename, the copy gets its manifest (`manifest.rs`): every table's row count and
//! digest, which `restore` checks the copy against.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use rusqlite::backup::{Backup, StepResult};
use rusqlite::{Connection, OpenFlags, OptionalExtension};

use super::lock::{LockError, StoreLock};

pub(super) mod manifest;

/// Pages copied per backup step, between two progress reports (16 MiB of 4 KiB pages).
const PAGES_PER_STEP: i32 = 4096;
/// How long a step may keep finding the destination busy before the backup gives up.
const BUSY_LIMIT: Duration = Duration::from_secs(30);

/// What a backup or a restore reports as it goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Progress {
    /// `done` of `total` units copied: pages for a backup, bytes for a restore.
    Copied { done: u64, total: u64 },
    /// A step whose length cannot be told in advance began.
    Phase(&'static str),
}

/// What a backup wrote.
#[derive(Debug, Clone, PartialEq)]
pub struct BackupReport {
    pub file: PathBuf,
    pub bytes: u64,
    pub pages: u64,
    pub seconds: f64,
    /// Tables in the copy's manifest (besides the schema's own entry).
    pub manifest_tables: usize,
    /// The newest change-feed position the copy's store handed out (its newest change,
    /// or past it after a bulk load or a restore): the copy holds every write up to it.
    pub change_feed_head: Option<i64>,
}

impl std::fmt::Display for BackupReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "backed up to {}: {} bytes, {} pages in {:.2} s; manifest of {} tables and the schema; \
             change feed at {}",
            self.file.display(),
            self.bytes,
            self.pages,
            self.seconds,
            self.manifest_tables,
            self.change_feed_head
                .map_or_else(|| "the start".to_owned(), |p| p.to_string()),
        )
    }
}

/// Copies the store at `store` into `to` while servers keep using it, reporting the
/// pages copied after every step.
pub fn backup(
    store: &Path,
    to: &Path,
    progress: &mut dyn FnMut(Progress),
) -> anyhow::Result<BackupReport> {
    backup_in_steps(store, to, PAGES_PER_STEP, progress)
}

/// [`backup`], copying `pages_per_step` pages per step (tests take small steps).
pub fn backup_in_steps(
    store: &Path,
    to: &Path,
    pages_per_step: i32,
    progress: &mut dyn FnMut(Progress),
) -> anyhow::Result<BackupReport> {
    let started = Instant::now();
    anyhow::ensure!(
        store.is_file(),
        "there is no store at {} (storage.path): nothing to back up",
        store.display()
    );
    refuse_store_files(store, to)?;
    // Shared with the servers; refused only while a restore replaces the file.
    let _lock = StoreLock::shared(store).map_err(|error| match error {
        LockError::Busy(_) => anyhow::anyhow!(
            "{} is being replaced by `socialite restore`; back up once it is done",
            store.display()
        ),
        LockError::Io(error) => error,
    })?;
    let source = Connection::open_with_flags(
        store,
        OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .with_context(|| format!("opening {}", store.display()))?;
    source.busy_timeout(Duration::from_secs(5))?;
    let temp = TempFile::beside(to, "partial")?;
    let head = copy_snapshot(&source, temp.path(), pages_per_step, progress)?;
    drop(source);
    progress(Progress::Phase("digesting"));
    let (pages, manifest_tables) = make_standalone(temp.path())?;
    progress(Progress::Phase("flushing"));
    let bytes = temp.commit(to)?;
    Ok(BackupReport {
        file: to.to_path_buf(),
        bytes,
        pages,
        seconds: started.elapsed().as_secs_f64(),
        manifest_tables,
        change_feed_head: head,
    })
}

/// Copies every page of `source`, as of one read transaction, into a new file at
/// `dest`; returns the change-feed head of that snapshot.
fn copy_snapshot(
    source: &Connection,
    dest: &Path,
    pages_per_step: i32,
    progress: &mut dyn FnMut(Progress),
) -> anyhow::Result<Option<i64>> {
    // The snapshot starts at the first read of this transaction, and the backup steps
    // run inside it: SQLite begins no transaction of its own on a source that has one.
    source.execute_batch("BEGIN DEFERRED")?;
    let newest: Option<i64> = source
        .query_row("SELECT max(pos) FROM changes", [], |row| row.get(0))
        .context("reading the change feed: is this a socialite store?")?;
    // A bulk load or a restore moves the sequence past the newest row: positions up to
    // it are spent, and the workers may stand there.
    let sequence: Option<i64> = source
        .query_row(
            "SELECT seq FROM sqlite_sequence WHERE name = 'changes'",
            [],
            |row| row.get(0),
        )
        .optional()?;
    let head = newest.max(sequence).filter(|head| *head > 0);
    let mut copy =
        Connection::open(dest).with_context(|| format!("creating {}", dest.display()))?;
    {
        let backup = Backup::new(source, &mut copy)?;
        let mut busy_since: Option<Instant> = None;
        loop {
            let step = backup.step(pages_per_step)?;
            let p = backup.progress();
            let total = p.pagecount.max(0) as u64;
            progress(Progress::Copied {
                done: total.saturating_sub(p.remaining.max(0) as u64),
                total,
            });
            match step {
                StepResult::Done => break,
                StepResult::More => busy_since = None,
                // Only this process uses the destination, so these are transient.
                _ => {
                    let since = *busy_since.get_or_insert_with(Instant::now);
                    if since.elapsed() > BUSY_LIMIT {
                        bail!("the backup found its files locked for {BUSY_LIMIT:?}");
                    }
                    std::thread::sleep(Duration::from_millis(10));
                }
            }
        }
    }
    source.execute_batch("COMMIT")?;
    copy.close().map_err(|(_, error)| error)?;
    Ok(head)
}

/// Switches the copy (whose header says WAL, as its source's did) to a rollback journal,
/// so it is one file that can be moved and opened alone, and writes its manifest;
/// returns its page count and the tables in the manifest.
fn make_standalone(file: &Path) -> anyhow::Result<(u64, usize)> {
    let mut conn = Connection::open(file)?;
    let mode: String = conn.query_row("PRAGMA journal_mode=DELETE", [], |row| row.get(0))?;
    anyhow::ensure!(
        mode.eq_ignore_ascii_case("delete"),
        "SQLite left the copy in journal mode {mode}"
    );
    let entries = manifest::write(&mut conn).context("writing the copy's manifest")?;
    let tables = entries.saturating_sub(1);
    let pages: i64 = conn.query_row("PRAGMA page_count", [], |row| row.get(0))?;
    conn.close().map_err(|(_, error)| error)?;
    Ok((pages as u64, tables))
}

/// Refuses a target that is the store itself or one of the files SQLite keeps beside it.
fn refuse_store_files(store: &Path, to: &Path) -> anyhow::Result<()> {
    let store = std::fs::canonicalize(store)?;
    let Some(name) = to.file_name() else {
        bail!("{} names no file", to.display());
    };
    let dir = match to.parent().filter(|p| !p.as_os_str().is_empty()) {
        Some(dir) => dir.to_path_buf(),
        None => PathBuf::from("."),
    };
    let dir = std::fs::canonicalize(&dir)
        .with_context(|| format!("the directory of {} does not exist", to.display()))?;
    let target = dir.join(name);
    let store_name = store.as_os_str().to_string_lossy();
    let target_name = target.as_os_str().to_string_lossy();
    if target == store || target_name.starts_with(&format!("{store_name}-")) {
        bail!(
            "{} is the store or one of its files: back up to another file",
            to.display()
        );
    }
    Ok(())
}

/// A file being written beside its destination, removed (with any journal SQLite left
/// beside it) unless [`TempFile::commit`] renamed it into place.
pub(super) struct TempFile {
    path: PathBuf,
    committed: bool,
}

impl TempFile {
    /// `.NAME.TAG-PID` in the directory of `dest`, which must exist.
    pub(super) fn beside(dest: &Path, tag: &str) -> anyhow::Result<TempFile> {
        let name = dest
            .file_name()
            .with_context(|| format!("{} names no file", dest.display()))?;
        let dir = dest.parent().unwrap_or(Path::new(""));
        let path = dir.join(format!(
            ".{}.{tag}-{}",
            name.to_string_lossy(),
            std::process::id()
        ));
        let temp = TempFile {
            path,
            committed: false,
        };
        temp.remove();
        Ok(temp)
    }

    pub(super) fn path(&self) -> &Path {
        &self.path
    }

    /// Flushes the file, renames it to `dest` and flushes the directory, so that after a
    /// crash `dest` is either the old file or the whole new one. Returns its size.
    pub(super) fn commit(mut self, dest: &Path) -> anyhow::Result<u64> {
        let file = File::open(&self.path)?;
        file.sync_all()
            .with_context(|| format!("flushing {}", self.path.display()))?;
        let bytes = file.metadata()?.len();
        drop(file);
        std::fs::rename(&self.path, dest)
            .with_context(|| format!("renaming {} to {}", self.path.display(), dest.display()))?;
        self.committed = true;
        sync_dir(dest)?;
        Ok(bytes)
    }

    fn remove(&self) {
        for file in sqlite_files(&self.path) {
            let _ = std::fs::remove_file(file);
        }
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        if !self.committed {
            self.remove();
        }
    }
}

/// A database file and the journals SQLite may keep beside it.
pub(super) fn sqlite_files(db: &Path) -> [PathBuf; 4] {
    let with = |suffix: &str| {
        let mut name = db.as_os_str().to_owned();
        name.push(suffix);
        PathBuf::from(name)
    };
    [
        db.to_path_buf(),
        with("-wal"),
        with("-shm"),
        with("-journal"),
    ]
}

/// Flushes the directory holding `file`, so that a rename into it is durable.
pub(super) fn sync_dir(file: &Path) -> anyhow::Result<()> {
    let dir = match file.parent().filter(|p| !p.as_os_str().is_empty()) {
        Some(dir) => dir,
        None => Path::new("."),
    };
    File::open(dir)
        .and_then(|d| d.sync_all())
        .with_context(|| format!("flushing the directory {}", dir.display()))
}
