//! Fault injection settings (`[faults]`), off by default: see [`crate::faults`].

use std::time::Duration;

use anyhow::bail;
use serde::{Deserialize, Serialize};

use super::HumanDuration;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct FaultsConfig {
    /// Seeds the draws at the fault points (0: a random seed).
    pub seed: u64,
    /// Chance that a fault point aborts the process, as a `kill -9` would.
    pub crash_probability: f64,
    /// Chance that a fault point stalls for `stall_for`.
    pub stall_probability: f64,
    /// How long a stall lasts; longer than `workers.lease_ttl`, a stalled worker loses
    /// its lease to another process.
    pub stall_for: HumanDuration,
    /// Added to every wake-up of an idle worker by its refresh timer, which is how it
    /// notices other processes' writes.
    pub wake_delay: HumanDuration,
    /// Each fault point first waits a random time below this, which widens the
    /// windows between a read and the write that rests on it (0: none).
    pub jitter: HumanDuration,
}

impl Default for FaultsConfig {
    fn default() -> Self {
        FaultsConfig {
            seed: 0,
            crash_probability: 0.0,
            stall_probability: 0.0,
            stall_for: HumanDuration(Duration::from_secs(5)),
            wake_delay: HumanDuration(Duration::ZERO),
            jitter: HumanDuration(Duration::ZERO),
        }
    }
}

impl FaultsConfig {
    /// Whether any fault can happen.
    pub fn active(&self) -> bool {
        self.crash_probability > 0.0
            || self.stall_probability > 0.0
            || !self.wake_delay.0.is_zero()
            || !self.jitter.0.is_zero()
    }

    pub(super) fn validate(&self) -> anyhow::Result<()> {
        for (key, p) in [
            ("faults.crash_probability", self.crash_probability),
            ("faults.stall_probability", self.stall_probability),
        ] {
            if !(0.0..=1.0).contains(&p) {
                bail!("{key} must be between 0 and 1, got {p}");
            }
        }
        if self.crash_probability + self.stall_probability > 1.0 {
            bail!("faults.crash_probability and faults.stall_probability must add up to at most 1");
        }
        if self.stall_for.0 > Duration::from_secs(3600)
            || self.wake_delay.0 > Duration::from_secs(60)
            || self.jitter.0 > Duration::from_secs(1)
        {
            bail!(
                "faults.stall_for must be at most 1h, faults.wake_delay at most 1m and faults.jitter at most 1s"
            );
        }
        Ok(())
    }
}
