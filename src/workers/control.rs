//! What tests inject into a worker's step: the clock it reads, and hooks at named points
//! that can pause or fail the step.

use std::sync::atomic::{AtomicI64, Ordering};

use async_trait::async_trait;

use crate::store::StoreResult;

/// Milliseconds since the Unix epoch, injectable so tests can move time by hand.
pub trait Clock: Send + Sync + 'static {
    fn now_ms(&self) -> i64;
}

pub struct SystemClock;

impl Clock for SystemClock {
    fn now_ms(&self) -> i64 {
        crate::domain::now_ms()
    }
}

/// A clock that moves only when told.
#[derive(Default)]
pub struct ManualClock(AtomicI64);

impl ManualClock {
    pub fn at(ms: i64) -> Self {
        ManualClock(AtomicI64::new(ms))
    }

    pub fn advance(&self, ms: i64) {
        self.0.fetch_add(ms, Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now_ms(&self) -> i64 {
        self.0.load(Ordering::SeqCst)
    }
}

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
