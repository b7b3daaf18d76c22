//! The worker runtime: one [`Runner`] per worker, driven one [`Runner::step`] at a time.
//!
//! A step is: take or extend the lease; on a change of ownership re-read the committed
//! position from the lease (never trust memory); read at most one batch after it; apply
//! it with every effect fenced by the lease's version; commit the batch's last position,
//! conditional on still holding the lease at that version. So:
//! - the position moves only after the effect (a crash in between replays the batch, and
//!   effects are idempotent);
//! - a holder that paused past its lease cannot commit, and its effects are refused by
//!   the fence, so it stops and goes back to acquiring;
//! - with no position at all the read starts at the oldest change the feed still holds;
//! - when the feed no longer holds the position (`HistoryLost`), the worker rebuilds its
//!   derived data from the sources and continues from the feed's head as it was before
//!   the rebuild, logged and counted, never skipped silently.

use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use serde::Serialize;

pub use super::control::{Clock, Hooks, ManualClock, NoHooks, Point, SystemClock};
use crate::domain::{Change, ChangePosition, Fence};
use crate::store::{ChangeFeed, LeaseStore, StoreError, StoreResult};

/// The lag in changes is counted up to this many; a gauge at the cap means at least.
const BACKLOG_CAP: u64 = 1_000_000;

/// A consumer of the change feed that keeps some derived data in step.
#[async_trait]
pub trait Worker: Send + Sync + 'static {
    /// The lease name, and the label in metrics and `/v1/workers`.
    fn name(&self) -> &'static str;
    /// Applies `changes` in order. Every effect is idempotent (a replay changes nothing)
    /// and fenced: an effect refused by the fence returns `StoreError::Fenced`.
    async fn apply(&self, changes: &[Change], fence: &Fence) -> StoreResult<()>;
    /// Recomputes all derived data from the sources, for when history was lost.
    async fn rebuild(&self, fence: &Fence) -> StoreResult<()>;
    /// Rebuilds and returns the position to continue from: by default `head`, the
    /// feed's head noted before the rebuild. A worker whose rebuild reads a snapshot
    /// returns that snapshot's position instead.
    async fn rebuild_to(
        &self,
        fence: &Fence,
        head: Option<ChangePosition>,
    ) -> StoreResult<Option<ChangePosition>> {
        self.rebuild(fence).await?;
        Ok(head)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RunnerSettings {
    pub lease_ttl_ms: i64,
    pub batch_size: usize,
    /// While a batch is applied, the lease is refreshed this often; a refused refresh
    /// stops the batch at once.
    pub refresh_ms: u64,
}

/// What one step did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// Another process holds the lease.
    Standby,
    /// Holding the lease, nothing new to apply.
    Idle,
    /// Applied and committed this many changes.
    Applied(usize),
    /// History was lost: derived data was rebuilt and the position moved to the head.
    Rebuilt,
    /// The lease was lost during the step; nothing was committed.
    LostLease,
}

/// What `/v1/workers` shows of a worker in this process.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Status {
    pub held: bool,
    pub version: Option<u64>,
    pub position: Option<String>,
    /// Seconds between the newest applied change and the step that applied it, 0 when
    /// caught up.
    pub lag_seconds: f64,
    /// Seconds from the write of the newest change of the last applied batch to its
    /// commit: how long derived data trailed its source, caught up or not.
    pub delay_seconds: f64,
    /// Changes waiting after the last step, where the feed can count them (see
    /// `ChangeFeed::backlog`); otherwise 1 after a full batch.
    pub lag_changes: u64,
    pub processed: u64,
    pub rebuilds: u64,
    /// Rebuilds forced by history lost (a trimmed position), each logged as an error.
    pub history_lost: u64,
    /// Changes skipped as poison (malformed), each logged as an error.
    pub quarantined: u64,
    pub last_error: Option<String>,
}

