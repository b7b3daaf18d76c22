//! Rebuilds of a [`Runner`]'s derived data: after history was lost, on a first start
//! with no position, and on request (`socialite aggregates rebuild`); and handing the
//! lease on at shutdown.

use super::{Point, Runner, Step};
use crate::domain::Fence;
use crate::store::{StoreError, StoreResult};

impl Runner {
    /// History lost: note the head first, rebuild from the sources, then continue from
    /// that head. Changes after the head are applied afterwards, idempotently.
    pub(super) async fn rebuild(&mut self, fence: &Fence, lost_at: &str) -> StoreResult<Step> {
        let name = self.worker.name();
        tracing::error!(
            worker = name,
            position = lost_at,
            "change feed history lost; rebuilding derived data"
        );
        metrics::counter!("socialite_worker_history_lost_total", "worker" => name).increment(1);
        self.update(|s| s.history_lost += 1);
        // A holder that loses its lease from here on counts the loss but not the
        // rebuild, which the next holder does (and counts) from the same lost position.
        crate::faults::gate("worker.history_lost", &self.holder).await;
        self.rebuild_now(fence, false).await
    }

    /// A first start on a feed that needs a position to begin (the aggregates' event
    /// log): build from the sources. Not a loss, so neither an error nor counted as one.
    pub(super) async fn bootstrap(&mut self, fence: &Fence, why: &str) -> StoreResult<Step> {
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
