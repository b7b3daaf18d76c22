//! Running the workers in the server: one task per worker, each `step()` in a loop,
//! woken by the service after every write (in-process) and at least every
//! `workers.refresh_interval` (to keep the lease, to pick up writes from other processes,
//! and to stand by for a take-over). Shutdown lets the current step finish and commit,
//! then releases the lease so another process takes over at once.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::Serialize;
use tokio::sync::{Notify, watch};
use tokio::task::JoinSet;

use super::runtime::{Runner, Status, Step};
use crate::store::{Lease, LeaseStore, StoreResult};

/// Wakes every worker loop; a wake-up sent while a worker is busy is kept for it.
#[derive(Default)]
pub struct Wakers {
    wakers: Mutex<Vec<Arc<Notify>>>,
}

impl Wakers {
    fn register(&self) -> Arc<Notify> {
        let notify = Arc::new(Notify::new());
        self.wakers
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(notify.clone());
        notify
    }

    /// Called after every write that appends to the change feed.
    pub fn wake_all(&self) {
        for notify in self.wakers.lock().unwrap_or_else(|p| p.into_inner()).iter() {
            notify.notify_one();
        }
    }
}

/// One worker as `/v1/workers` shows it: the lease as stored plus this process's view.
#[derive(Debug, Clone, Serialize)]
pub struct WorkerReport {
    pub name: String,
    pub lease: Option<Lease>,
    pub local: Status,
}

struct Entry {
    name: &'static str,
    status: Arc<Mutex<Status>>,
    /// Steps that found nothing to do, counted so `settle` can wait for fresh ones.
    idle_steps: Arc<AtomicU64>,
    progress: Arc<Notify>,
}

/// The running workers of this process.
pub struct Workers {
    entries: Vec<Entry>,
    leases: Arc<dyn LeaseStore>,
    wakers: Arc<Wakers>,
    shutdown: watch::Sender<bool>,
    tasks: Mutex<Option<JoinSet<()>>>,
}

impl Workers {
    /// Starts a loop per runner. With no runners (`workers.enabled = false`) it only
    /// reports leases.
    pub fn start(
        runners: Vec<Runner>,
        leases: Arc<dyn LeaseStore>,
        wakers: Arc<Wakers>,
        refresh: Duration,
    ) -> Workers {
        let (shutdown, watch) = watch::channel(false);
        let mut tasks = JoinSet::new();
        let mut entries = Vec::new();
        for runner in runners {
            let entry = Entry {
                name: runner.name(),
                status: runner.status(),
                idle_steps: Arc::default(),
                progress: Arc::new(Notify::new()),
            };
            tasks.spawn(run(
                runner,
                wakers.register(),
                entry.idle_steps.clone(),
                entry.progress.clone(),
                refresh,
                watch.clone(),
            ));
            entries.push(entry);
        }
        Workers {
            entries,
            leases,
            wakers,
            shutdown,
            tasks: Mutex::new(Some(tasks)),
        }
    }

    pub fn wakers(&self) -> Arc<Wakers> {
        self.wakers.clone()
    }

    pub async fn report(&self) -> StoreResult<Vec<WorkerReport>> {
        let leases = self.leases.leases().await?;
        let mut reports: Vec<WorkerReport> = self
            .entries
            .iter()
            .map(|e| WorkerReport {
                name: e.name.to_owned(),
                lease: leases.iter().find(|l| l.name == e.name).cloned(),
                local: e.status.lock().unwrap_or_else(|p| p.into_inner()).clone(),
            })
            .collect();
        for lease in leases {
            if !reports.iter().any(|r| r.name == lease.name) {
                reports.push(WorkerReport {
                    name: lease.name.clone(),
                    lease: Some(lease),
                    local: Status::default(),
                });
            }
        }
        Ok(reports)
    }

    /// Waits until every worker of this process has twice found nothing left to do
    /// since the call began: every change committed before the call is applied. For the
    /// seeder and tests; `None` if `deadline` passes first.
    pub async fn settle(&self, deadline: Duration) -> Option<()> {
        let started: Vec<u64> = self
            .entries
            .iter()
            .map(|e| e.idle_steps.load(Ordering::SeqCst))
            .collect();
        tokio::time::timeout(deadline, async {
            for (entry, start) in self.entries.iter().zip(started) {
                loop {
                    let progressed = entry.progress.notified();
                    if entry.idle_steps.load(Ordering::SeqCst) >= start + 2 {
                        break;
                    }
                    self.wakers.wake_all();
                    progressed.await;
                }
            }
        })
        .await
        .ok()
    }

    /// Lets each worker finish its step, commit and release its lease.
    pub async fn stop(&self) {
        let _ = self.shutdown.send(true);
        let tasks = self.tasks.lock().unwrap_or_else(|p| p.into_inner()).take();
        if let Some(mut tasks) = tasks {
            while tasks.join_next().await.is_some() {}
        }
    }
}

async fn run(
    mut runner: Runner,
    wake: Arc<Notify>,
    idle_steps: Arc<AtomicU64>,
    progress: Arc<Notify>,
    refresh: Duration,
    mut shutdown: watch::Receiver<bool>,
) {
    let mut failures: u32 = 0;
    while !*shutdown.borrow() {
        let step = runner.step().await;
        let pause = match &step {
            Ok(Step::Applied(_) | Step::Rebuilt) => None,
            Ok(Step::Idle | Step::Standby | Step::LostLease) => Some(refresh),
            Err(error) => {
                failures = failures.saturating_add(1);
                tracing::warn!(worker = runner.name(), error = %error, "worker step failed");
                // Back off up to the refresh interval, so a persistent fault never spins.
                Some(refresh.min(Duration::from_millis(50u64 << failures.min(10))))
            }
        };
        if step.is_ok() {
            failures = 0;
        }
        if matches!(step, Ok(Step::Idle)) {
            idle_steps.fetch_add(1, Ordering::SeqCst);
        }
        progress.notify_waiters();
        if let Some(pause) = pause {
            tokio::select! {
                _ = wake.notified() => {}
                _ = tokio::time::sleep(pause) => crate::faults::wake_delay().await,
                _ = shutdown.changed() => {}
            }
        }
    }
    if let Err(error) = runner.release().await {
        tracing::warn!(worker = runner.name(), error = %error, "releasing the lease failed");
    }
}
