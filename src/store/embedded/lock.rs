//! Who has the store open: an advisory lock on a file beside it (`<store>-lock`).
//!
//! Every process that opens the store (a server, `seed`, `aggregates rebuild`, a
//! backup) holds a shared lock for as long as the store is open; `restore` takes it
//! exclusively, so it runs only while nobody has the store open, and nobody can open
//! the store while it runs. The kernel drops a process's lock when the process ends,
//! however it ends: a server killed with `kill -9` leaves nothing behind that could
//! block a restore. The lock file itself is never removed (removing it would let two
//! processes lock two different files of the same name).

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
    let mut name = store.as_os_str().to_owned();
    name.push("-lock");
    PathBuf::from(name)
}

impl StoreLock {
    /// The lock of a process using the store: shared with every other user, refused
    /// while a restore replaces the file.
    pub fn shared(store: &Path) -> Result<StoreLock, LockError> {
        StoreLock::take(store, File::try_lock_shared)
    }

    /// The lock of a restore: refused while any process has the store open.
    pub fn exclusive(store: &Path) -> Result<StoreLock, LockError> {
        StoreLock::take(store, File::try_lock)
    }

    fn take(
        store: &Path,
        lock: fn(&File) -> Result<(), TryLockError>,
    ) -> Result<StoreLock, LockError> {
        let path = lock_path(store);
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
