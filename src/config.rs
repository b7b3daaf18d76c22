//! Typed configuration: defaults, then `socialite.toml` (or `--config FILE`), then
//! `SOCIALITE_SECTION__KEY` environment variables, then command-line flags. Validated once
//! at start-up.
//!
//! This file holds the whole [`Config`], how it is loaded and validated, the command-line
//! [`Overrides`] and [`HumanDuration`]; each section's struct, defaults and checks live in
//! a submodule: `server`, `storage`, `feed`, `workers` (with `change_feed` and
//! `activity`), `events`, `auth` (with `rate`) and `mastodon`.

use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;

use anyhow::{Context, bail};
use figment::Figment;
use figment::providers::{Env, Format, Serialized, Toml};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::domain::FeedStrategy;

mod auth;
mod events;
mod faults;
mod feed;
mod mastodon;
mod server;
mod storage;
mod workers;

pub use auth::{AuthConfig, AuthMode, RateConfig};
pub use events::EventsConfig;
pub use faults::FaultsConfig;
pub use feed::FeedConfig;
pub use mastodon::MastodonConfig;
pub use server::ServerConfig;
pub use storage::{Backend, StorageConfig};
pub use workers::{ActivityConfig, ChangeFeedConfig, WorkersConfig};

pub const DEFAULT_CONFIG_FILE: &str = "socialite.toml";

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    pub server: ServerConfig,
    pub storage: StorageConfig,
    pub feed: FeedConfig,
    pub change_feed: ChangeFeedConfig,
    pub activity: ActivityConfig,
    pub workers: WorkersConfig,
    pub events: EventsConfig,
    pub auth: AuthConfig,
    pub rate: RateConfig,
    pub mastodon: MastodonConfig,
    pub faults: FaultsConfig,
}

/// A duration written as `1d`, `90s`, `250ms` and so on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HumanDuration(pub Duration);

impl Serialize for HumanDuration {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(&humantime::format_duration(self.0))
    }
}

impl<'de> Deserialize<'de> for HumanDuration {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        humantime::parse_duration(text.trim())
            .map(HumanDuration)
            .map_err(|e| serde::de::Error::custom(format!("invalid duration {text:?}: {e}")))
    }
}

/// Values given on the command line; `None` leaves the lower layers in force.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Overrides {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server: Option<ServerOverrides>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub feed: Option<FeedOverrides>,
}

#[derive(Debug, Clone, Serialize)]
pub struct ServerOverrides {
    pub listen: SocketAddr,
}

#[derive(Debug, Clone, Serialize)]
pub struct FeedOverrides {
    pub strategy: FeedStrategy,
}

impl Overrides {
    pub fn new(listen: Option<SocketAddr>, strategy: Option<FeedStrategy>) -> Self {
        Overrides {
            server: listen.map(|listen| ServerOverrides { listen }),
            feed: strategy.map(|strategy| FeedOverrides { strategy }),
        }
    }
}

impl Config {
    /// Loads and validates the configuration. `file` is `--config`; without it
    /// `socialite.toml` in the working directory is read when present.
    pub fn load(file: Option<&Path>, overrides: &Overrides) -> anyhow::Result<Config> {
        let mut figment = Figment::from(Serialized::defaults(Config::default()));
        match file {
            Some(path) => {
                if !path.exists() {
                    bail!("configuration file {} does not exist", path.display());
                }
                figment = figment.merge(Toml::file_exact(path));
            }
            None if Path::new(DEFAULT_CONFIG_FILE).exists() => {
                figment = figment.merge(Toml::file_exact(DEFAULT_CONFIG_FILE));
            }
            None => {}
        }
        let config: Config = figment
            .merge(
                // Only SECTION__KEY variables are configuration; others such as the test
                // harness's SOCIALITE_TEST_MONGODB_URI are not ours to reject.
                Env::prefixed("SOCIALITE_")
                    .filter(|key| key.as_str().contains("__"))
                    .split("__"),
            )
            .merge(Serialized::defaults(overrides))
            .extract()
            .context("invalid configuration")?;
        config.validate()?;
        Ok(config)
    }

    /// Checks every section, in the order the errors have always been reported: feed,
    /// activity, change feed, workers, events, server, auth, storage, mastodon.
    pub fn validate(&self) -> anyhow::Result<()> {
        self.feed.validate()?;
        self.activity.validate()?;
        self.change_feed.validate()?;
        self.workers.validate()?;
        self.events.validate()?;
        self.server.validate()?;
        self.validate_auth()?;
        self.storage.validate()?;
        self.mastodon.validate()?;
        self.faults.validate()?;
        Ok(())
    }
}
