//! The leases port: one lease per worker name, holding who runs it, until when, the
//! fencing token (`version`) and the last committed change-feed position.
//!
//! A lease is an optimisation: it keeps one process per worker busy and the others idle.
//! The guarantee is the fence: every commit, and every side effect a worker makes, is
//! conditional on `holder` and `version` still being the caller's, so a holder that
//! paused past its lease finds its writes refused.
//!
//! The version changes only when ownership changes (a take-over of an expired or released
//! lease adds one). A lease created from nothing, including after its record was deleted
//! by hand, starts at `now_ms * 1000`, which exceeds every version handed out before
//! unless the creating clock runs behind the previous one by more than the record's age.

use async_trait::async_trait;
use serde::Serialize;

use super::StoreResult;
use crate::domain::ChangePosition;

/// A lease as stored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Lease {
    pub name: String,
    /// `None` once released.
    pub holder: Option<String>,
    pub version: u64,
    pub expires_at_ms: i64,
    /// The last committed position; `None` before the first commit.
    pub position: Option<ChangePosition>,
}

impl Lease {
    pub fn held_by(&self, holder: &str) -> bool {
        self.holder.as_deref() == Some(holder)
    }
}

/// The version a lease created at `now_ms` starts from.
pub fn initial_version(now_ms: i64) -> u64 {
    (now_ms.max(1) as u64).saturating_mul(1000)
}

#[async_trait]
pub trait LeaseStore: Send + Sync + 'static {
    /// One atomic step: extends the lease when `holder` holds it, takes it over (version
    /// + 1) when it is expired or released, creates it when it does not exist. Returns
    /// the lease as it stands afterwards: held by `holder` when this call won.
    async fn acquire(
        &self,
        name: &str,
        holder: &str,
        now_ms: i64,
        ttl_ms: i64,
    ) -> StoreResult<Lease>;
    /// Extends the lease, only while `holder` still holds it at `version`. `false`
    /// means the lease is lost.
    async fn refresh(
        &self,
        name: &str,
        holder: &str,
        version: u64,
        now_ms: i64,
        ttl_ms: i64,
    ) -> StoreResult<bool>;
    /// Records `position` and extends the lease, only while `holder` still holds it at
    /// `version`. `false` means the lease is lost and nothing was recorded.
    async fn commit(
        &self,
        name: &str,
        holder: &str,
        version: u64,
        position: &ChangePosition,
        now_ms: i64,
        ttl_ms: i64,
    ) -> StoreResult<bool>;
    /// Gives the lease up, keeping its version and position, so that the next holder
    /// takes over at once with a higher version.
    async fn release(&self, name: &str, holder: &str, version: u64) -> StoreResult<()>;
    /// Every lease, by name.
    async fn leases(&self) -> StoreResult<Vec<Lease>>;
}
