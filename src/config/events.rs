//! Event-log and live-stream settings (`[events]`).

use anyhow::bail;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct EventsConfig {
    /// MongoDB: the event log's capped collection size in bytes (fixed when created).
    pub max_bytes: u64,
    /// Embedded: events kept; the oldest go first.
    pub max_count: u64,
    /// The most events a reader takes in one batch.
    pub batch_max: usize,
    /// Open timeline streams per process; more are answered 503.
    pub max_streams: usize,
    /// Messages buffered per timeline stream; a client this far behind is disconnected.
    pub stream_buffer: usize,
}

impl Default for EventsConfig {
    fn default() -> Self {
        EventsConfig {
            max_bytes: 256 * 1024 * 1024,
            max_count: 1_000_000,
            batch_max: 500,
            max_streams: 10_000,
            stream_buffer: 256,
        }
    }
}

impl EventsConfig {
    pub fn bounds(&self) -> crate::store::LogBounds {
        crate::store::LogBounds {
            max_count: self.max_count,
            max_bytes: self.max_bytes,
        }
    }

    pub(super) fn validate(&self) -> anyhow::Result<()> {
        let events = self;
        if events.max_bytes < 4096 {
            bail!(
                "events.max_bytes must be at least 4096, got {}",
                events.max_bytes
            );
        }
        if events.max_count == 0 {
            bail!("events.max_count must be positive");
        }
        if !(1..=10_000).contains(&events.batch_max) {
            bail!("events.batch_max must be 1-10000, got {}", events.batch_max);
        }
        if !(1..=1_000_000).contains(&events.max_streams) {
            bail!(
                "events.max_streams must be 1-1000000, got {}",
                events.max_streams
            );
        }
        if !(1..=100_000).contains(&events.stream_buffer) {
            bail!(
                "events.stream_buffer must be 1-100000, got {}",
                events.stream_buffer
            );
        }
        Ok(())
    }
}
