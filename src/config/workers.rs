//! Settings of the change feed and what consumes it: `[change_feed]` retention,
//! `[activity]` log sizes and `[workers]` leases and batches.

use std::time::Duration;

use anyhow::bail;
use serde::{Deserialize, Serialize};

use super::HumanDuration;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ChangeFeedConfig {
    /// Changes older than this are trimmed from the embedded change feed; a reader whose
    /// position was trimmed gets "history lost". MongoDB's oplog size governs there.
    pub retention: HumanDuration,
    /// Embedded: changes a lagging worker still needs are kept past `retention`, up to
    /// this age; then they are trimmed anyway, logged as an error, and that worker
    /// rebuilds its derived data.
    pub max_retention: HumanDuration,
}

impl Default for ChangeFeedConfig {
    fn default() -> Self {
        ChangeFeedConfig {
            retention: HumanDuration(Duration::from_secs(7 * 86_400)),
            max_retention: HumanDuration(Duration::from_secs(30 * 86_400)),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ActivityConfig {
    /// Entries kept in a user's primary activity document.
    pub primary_limit: u32,
    /// Entries per overflow page.
    pub page_size: u32,
}

impl Default for ActivityConfig {
    fn default() -> Self {
        ActivityConfig {
            primary_limit: 1000,
            page_size: 1000,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct WorkersConfig {
    /// Run the change-feed workers in this process. Several processes may run them on
    /// one store: the lease makes one of them active per worker.
    pub enabled: bool,
    /// How long a worker's lease lasts without a refresh; a killed holder is replaced
    /// within about this long.
    pub lease_ttl: HumanDuration,
    /// How often an idle worker refreshes its lease and looks for changes written by
    /// other processes (writes in this process wake it at once).
    pub refresh_interval: HumanDuration,
    /// Changes read and applied per step.
    pub batch_size: usize,
    /// MongoDB: a notification dismissal's or clear's claim on a group older than this
    /// is taken for one whose request died, and the notifications worker finishes it
    /// (the sweep, run at most this often).
    pub settle_takings_after: HumanDuration,
}

impl Default for WorkersConfig {
    fn default() -> Self {
        WorkersConfig {
            enabled: true,
            lease_ttl: HumanDuration(Duration::from_secs(10)),
            refresh_interval: HumanDuration(Duration::from_secs(2)),
            batch_size: 500,
            settle_takings_after: HumanDuration(Duration::from_secs(5)),
        }
    }
}

impl ChangeFeedConfig {
    pub(super) fn validate(&self) -> anyhow::Result<()> {
        if self.max_retention.0 < self.retention.0 {
            bail!("change_feed.max_retention must be at least change_feed.retention");
        }
        Ok(())
    }
}

impl ActivityConfig {
    pub(super) fn validate(&self) -> anyhow::Result<()> {
        if self.primary_limit == 0 || self.page_size == 0 {
            bail!("activity.primary_limit and activity.page_size must be positive");
        }
        Ok(())
    }
}

impl WorkersConfig {
    pub(super) fn validate(&self) -> anyhow::Result<()> {
        if self.lease_ttl.0 < Duration::from_secs(1) {
            bail!("workers.lease_ttl must be at least 1s");
        }
        if self.refresh_interval.0.is_zero() || self.refresh_interval.0 * 2 > self.lease_ttl.0 {
            bail!(
                "workers.refresh_interval must be positive and at most half of workers.lease_ttl"
            );
        }
        if !(1..=10_000).contains(&self.batch_size) {
            bail!(
                "workers.batch_size must be 1-10000, got {}",
                self.batch_size
            );
        }
        let settle = self.settle_takings_after.0;
        if !(Duration::from_secs(1)..=Duration::from_secs(3_600)).contains(&settle) {
            bail!("workers.settle_takings_after must be 1s-1h");
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use figment::Figment;
    use figment::providers::{Format, Serialized, Toml};

    use super::*;

    #[test]
    fn the_takings_age_is_read_from_toml_and_kept_within_its_range() {
        assert_eq!(
            WorkersConfig::default().settle_takings_after.0,
            Duration::from_secs(5)
        );
        let read: WorkersConfig = Figment::from(Serialized::defaults(WorkersConfig::default()))
            .merge(Toml::string("settle_takings_after = \"30s\""))
            .extract()
            .unwrap();
        assert_eq!(read.settle_takings_after.0, Duration::from_secs(30));
        read.validate().unwrap();
        for bad in [Duration::from_millis(500), Duration::from_secs(7_200)] {
            let workers = WorkersConfig {
                settle_takings_after: HumanDuration(bad),
                ..WorkersConfig::default()
            };
            let message = workers.validate().unwrap_err().to_string();
            assert!(
                message.contains("workers.settle_takings_after"),
                "{message}"
            );
        }
    }
}
