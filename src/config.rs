//! Typed configuration: defaults, then `socialite.toml` (or `--config FILE`), then
//! `SOCIALITE_SECTION__KEY` environment variables, then command-line flags. Validated once
//! at start-up.

use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, bail};
use figment::Figment;
use figment::providers::{Env, Format, Serialized, Toml};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::domain::FeedStrategy;
use crate::feed::FeedSettings;
use crate::store::embedded::Synchronous;

mod auth;
mod events;

pub use auth::{AuthConfig, AuthMode, RateConfig};
pub use events::EventsConfig;

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
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ServerConfig {
    pub listen: SocketAddr,
    /// Requests running longer are answered 503.
    pub request_timeout: HumanDuration,
    /// Larger request bodies are answered 413.
    pub body_limit_bytes: usize,
    /// Serve `/metrics` and `/v1/workers` here only (and not on `listen`).
    pub admin_listen: Option<SocketAddr>,
    /// Peers whose `X-Forwarded-For` names the client; otherwise the client is the peer.
    pub trusted_proxies: Vec<IpAddr>,
    /// A request's header must arrive within this long (the wait of a kept-alive
    /// connection for its next request included); the connection is closed otherwise.
    pub header_timeout: HumanDuration,
    /// A connection that moves no byte either way for this long is closed.
    pub idle_timeout: HumanDuration,
    /// Connections served at once; more are answered 503 and closed at once.
    pub max_connections: usize,
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            listen: SocketAddr::from(([127, 0, 0, 1], 8080)),
            request_timeout: HumanDuration(Duration::from_secs(30)),
            body_limit_bytes: 64 * 1024,
            admin_listen: None,
            trusted_proxies: Vec::new(),
            header_timeout: HumanDuration(Duration::from_secs(10)),
            idle_timeout: HumanDuration(Duration::from_secs(60)),
            max_connections: 1024,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Backend {
    Embedded,
    Mongodb,
}

impl Backend {
    pub fn as_str(self) -> &'static str {
        match self {
            Backend::Embedded => "embedded",
            Backend::Mongodb => "mongodb",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct StorageConfig {
    pub backend: Backend,
    pub path: PathBuf,
    pub mongodb_uri: Option<String>,
    /// Embedded only: `full` makes every acknowledged write survive power loss.
    pub synchronous: Synchronous,
}

impl Default for StorageConfig {
    fn default() -> Self {
        StorageConfig {
            backend: Backend::Embedded,
            path: PathBuf::from("./data/socialite.db"),
            mongodb_uri: None,
            synchronous: Synchronous::Full,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct FeedConfig {
    pub strategy: FeedStrategy,
    pub cache_size: u32,
    pub bucket_size: u32,
    pub bucket_span: HumanDuration,
    pub embed_content: bool,
    pub backfill_on_follow: u32,
    /// Entries per part of a timed bucket's period; a full part rolls over to the next.
    pub timed_bucket_max_entries: u32,
    /// Authors with at most this many followers are fanned out to before the 201; larger
    /// audiences only by the timelines worker.
    pub inline_fanout_max: u64,
}

impl Default for FeedConfig {
    fn default() -> Self {
        let defaults = FeedSettings::default();
        FeedConfig {
            strategy: defaults.strategy,
            cache_size: defaults.cache_size,
            bucket_size: defaults.bucket_size,
            bucket_span: HumanDuration(Duration::from_millis(defaults.bucket_span_ms as u64)),
            embed_content: defaults.embed_content,
            backfill_on_follow: defaults.backfill_on_follow,
            timed_bucket_max_entries: defaults.timed_bucket_max_entries,
            inline_fanout_max: defaults.inline_fanout_max,
        }
    }
}

impl FeedConfig {
    pub fn settings(&self) -> FeedSettings {
        FeedSettings {
            strategy: self.strategy,
            cache_size: self.cache_size,
            bucket_size: self.bucket_size,
            bucket_span_ms: self.bucket_span.0.as_millis() as i64,
            embed_content: self.embed_content,
            backfill_on_follow: self.backfill_on_follow,
            timed_bucket_max_entries: self.timed_bucket_max_entries,
            inline_fanout_max: self.inline_fanout_max,
        }
    }
}

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
}

impl Default for WorkersConfig {
    fn default() -> Self {
        WorkersConfig {
            enabled: true,
            lease_ttl: HumanDuration(Duration::from_secs(10)),
            refresh_interval: HumanDuration(Duration::from_secs(2)),
            batch_size: 500,
        }
    }
}

/// Rejects an entry count whose document could pass MongoDB's 16 MiB limit when every
/// entry is the largest possible (whatever `embed_content` says now: documents keep the
/// entries they were written with). Checked on every backend, so that a configuration
/// means the same on both.
fn fits_in_a_document(key: &str, entries: u32) -> anyhow::Result<()> {
    use crate::store::timelines::{
        DOCUMENT_BUDGET_BYTES, largest_document_bytes, largest_entry_bytes,
    };
    let bytes = largest_document_bytes(entries);
    if bytes <= DOCUMENT_BUDGET_BYTES {
        return Ok(());
    }
    let (mut most, mut over) = (0, entries);
    while over - most > 1 {
        let mid = most + (over - most) / 2;
        if largest_document_bytes(mid) <= DOCUMENT_BUDGET_BYTES {
            most = mid;
        } else {
            over = mid;
        }
    }
    bail!(
        "{key} = {entries} could exceed MongoDB's 16 MiB document limit: {entries} entries of \
         up to {} bytes each (the longest post text in UTF-8, the longest user id, a 12-byte \
         id and BSON framing) make a document of up to {bytes} bytes, over the {} allowed \
         (16 MiB less 1 MiB of headroom); at most {most} entries fit",
        largest_entry_bytes(),
        DOCUMENT_BUDGET_BYTES
    );
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

    pub fn validate(&self) -> anyhow::Result<()> {
        let feed = &self.feed;
        if !(1..=10_000).contains(&feed.cache_size) {
            bail!("feed.cache_size must be 1-10000, got {}", feed.cache_size);
        }
        if !(1..=10_000).contains(&feed.bucket_size) {
            bail!("feed.bucket_size must be 1-10000, got {}", feed.bucket_size);
        }
        if feed.bucket_span.0 < Duration::from_secs(1) {
            bail!("feed.bucket_span must be at least 1s");
        }
        if feed.backfill_on_follow > 10_000 {
            bail!("feed.backfill_on_follow must be at most 10000");
        }
        if feed.timed_bucket_max_entries == 0 {
            bail!("feed.timed_bucket_max_entries must be positive");
        }
        for (key, entries) in [
            ("feed.cache_size", feed.cache_size),
            ("feed.bucket_size", feed.bucket_size),
            (
                "feed.timed_bucket_max_entries",
                feed.timed_bucket_max_entries,
            ),
        ] {
            fits_in_a_document(key, entries)?;
        }
        if self.activity.primary_limit == 0 || self.activity.page_size == 0 {
            bail!("activity.primary_limit and activity.page_size must be positive");
        }
        if self.change_feed.max_retention.0 < self.change_feed.retention.0 {
            bail!("change_feed.max_retention must be at least change_feed.retention");
        }
        let workers = &self.workers;
        if workers.lease_ttl.0 < Duration::from_secs(1) {
            bail!("workers.lease_ttl must be at least 1s");
        }
        if workers.refresh_interval.0.is_zero()
            || workers.refresh_interval.0 * 2 > workers.lease_ttl.0
        {
            bail!(
                "workers.refresh_interval must be positive and at most half of workers.lease_ttl"
            );
        }
        if !(1..=10_000).contains(&workers.batch_size) {
            bail!(
                "workers.batch_size must be 1-10000, got {}",
                workers.batch_size
            );
        }
        self.events.validate()?;
        if self.server.body_limit_bytes < 1024 {
            bail!("server.body_limit_bytes must be at least 1024");
        }
        if self.server.request_timeout.0.is_zero() {
            bail!("server.request_timeout must be positive");
        }
        if self.server.header_timeout.0.is_zero() || self.server.idle_timeout.0.is_zero() {
            bail!("server.header_timeout and server.idle_timeout must be positive");
        }
        if self.server.max_connections == 0 {
            bail!("server.max_connections must be positive");
        }
        if self
            .server
            .admin_listen
            .is_some_and(|a| a == self.server.listen && a.port() != 0)
        {
            bail!("server.admin_listen must differ from server.listen");
        }
        self.validate_auth()?;
        if self.storage.backend == Backend::Mongodb
            && self
                .storage
                .mongodb_uri
                .as_deref()
                .is_none_or(str::is_empty)
        {
            bail!("storage.mongodb_uri is required when storage.backend is mongodb");
        }
        Ok(())
    }
}
