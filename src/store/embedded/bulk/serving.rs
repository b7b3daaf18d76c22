//! The serve lock on this handle: shared by every registration while serving,
//! exclusive while a bulk load runs (see `lock.rs`).

use super::super::EmbeddedStore;
use super::super::lock::{LockError, StoreLock};
use crate::store::{StoreError, StoreResult};

/// How often, and how far apart, `enter_serving` tries a busy serve lock.
const ENTER_ATTEMPTS: u32 = 5;
const ENTER_RETRY: std::time::Duration = std::time::Duration::from_millis(40);

/// The serve lock this handle holds (see `lock.rs`): shared while serving, with how many
/// registrations hold it, or exclusive while loading.
#[derive(Default)]
pub(in crate::store::embedded) struct Gate {
    serving: std::sync::Mutex<(usize, Option<StoreLock>)>,
    pub(super) loading: std::sync::Mutex<Option<StoreLock>>,
}

pub(super) fn held<T>(mutex: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|poison| poison.into_inner())
}

impl EmbeddedStore {
    /// Takes the serve lock shared (or one more share of it held already): whether it
    /// was taken.
    pub(super) async fn share_serving_lock(&self) -> StoreResult<bool> {
        // A lock this process let go of stays held while a child it forked meanwhile has
        // not yet exec'd (the child shares the open file until then): a load or switch
        // that just finished here can look busy for that long, so a busy lock is tried
        // a few more times before it is taken for a load.
        for attempt in 0..ENTER_ATTEMPTS {
            if attempt > 0 {
                tokio::time::sleep(ENTER_RETRY).await;
            }
            let mut serving = held(&self.inner.gate.serving);
            let taken = match serving.1 {
                Some(_) => Ok(()),
                None => StoreLock::serving(&self.inner.path).map(|lock| serving.1 = Some(lock)),
            };
            match taken {
                Ok(()) => {
                    serving.0 += 1;
                    return Ok(true);
                }
                Err(LockError::Busy(_)) => {}
                Err(LockError::Io(error)) => return Err(StoreError::Backend(error)),
            }
        }
        Ok(false)
    }

    /// Lets go of one registration's share; the lock goes with the last.
    pub(super) fn unshare_serving_lock(&self) {
        let mut serving = held(&self.inner.gate.serving);
        serving.0 = serving.0.saturating_sub(1);
        if serving.0 == 0 {
            serving.1 = None;
        }
    }
}
