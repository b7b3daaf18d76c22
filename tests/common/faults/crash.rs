//! A worker hook that fails the step at one point, once: the process dying there,
//! holding its lease.

use std::sync::atomic::{AtomicBool, Ordering};

use async_trait::async_trait;
use socialite::store::{StoreError, StoreResult};
use socialite::workers::{Hooks, Point};

/// The text of the failure it injects, for callers that tell it from a real one.
#[allow(dead_code)]
pub const CRASH: &str = "crash at";

#[allow(dead_code)]
pub struct CrashOnce(Point, AtomicBool);

impl CrashOnce {
    #[allow(dead_code)]
    pub fn at(point: Point) -> CrashOnce {
        CrashOnce(point, AtomicBool::new(true))
    }
}

#[async_trait]
impl Hooks for CrashOnce {
    async fn at(&self, _worker: &str, point: Point) -> StoreResult<()> {
        if point == self.0 && self.1.swap(false, Ordering::SeqCst) {
            return Err(StoreError::Backend(anyhow::anyhow!("{CRASH} {point:?}")));
        }
        Ok(())
    }
}
