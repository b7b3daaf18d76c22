//! Who is calling: API tokens issued here (stored as SHA-256 hashes, never as values),
//! JWTs from an identity provider, or nobody checks at all (`auth.mode = none`).
//!
//! Verified tokens are cached in process for `auth.token_cache_ttl`, so the hot path
//! reads no storage; a token revoked in another process therefore keeps working here for
//! up to that long. A revocation in this process drops it from this cache at once, and a
//! verification that read the token before the revocation committed cannot put it back:
//! each revocation bumps a generation, and a lookup caches its result only when no
//! revocation happened since it began (checked and inserted under the lock the bump takes).

use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use anyhow::Context;
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use quick_cache::sync::Cache;
use serde::Deserialize;
use sha2::{Digest, Sha256};

use crate::config::{AuthConfig, AuthMode};
use crate::domain::now_ms;
use crate::store::{Store, StoreError, StoreResult, TokenHash, TokenRecord, TokenStore, UserStore};
use crate::workers::{Clock, SystemClock};

/// Verified credentials kept at once; past that, the least used make room.
const CACHE_CAPACITY: usize = 100_000;
/// Longer bearer values are rejected unread.
const MAX_CREDENTIAL_LEN: usize = 8 * 1024;

/// Why a request is not authenticated. `Missing` and `Invalid` answer the same 401, so
/// an unknown user and a wrong token cannot be told apart.
#[derive(Debug, thiserror::Error)]
pub enum AuthError {
    #[error("no credentials")]
    Missing,
    #[error("invalid credentials")]
    Invalid,
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// A token as issued: its value is shown once and never stored.
#[derive(Debug, Clone)]
pub struct IssuedToken {
    pub id: String,
    pub token: String,
    pub created_at_ms: i64,
}

/// How credentials are checked; built from `[auth]`.
pub struct AuthSettings {
    mode: Mode,
    cache_ttl: Duration,
    admin_token: Option<TokenHash>,
    clock: Arc<dyn Clock>,
}

enum Mode {
    Token,
    Jwt(Box<Jwt>),
    None,
}

struct Jwt {
    key: DecodingKey,
    validation: Validation,
}

impl Default for AuthSettings {
    fn default() -> Self {
        AuthSettings {
            mode: Mode::Token,
            cache_ttl: Duration::from_secs(10),
            admin_token: None,
            clock: Arc::new(SystemClock),
        }
    }
}

impl AuthSettings {
    /// Reads the JWT key file, when one is configured.
    pub fn from_config(config: &AuthConfig) -> anyhow::Result<AuthSettings> {
        let mode = match config.mode {
            AuthMode::Token => Mode::Token,
            AuthMode::None => Mode::None,
            AuthMode::Jwt => Mode::Jwt(Box::new(jwt(config)?)),
        };
        Ok(AuthSettings {
            mode,
            cache_ttl: config.token_cache_ttl.0,
            admin_token: config.admin_token.as_deref().map(hash),
            clock: Arc::new(SystemClock),
        })
    }

