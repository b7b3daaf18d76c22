//! Who has the store open: an advisory lock on a file beside it (`<store>-lock`).
//!
//! Every process that opens the store (a server, `seed`, `aggregates rebuild`, a
//! backup) holds a shared lock for as long as the store is open; `restore` takes it
//! exclusively, so it runs only while nobody has the store open, and nobody can open
//! the store while it runs. The kernel drops a process's lock when the process ends,
//! however it ends: a server killed with `kill -9` leaves nothing behind that could
//! block a restore. The lock file itself is never removed (removing it would let two
//! processes lock two different files of the same name).
//!
//! A second lock file, `<store>-serve-lock`, keeps serving and bulk loading apart: a
//! process serving requests holds it shared ([`StoreLock::serving`]), a `seed` or
//! `import` exclusively for its whole run ([`StoreLock::loading`]), each taken before
//! it checks or sets the load's mark, so the kernel decides which of two racing
//! processes goes first.

use std::fs::{File, OpenOptions, TryLockError};
use std::path::{Path, PathBuf};

use anyhow::Context;

/// A held lock on the store's lock file; dropping it releases the lock.
#[derive(Debug)]
pub struct StoreLock {
    _file: File,
}

/// Why a lock could not be taken.
#[derive(Debug, thiserror::Error)]
pub enum LockError {
    /// Another holder has it in a conflicting mode.
    #[error("{0} is locked by another process")]
    Busy(PathBuf),
    #[error(transparent)]
    Io(#[from] anyhow::Error),
}

/// The lock file of the store at `store`.
pub fn lock_path(store: &Path) -> PathBuf {
    beside(store, "-lock")
}

/// The lock file that keeps serving and bulk loads apart.
pub fn serve_lock_path(store: &Path) -> PathBuf {
    beside(store, "-serve-lock")
}

fn beside(store: &Path, suffix: &str) -> PathBuf {
    let mut name = store.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}

impl StoreLock {
    /// The lock of a process using the store: shared with every other user, refused
    /// while a restore replaces the file.
    pub fn shared(store: &Path) -> Result<StoreLock, LockError> {
        StoreLock::take(lock_path(store), File::try_lock_shared)
    }

    /// The lock of a restore: refused while any process has the store open.
    pub fn exclusive(store: &Path) -> Result<StoreLock, LockError> {
        StoreLock::take(lock_path(store), File::try_lock)
    }

    /// The lock of a process serving requests: shared with other servers, refused while
    /// a bulk load runs.
    pub fn serving(store: &Path) -> Result<StoreLock, LockError> {
        StoreLock::take(serve_lock_path(store), File::try_lock_shared)
    }

    /// The lock of a bulk load: refused while any process serves, or another load runs.
    pub fn loading(store: &Path) -> Result<StoreLock, LockError> {
        StoreLock::take(serve_lock_path(store), File::try_lock)
    }

    fn take(
        path: PathBuf,
        lock: fn(&File) -> Result<(), TryLockError>,
    ) -> Result<StoreLock, LockError> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .with_context(|| format!("opening the lock file {}", path.display()))?;
        match lock(&file) {
            Ok(()) => Ok(StoreLock { _file: file }),
            Err(TryLockError::WouldBlock) => Err(LockError::Busy(path)),
            Err(TryLockError::Error(error)) => Err(LockError::Io(
                anyhow::Error::new(error).context(format!("locking {}", path.display())),
            )),
        }
    }
}