pub struct Runner {
    worker: Arc<dyn Worker>,
    leases: Arc<dyn LeaseStore>,
    feed: Arc<dyn ChangeFeed>,
    clock: Arc<dyn Clock>,
    hooks: Arc<dyn Hooks>,
    settings: RunnerSettings,
    holder: String,
    /// The version held and the position committed under it, as read from the lease.
    held: Option<(u64, Option<ChangePosition>)>,
    status: Arc<Mutex<Status>>,
}

impl Runner {
    pub fn new(
        worker: Arc<dyn Worker>,
        leases: Arc<dyn LeaseStore>,
        feed: Arc<dyn ChangeFeed>,
        clock: Arc<dyn Clock>,
        holder: impl Into<String>,
        settings: RunnerSettings,
    ) -> Self {
        Runner {
            worker,
            leases,
            feed,
            clock,
            hooks: Arc::new(NoHooks),
            settings,
            holder: holder.into(),
            held: None,
            status: Arc::default(),
        }
    }

    pub fn with_hooks(mut self, hooks: Arc<dyn Hooks>) -> Self {
        self.hooks = hooks;
        self
    }

    pub fn name(&self) -> &'static str {
        self.worker.name()
    }

    pub fn status(&self) -> Arc<Mutex<Status>> {
        self.status.clone()
    }

    fn fence(&self, version: u64) -> Fence {
        Fence {
            lease: self.worker.name().to_owned(),
            holder: self.holder.clone(),
            version,
        }
    }

    fn update(&self, f: impl FnOnce(&mut Status)) {
        f(&mut self.status.lock().unwrap_or_else(|p| p.into_inner()));
    }

    fn lost(&mut self) -> Step {
        self.held = None;
        self.update(|s| s.held = false);
        metrics::counter!("socialite_worker_lease_losses_total", "worker" => self.name())
            .increment(1);
        metrics::gauge!("socialite_worker_lease_held", "worker" => self.name()).set(0.0);
        tracing::warn!(worker = self.name(), "lease lost; back to acquiring");
        Step::LostLease
    }

    /// At most one batch: acquire, read, apply, commit. An error leaves the position
    /// where it was.
    pub async fn step(&mut self) -> StoreResult<Step> {
        let result = self.step_inner().await;
        if let Err(error) = &result {
            let text = error.to_string();
            self.update(|s| s.last_error = Some(text));
        }
        result
    }

    async fn step_inner(&mut self) -> StoreResult<Step> {
        let name = self.worker.name();
        let ttl = self.settings.lease_ttl_ms;
        let lease = self
            .leases
            .acquire(name, &self.holder, self.clock.now_ms(), ttl)
            .await?;
        if !lease.held_by(&self.holder) {
            if self.held.take().is_some() {
                self.lost();
            }
            return Ok(Step::Standby);
        }
        // A new or regained lease: the committed position is the lease's, not ours.
        if self.held.as_ref().map(|(v, _)| *v) != Some(lease.version) {
            metrics::counter!("socialite_worker_lease_acquisitions_total", "worker" => name)
                .increment(1);
            metrics::gauge!("socialite_worker_lease_held", "worker" => name).set(1.0);
            tracing::info!(worker = name, version = lease.version, "lease acquired");
            self.held = Some((lease.version, lease.position.clone()));
        }
        let (version, position) = self.held.clone().expect("held");
        let fence = self.fence(version);
        self.update(|s| {
            s.held = true;
            s.version = Some(version);
        });

        let batch = match self
            .feed
            .changes(position.as_ref(), self.settings.batch_size)
            .await
        {
            Ok(batch) => batch,
            Err(StoreError::HistoryLost(at)) => return self.rebuild(&fence, &at).await,
            Err(StoreError::NoPosition(why)) => return self.bootstrap(&fence, &why).await,
            Err(error) => return Err(error),
        };
        self.hooks.at(name, Point::Read).await?;
        let Some(last) = batch.last() else {
            self.record_lag(0.0, 0);
            return Ok(Step::Idle);
        };
        let applied = match self.apply_holding(&batch, &fence).await {
            // Find the poison: one change at a time, quarantining what can never apply.
            Err(StoreError::Poison(_)) => self.apply_isolating(&batch, &fence).await,
            other => other,
        };
        match applied {
            Ok(()) => {}
            Err(StoreError::Fenced(_)) => {
                metrics::counter!("socialite_worker_fenced_total", "worker" => name).increment(1);
                return Ok(self.lost());
            }
            Err(error) => return Err(error),
        }
        self.hooks.at(name, Point::Applied).await?;
        let committed = self
            .leases
            .commit(
                name,
                &self.holder,
                version,
                &last.position,
                self.clock.now_ms(),
                ttl,
            )
            .await?;
        if !committed {
            return Ok(self.lost());
        }
        let applied = batch.len();
        let full = applied >= self.settings.batch_size;
        let lag_seconds = if full {
            ((self.clock.now_ms() - last.at_ms).max(0) as f64) / 1000.0
        } else {
            0.0
        };
        self.held = Some((version, Some(last.position.clone())));
        let delay_seconds = ((self.clock.now_ms() - last.at_ms).max(0) as f64) / 1000.0;
        metrics::histogram!("socialite_worker_delay_seconds", "worker" => name)
            .record(delay_seconds);
        self.update(|s| {
            s.delay_seconds = delay_seconds;
            s.position = Some(last.position.0.clone());
            s.processed += applied as u64;
            s.last_error = None;
        });
        metrics::counter!("socialite_worker_processed_total", "worker" => name)
            .increment(applied as u64);
        // Only a full batch leaves changes waiting; where the feed cannot count them,
        // at least one is known to.
        let waiting = match full {
            true => self
                .feed
                .backlog(&last.position, BACKLOG_CAP)
                .await
                .ok()
                .flatten()
                .unwrap_or(1),
            false => 0,
        };
        self.record_lag(lag_seconds, waiting);
        Ok(Step::Applied(applied))
    }

    /// Lag after a step, in the status and the gauges: seconds behind the newest change
    /// applied, and how many changes wait (see `ChangeFeed::backlog`).
    fn record_lag(&self, seconds: f64, waiting: u64) {
        self.update(|s| {
            s.lag_seconds = seconds;
            s.lag_changes = waiting;
        });
        let name = self.name();
        metrics::gauge!("socialite_worker_lag_seconds", "worker" => name).set(seconds);
        metrics::gauge!("socialite_worker_lag_changes", "worker" => name).set(waiting as f64);
    }

    /// Applies `batch` while a timer keeps the lease: a refresh the store refuses (or
    /// cannot make) ends the batch at once as `Fenced`, before the lease could expire
    /// under it. (A batch that outlives its lease anyway still cannot commit.)
    async fn apply_holding(&self, batch: &[Change], fence: &Fence) -> StoreResult<()> {
        let keep = async {
            let every = std::time::Duration::from_millis(self.settings.refresh_ms.max(1));
            loop {
                tokio::time::sleep(every).await;
                let kept = self
                    .leases
                    .refresh(
                        &fence.lease,
                        &fence.holder,
                        fence.version,
                        self.clock.now_ms(),
                        self.settings.lease_ttl_ms,
                    )
                    .await;
                if !matches!(kept, Ok(true)) {
                    tracing::warn!(worker = %fence.lease, "lease refresh failed during a batch; standing down");
                    return StoreError::Fenced(fence.lease.clone());
                }
            }
        };
        tokio::select! {
            applied = self.worker.apply(batch, fence) => applied,
            lost = keep => Err(lost),
        }
    }

    /// Applies `batch` one change at a time; a change that fails as poison is logged,
    /// counted and skipped (the design's quarantine), any other failure ends the step
    /// with the position unmoved (what was applied replays idempotently).
    async fn apply_isolating(&self, batch: &[Change], fence: &Fence) -> StoreResult<()> {
        for change in batch {
            match self
                .apply_holding(std::slice::from_ref(change), fence)
                .await
            {
                Ok(()) => {}
                Err(StoreError::Poison(why)) => {
                    tracing::error!(
                        worker = %fence.lease,
                        position = %change.position.0,
                        collection = %change.collection,
                        key = %change.key,
                        reason = %why,
                        "quarantined a change that can never be applied"
                    );
                    metrics::counter!("socialite_worker_quarantined_total", "worker" => self.name())
                        .increment(1);
                    self.update(|s| {
                        s.quarantined += 1;
                        s.last_error = Some(format!("quarantined {}: {why}", change.position.0));
                    });
                }
                Err(error) => return Err(error),
            }
        }
        Ok(())
    }

    /// History lost: note the head first, rebuild from the sources, then continue from
    /// that head. Changes after the head are applied afterwards, idempotently.
    async fn rebuild(&mut self, fence: &Fence, lost_at: &str) -> StoreResult<Step> {
        let name = self.worker.name();
        tracing::error!(
            worker = name,
            position = lost_at,
            "change feed history lost; rebuilding derived data"
        );
        metrics::counter!("socialite_worker_history_lost_total", "worker" => name).increment(1);
        self.update(|s| s.history_lost += 1);
        self.rebuild_now(fence, false).await
    }

    /// A first start on a feed that needs a position to begin (the aggregates' event
    /// log): build from the sources. Not a loss, so neither an error nor counted as one.
    async fn bootstrap(&mut self, fence: &Fence, why: &str) -> StoreResult<Step> {
        tracing::info!(
            worker = self.worker.name(),
            reason = why,
            "first start; building derived data from the sources"
        );
        self.rebuild_now(fence, false).await
    }

    /// Rebuilds under `fence` and commits the position the rebuild continues from.
    async fn rebuild_now(&mut self, fence: &Fence, hooked: bool) -> StoreResult<Step> {
        let name = self.worker.name();
        let head = self.feed.head().await?;
        let head = match self.worker.rebuild_to(fence, head).await {
            Ok(position) => position,
            Err(StoreError::Fenced(_)) => return Ok(self.lost()),
            Err(error) => return Err(error),
        };
        if hooked {
            self.hooks.at(name, Point::Applied).await?;
        }
        if let Some(head) = &head {
            let committed = self
                .leases
                .commit(
                    name,
                    &self.holder,
                    fence.version,
                    head,
                    self.clock.now_ms(),
                    self.settings.lease_ttl_ms,
                )
                .await?;
            if !committed {
                return Ok(self.lost());
            }
        }
        self.held = Some((fence.version, head.clone()));
        self.update(|s| {
            s.rebuilds += 1;
            s.position = head.map(|h| h.0);
        });
        Ok(Step::Rebuilt)
    }

    /// A rebuild on request (`socialite aggregates rebuild`): takes the lease (a holder
    /// named for its lock type), rebuilds, commits the rebuild's position and releases.
    /// `Standby` when another holder has the lease. The `Read` hook runs once the lease
    /// is held, `Applied` once the rebuild is written and before its commit.
    pub async fn rebuild_once(&mut self) -> StoreResult<Step> {
        let name = self.worker.name();
        let lease = self
            .leases
            .acquire(
                name,
                &self.holder,
                self.clock.now_ms(),
                self.settings.lease_ttl_ms,
            )
            .await?;
        if !lease.held_by(&self.holder) {
            return Ok(Step::Standby);
        }
        self.held = Some((lease.version, lease.position.clone()));
        let fence = self.fence(lease.version);
        self.hooks.at(name, Point::Read).await?;
        let step = self.rebuild_now(&fence, true).await?;
        if step == Step::Rebuilt {
            self.release().await?;
        }
        Ok(step)
    }

    /// Gives the lease up (on shutdown), so another process takes over at once.
    pub async fn release(&mut self) -> StoreResult<()> {
        if let Some((version, _)) = self.held.take() {
            self.leases
                .release(self.worker.name(), &self.holder, version)
                .await?;
            self.update(|s| s.held = false);
            metrics::gauge!("socialite_worker_lease_held", "worker" => self.name()).set(0.0);
        }
        Ok(())
    }
}