    /// The clock that ages verified tokens (tests move it by hand).
    pub fn with_clock(mut self, clock: Arc<dyn Clock>) -> AuthSettings {
        self.clock = clock;
        self
    }
}

fn jwt(config: &AuthConfig) -> anyhow::Result<Jwt> {
    let (key, algorithm) = match (&config.jwt_secret, &config.jwt_public_key_file) {
        (Some(secret), None) => (
            DecodingKey::from_secret(secret.as_bytes()),
            Algorithm::HS256,
        ),
        (None, Some(path)) => {
            let pem = std::fs::read(path)
                .with_context(|| format!("reading auth.jwt_public_key_file {}", path.display()))?;
            match DecodingKey::from_rsa_pem(&pem) {
                Ok(key) => (key, Algorithm::RS256),
                Err(_) => (
                    DecodingKey::from_ec_pem(&pem).with_context(|| {
                        format!(
                            "{} is neither an RSA nor an EC public key in PEM",
                            path.display()
                        )
                    })?,
                    Algorithm::ES256,
                ),
            }
        }
        _ => anyhow::bail!("auth.mode = jwt needs auth.jwt_secret or auth.jwt_public_key_file"),
    };
    let mut validation = Validation::new(algorithm);
    // A configured audience or issuer must be present, not merely right when present.
    let mut required = vec!["exp", "sub"];
    if config.jwt_audience.is_some() {
        required.push("aud");
    }
    if config.jwt_issuer.is_some() {
        required.push("iss");
    }
    validation.set_required_spec_claims(&required);
    validation.leeway = 0;
    validation.validate_aud = config.jwt_audience.is_some();
    if let Some(audience) = &config.jwt_audience {
        validation.set_audience(&[audience]);
    }
    if let Some(issuer) = &config.jwt_issuer {
        validation.set_issuer(&[issuer]);
    }
    Ok(Jwt { key, validation })
}

#[derive(Deserialize)]
struct Claims {
    sub: String,
}

/// The SHA-256 of a credential.
pub fn hash(value: &str) -> TokenHash {
    Sha256::digest(value.as_bytes()).into()
}

/// A token found in storage, as cached.
struct Verified {
    user: String,
    id: String,
    /// When it was read, by [`Auth::clock`].
    at_ms: i64,
    /// And by the monotonic clock, which bounds its trust even if `clock` steps back.
    at: Instant,
}

pub struct Auth {
    mode: Mode,
    tokens: Arc<dyn TokenStore>,
    users: Arc<dyn UserStore>,
    /// Token hash to what was read about it, for verified tokens only. Entries are
    /// trusted for `cache_ttl_ms` by `clock` and for `cache_ttl` by the monotonic clock.
    verified: Cache<TokenHash, Arc<Verified>>,
    /// Revocations made by this process so far. A lookup notes it before reading and
    /// caches its token only if it is unchanged, checking and inserting under this lock.
    revocations: Mutex<u64>,
    clock: Arc<dyn Clock>,
    cache_ttl_ms: i64,
    cache_ttl: Duration,
    /// JWT subjects known to name a user, and since when (trusted for `cache_ttl`).
    known_users: Cache<String, Instant>,
    admin_token: Option<TokenHash>,
}

impl Auth {
    pub fn new(store: &Store, settings: AuthSettings) -> Auth {
        Auth {
            mode: settings.mode,
            tokens: store.tokens.clone(),
            users: store.users.clone(),
            verified: Cache::new(CACHE_CAPACITY),
            revocations: Mutex::new(0),
            clock: settings.clock,
            cache_ttl_ms: i64::try_from(settings.cache_ttl.as_millis()).unwrap_or(i64::MAX),
            cache_ttl: settings.cache_ttl,
            known_users: Cache::new(CACHE_CAPACITY),
            admin_token: settings.admin_token,
        }
    }

    fn revocations(&self) -> std::sync::MutexGuard<'_, u64> {
        // The guarded sections cannot panic; a poisoned lock still holds a valid count.
        self.revocations
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// `token`, `jwt` or `none`.
    pub fn mode(&self) -> &'static str {
        match self.mode {
            Mode::Token => "token",
            Mode::Jwt(_) => "jwt",
            Mode::None => "none",
        }
    }

    /// False with `auth.mode = none`: every request may act as anyone.
    pub fn enabled(&self) -> bool {
        !matches!(self.mode, Mode::None)
    }

    /// Whether this service issues its own tokens (`auth.mode = token`).
    pub fn issues_tokens(&self) -> bool {
        matches!(self.mode, Mode::Token)
    }

