//! The timelines worker's upkeep: dropping the caches of dormant readers. A cache whose
//! owner has not read it for `feed.cache_idle` costs a write at every post of everyone
//! they follow and room in the store, for a reader who may never come back; when they
//! do, their first read builds it again from the sources, as for a new reader.
//!
//! A sweep runs at most every `FeedSettings::idle_sweep_ms`, in the lease holder, in
//! chunks of [`CHUNK`] caches per store call and at most [`CHUNKS_PER_STEP`] per step,
//! so the changes waiting are applied between chunks. Its fence is the state it writes,
//! as for every timelines effect: each cache is deleted only while its recorded last
//! read is still older than the cutoff and it is not being built, checked in the
//! delete's own write (see `TimelineStore::drop_idle_caches`), so a replay, a stale
//! holder or a racing read changes nothing it should not.

use std::sync::atomic::{AtomicI64, Ordering};

use crate::feed::FeedSettings;
use crate::store::{Store, StoreResult};

/// Caches dropped per store call (one write transaction on the embedded store).
pub const CHUNK: usize = 500;
/// Store calls per step: a sweep longer than this goes on at the next step.
const CHUNKS_PER_STEP: usize = 20;

pub(super) struct IdleSweep {
    /// The clock time from which the next sweep is due; 0 at start, so a new holder
    /// sweeps at its first step.
    next_ms: AtomicI64,
}

impl IdleSweep {
    pub fn new() -> Self {
        IdleSweep {
            next_ms: AtomicI64::new(0),
        }
    }

    /// Drops idle caches if a sweep is due at `now_ms`; returns how many went.
    pub async fn run(
        &self,
        store: &Store,
        settings: &FeedSettings,
        now_ms: i64,
    ) -> StoreResult<u64> {
        let Some(every) = settings.idle_sweep_ms() else {
            return Ok(0);
        };
        if now_ms < self.next_ms.load(Ordering::SeqCst) {
            return Ok(0);
        }
        let mut dropped = 0;
        for _ in 0..CHUNKS_PER_STEP {
            let went = store
                .timelines
                .drop_idle_caches(now_ms, settings.cache_idle_ms, CHUNK)
                .await?;
            dropped += went;
            if went < CHUNK as u64 {
                // Done: the next sweep is due a period from now.
                self.next_ms
                    .store(now_ms.saturating_add(every), Ordering::SeqCst);
                break;
            }
        }
        if dropped > 0 {
            metrics::counter!("socialite_cache_idle_drops_total").increment(dropped);
            tracing::info!(
                dropped,
                idle_ms = settings.cache_idle_ms,
                "dropped idle caches"
            );
        }
        Ok(dropped)
    }
}
