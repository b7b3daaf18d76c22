//! One step of a [`Runner`]: take the lease, read a batch, apply it while the lease is
//! kept (isolating poison), commit its last position, and record the lag.

use super::{Point, Runner, Step};
use crate::domain::{Change, Fence};
use crate::store::{StoreError, StoreResult};

/// The lag in changes is counted up to this many; a gauge at the cap means at least.
const BACKLOG_CAP: u64 = 1_000_000;

impl Runner {
    /// At most one batch: acquire, read, apply, commit. An error leaves the position
    /// where it was.
    pub async fn step(&mut self) -> StoreResult<Step> {
        let mut result = self.step_inner().await;
        if let (Ok(Step::Idle | Step::Applied(_)), Some((version, _))) = (&result, &self.held) {
            let fence = self.fence(*version);
            let now_ms = self.clock.now_ms();
            match self.holding(&fence, self.worker.upkeep(now_ms)).await {
                Ok(()) => {}
                Err(StoreError::Fenced(_)) => result = Ok(self.lost()),
                Err(error) => {
                    let name = self.name();
                    tracing::warn!(worker = name, error = %error, "the worker's upkeep failed");
                    metrics::counter!("socialite_worker_upkeep_failures_total", "worker" => name)
                        .increment(1);
                    let text = format!("upkeep: {error}");
                    self.update(|s| s.last_error = Some(text));
                }
            }
        }
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
            // Nothing is known of what waits until this holder's first step ends.
            self.update(|s| s.lag_changes = s.lag_changes.max(1));
        }
        let (version, position) = self.held.clone().expect("held");
        let fence = self.fence(version);
        self.update(|s| {
            s.held = true;
            s.version = Some(version);
        });

        let limit = self.batch;
        let batch = match self.feed.changes(position.as_ref(), limit).await {
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
            // The batch needs history the sources no longer keep: rebuild instead.
            Err(StoreError::HistoryLost(at)) => return self.rebuild(&fence, &at).await,
            Err(StoreError::Fenced(_)) => {
                metrics::counter!("socialite_worker_fenced_total", "worker" => name).increment(1);
                // Whoever takes the lease next may be as slow: this process, when it
                // holds it again, tries a batch half the size.
                self.batch = (batch.len() / 2).max(1);
                tracing::info!(
                    worker = name,
                    next = self.batch,
                    "a batch outlived its lease; smaller batches from here"
                );
                return Ok(self.lost());
            }
            Err(error) => return Err(error),
        }
        self.hooks.at(name, Point::Applied).await?;
        crate::faults::point("worker.applied").await;
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
        tracing::debug!(
            worker = name,
            version,
            applied,
            first = %batch[0].position.0,
            last = %last.position.0,
            "applied and committed a batch"
        );
        let full = applied >= limit;
        if full {
            self.batch = (self.batch * 2).min(self.settings.batch_size.max(1));
        }
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
        self.holding(fence, self.worker.apply(batch, fence)).await
    }

    /// Runs `work` while a timer keeps the lease (see [`Runner::apply_holding`]).
    async fn holding(
        &self,
        fence: &Fence,
        work: impl std::future::Future<Output = StoreResult<()>>,
    ) -> StoreResult<()> {
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
            done = work => done,
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
}