    /// The user a bearer credential stands for. `Ok(None)` only when authentication is
    /// off. A token or subject that names no user is `Invalid`, like a wrong one.
    pub async fn authenticate(&self, bearer: Option<&str>) -> Result<Option<String>, AuthError> {
        if !self.enabled() {
            return Ok(None);
        }
        let bearer = bearer.ok_or(AuthError::Missing)?;
        if bearer.is_empty() || bearer.len() > MAX_CREDENTIAL_LEN {
            return Err(AuthError::Invalid);
        }
        match &self.mode {
            Mode::Token => self.token_user(bearer).await.map(Some),
            Mode::Jwt(jwt) => self.jwt_user(jwt, bearer).await.map(Some),
            Mode::None => Ok(None),
        }
    }

    async fn token_user(&self, token: &str) -> Result<String, AuthError> {
        let hash = hash(token);
        let now_ms = self.clock.now_ms();
        if let Some(found) = self.verified.get(&hash)
            && now_ms.saturating_sub(found.at_ms) < self.cache_ttl_ms
            && found.at.elapsed() < self.cache_ttl
        {
            return Ok(found.user.clone());
        }
        let seen = *self.revocations();
        let record = self
            .tokens
            .token_by_hash(&hash)
            .await?
            .ok_or(AuthError::Invalid)?;
        crate::faults::point("token.looked_up").await;
        let verified = Arc::new(Verified {
            user: record.user.clone(),
            id: record.id,
            at_ms: now_ms,
            at: Instant::now(),
        });
        {
            let revocations = self.revocations();
            // A revocation since `seen` may have committed after the read above and
            // swept the cache already: this answer may stand, but must not be kept.
            if *revocations == seen {
                self.verified.insert(hash, verified);
            }
        }
        Ok(record.user)
    }

    async fn jwt_user(&self, jwt: &Jwt, token: &str) -> Result<String, AuthError> {
        let claims = jsonwebtoken::decode::<Claims>(token, &jwt.key, &jwt.validation)
            .map_err(|_| AuthError::Invalid)?
            .claims;
        let known = self.known_users.get(claims.sub.as_str());
        if known.is_none_or(|since| since.elapsed() >= self.cache_ttl) {
            if self.users.user(&claims.sub).await?.is_none() {
                return Err(AuthError::Invalid);
            }
            self.known_users.insert(claims.sub.clone(), Instant::now());
        }
        Ok(claims.sub)
    }

    /// Whether `bearer` may read the operations endpoints: always when no
    /// `auth.admin_token` is set (they are then public, or on `server.admin_listen`).
    pub fn admin_allowed(&self, bearer: Option<&str>) -> bool {
        match &self.admin_token {
            None => true,
            // Digests compared: the time taken says nothing about the token's bytes.
            Some(expected) => bearer.is_some_and(|b| hash(b) == *expected),
        }
    }

    pub fn admin_token_set(&self) -> bool {
        self.admin_token.is_some()
    }

    /// A new token for `user`: 256 random bits, url-safe base64. Only its hash is kept.
    pub async fn issue(&self, user: &str) -> StoreResult<IssuedToken> {
        loop {
            let token = URL_SAFE_NO_PAD.encode(rand::random::<[u8; 32]>());
            let record = TokenRecord {
                id: hex::encode(rand::random::<[u8; 8]>()),
                user: user.to_owned(),
                created_at_ms: now_ms(),
            };
            match self.tokens.insert_token(&hash(&token), &record).await {
                Ok(()) => {
                    return Ok(IssuedToken {
                        id: record.id,
                        token,
                        created_at_ms: record.created_at_ms,
                    });
                }
                // A 64-bit id collision for one user: draw again.
                Err(StoreError::Conflict(_)) => continue,
                Err(error) => return Err(error),
            }
        }
    }

    /// Revokes `user`'s token `id`, here at once and elsewhere within the cache TTL.
    pub async fn revoke(&self, user: &str, id: &str) -> StoreResult<bool> {
        let revoked = self.tokens.revoke_token(user, id).await;
        // After the delete (even a failed one, which may have committed): lookups that
        // began before it now cache nothing, and anything they cached before the bump
        // is in the cache for the sweep below to find.
        *self.revocations() += 1;
        self.verified.retain(|_, v| !(v.user == user && v.id == id));
        revoked
    }
}
