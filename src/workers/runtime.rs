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

//!
//! This file holds the [`Worker`] trait, the [`Runner`] and what it reports; the step
//! itself is in `step.rs`, rebuilds and the lease's release in `rebuild.rs`.

use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use serde::Serialize;

pub use super::control::{Clock, Hooks, ManualClock, NoHooks, Point, SystemClock};
use crate::domain::{Change, ChangePosition, Fence};
use crate::store::{ChangeFeed, LeaseStore, StoreResult};

mod rebuild;
mod step;

/// A consumer of the change feed that keeps some derived data in step.
#[async_trait]
pub trait Worker: Send + Sync + 'static {
    /// The lease name, and the label in metrics and `/v1/workers`.
    fn name(&self) -> &'static str;
    /// Applies `changes` in order. Every effect is idempotent (a replay changes nothing)
    /// and fenced: an effect refused by the fence returns `StoreError::Fenced`.
    async fn apply(&self, changes: &[Change], fence: &Fence) -> StoreResult<()>;
    /// Periodic work of the lease holder beside the change feed, run after every step
    /// that held the lease (a batch applied, or none waiting) while the lease is kept,
    /// with the runner's clock: by default none. Like every effect, idempotent and
    /// conditional on the state it writes, never on the lease alone; a failure is
    /// logged and counted and leaves the position alone.
    async fn upkeep(&self, _now_ms: i64) -> StoreResult<()> {
        Ok(())
    }
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
    /// `ChangeFeed::backlog`); otherwise 1 after a full batch. At least 1 from taking
    /// the lease until the first step under it ends.
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
    /// How many changes the next step reads: `batch_size`, halved after a batch that
    /// outlived its lease (one the store is too slow to apply within it would otherwise
    /// be tried again, and lost again, for ever), doubled back after a full one.
    batch: usize,
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
            batch: settings.batch_size.max(1),
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
}
