//! Authentication and rate-limit settings (`[auth]`, `[rate]`).

use std::path::PathBuf;
use std::time::Duration;

use anyhow::bail;
use serde::{Deserialize, Serialize};

use super::{Config, HumanDuration};

/// How requests prove who they are.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AuthMode {
    /// API tokens issued by this service (`POST /v1/users`, `/v1/users/{id}/tokens`).
    Token,
    /// JWTs from an identity provider; the user id is `sub`.
    Jwt,
    /// No authentication: for a trusted network behind a gateway.
    None,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AuthConfig {
    pub mode: AuthMode,
    /// A verified token is trusted for this long without a database read, so a revoked
    /// token keeps working in other processes for up to this long.
    pub token_cache_ttl: HumanDuration,
    /// `jwt`: HS256 with this secret.
    pub jwt_secret: Option<String>,
    /// `jwt`: RS256 or ES256 with this PEM public key.
    pub jwt_public_key_file: Option<PathBuf>,
    /// `jwt`: the required `iss`, when set.
    pub jwt_issuer: Option<String>,
    /// `jwt`: the required `aud`, when set.
    pub jwt_audience: Option<String>,
    /// Bearer token for `/metrics` and `/v1/workers`, when set.
    pub admin_token: Option<String>,
}

impl Default for AuthConfig {
    fn default() -> Self {
        AuthConfig {
            mode: AuthMode::Token,
            token_cache_ttl: HumanDuration(Duration::from_secs(10)),
            jwt_secret: None,
            jwt_public_key_file: None,
            jwt_issuer: None,
            jwt_audience: None,
            admin_token: None,
        }
    }
}

/// Token buckets, per process.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RateConfig {
    /// Writes per authenticated user per minute (0: unlimited).
    pub writes_per_min: u32,
    /// Authenticated reads per user per minute (0: unlimited).
    pub reads_per_min: u32,
    /// Requests per client IP per minute (0: unlimited).
    pub ip_per_min: u32,
}

impl Default for RateConfig {
    fn default() -> Self {
        RateConfig {
            writes_per_min: 300,
            reads_per_min: 3000,
            ip_per_min: 7500,
        }
    }
}

impl Config {
    /// The configuration as it may be logged: secrets replaced by a placeholder.
    pub fn redacted(&self) -> Config {
        let mut shown = self.clone();
        let hide = |secret: &mut Option<String>| {
            if secret.is_some() {
                *secret = Some("<redacted>".to_owned());
            }
        };
        hide(&mut shown.auth.jwt_secret);
        hide(&mut shown.auth.admin_token);
        shown
    }

    pub(super) fn validate_auth(&self) -> anyhow::Result<()> {
        let auth = &self.auth;
        let secret = auth.jwt_secret.as_deref().is_some_and(|s| !s.is_empty());
        let key = auth.jwt_public_key_file.is_some();
        if auth.mode == AuthMode::Jwt && secret == key {
            bail!(
                "auth.mode = jwt needs exactly one of auth.jwt_secret (HS256) and auth.jwt_public_key_file (RS256 or ES256)"
            );
        }
        if auth.mode != AuthMode::Jwt && (secret || key) {
            bail!("auth.jwt_secret and auth.jwt_public_key_file apply only to auth.mode = jwt");
        }
        if auth.token_cache_ttl.0 > Duration::from_secs(300) {
            bail!(
                "auth.token_cache_ttl must be at most 5m (it is how long a revoked token may still work)"
            );
        }
        if auth.admin_token.as_deref().is_some_and(|t| t.len() < 16) {
            bail!("auth.admin_token must be at least 16 characters");
        }
        Ok(())
    }
}
