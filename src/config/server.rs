//! The HTTP server's settings (`[server]`): listeners, timeouts, limits and proxies.

use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use anyhow::bail;
use serde::{Deserialize, Serialize};

use super::HumanDuration;

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

impl ServerConfig {
    pub(super) fn validate(&self) -> anyhow::Result<()> {
        if self.body_limit_bytes < 1024 {
            bail!("server.body_limit_bytes must be at least 1024");
        }
        if self.request_timeout.0.is_zero() {
            bail!("server.request_timeout must be positive");
        }
        if self.header_timeout.0.is_zero() || self.idle_timeout.0.is_zero() {
            bail!("server.header_timeout and server.idle_timeout must be positive");
        }
        if self.max_connections == 0 {
            bail!("server.max_connections must be positive");
        }
        if self
            .admin_listen
            .is_some_and(|a| a == self.listen && a.port() != 0)
        {
            bail!("server.admin_listen must differ from server.listen");
        }
        Ok(())
    }
}
