//! What tests inject into a worker's step: the clock it reads, and hooks at named points
//! that can pause or fail the step.

use async_trait::async_trait;

pub use crate::domain::clock::{Clock, ManualClock, SystemClock};
use crate::store::StoreResult;

/// Named points in a step where a test can pause or fail it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Point {
    /// The lease is held and the batch was read; nothing applied yet.
    Read,
    /// The batch was applied; the position is not committed yet.
    Applied,
}

/// Fault points: a test's hook can wait (to pause a step) or return an error (a crash at
/// that point: the step ends there, as a killed process would).
#[async_trait]
pub trait Hooks: Send + Sync + 'static {
    async fn at(&self, worker: &str, point: Point) -> StoreResult<()>;
}

pub struct NoHooks;

#[async_trait]
impl Hooks for NoHooks {
    async fn at(&self, _worker: &str, _point: Point) -> StoreResult<()> {
        Ok(())
    }
}
