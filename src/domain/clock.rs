//! The time, injectable so tests can move it by hand: workers, token caches, rate
//! limits and cache read stamps read it (`workers::control` re-exports it).

use std::sync::atomic::{AtomicI64, Ordering};

/// Milliseconds since the Unix epoch, injectable so tests can move time by hand.
pub trait Clock: Send + Sync + 'static {
    fn now_ms(&self) -> i64;
}

pub struct SystemClock;

impl Clock for SystemClock {
    fn now_ms(&self) -> i64 {
        super::now_ms()
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
