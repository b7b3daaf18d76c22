//! What a bearer credential on the Mastodon API grants: an OAuth access token (its user
//! or none, its app, its scopes), else a `/v1` credential (an API token or a JWT), which
//! stands for its user with every scope. OAuth tokens found in storage are cached like
//! `/v1` tokens (`auth.token_cache_ttl`, with the same revocation generation, so a
//! revocation in this process holds at once and one in another process within the TTL).
//! And an app's revocation of a token it holds (RFC 7009), with the refresh tokens that
//! go with it.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use quick_cache::sync::Cache;

use super::super::Social;
use super::super::auth::{AuthError, hash};
use super::ACCESS_CHARS;
use crate::domain::scopes::Scopes;
use crate::store::{AccessRecord, AppRecord, StoreResult, TokenHash};

const CACHE_CAPACITY: usize = 100_000;

/// Who a request acts as on the Mastodon API, and what it may do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Grant {
    /// `None`: an app's own token (client credentials).
    pub user: Option<String>,
    /// The app that holds the token; `None` for a `/v1` credential.
    pub client_id: Option<String>,
    pub scopes: Scopes,
}

impl Grant {
    pub(super) fn from_access(record: &AccessRecord) -> Grant {
        Grant {
            user: record.user.clone(),
            client_id: Some(record.client_id.clone()),
            scopes: Scopes::parse(&record.scopes, "").unwrap_or_default(),
        }
    }
}

struct Cached {
    grant: Grant,
    at: Instant,
}

pub(super) struct GrantCache {
    cache: Cache<TokenHash, Arc<Cached>>,
    revocations: Mutex<u64>,
    ttl: Duration,
}

impl GrantCache {
    pub(super) fn new(ttl: Duration) -> GrantCache {
        GrantCache {
            cache: Cache::new(CACHE_CAPACITY),
            revocations: Mutex::new(0),
            ttl,
        }
    }

    fn revocations(&self) -> std::sync::MutexGuard<'_, u64> {
        self.revocations
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    pub(super) fn get(&self, hash: &TokenHash) -> Option<Grant> {
        self.cache
            .get(hash)
            .filter(|c| c.at.elapsed() < self.ttl)
            .map(|c| c.grant.clone())
    }

    /// The revocation count before a lookup.
    pub(super) fn generation(&self) -> u64 {
        *self.revocations()
    }

    /// Keeps a lookup's answer unless a revocation happened since it began.
    pub(super) fn keep(&self, hash: TokenHash, grant: &Grant, seen: u64) {
        let revocations = self.revocations();
        if *revocations == seen {
            self.cache.insert(
                hash,
                Arc::new(Cached {
                    grant: grant.clone(),
                    at: Instant::now(),
                }),
            );
        }
    }

    /// After a revocation's write: lookups in flight keep nothing, the token is dropped.
    pub(super) fn revoked(&self, hash: &TokenHash) {
        *self.revocations() += 1;
        self.cache.remove(hash);
    }
}

/// The hash a token is stored and cached under.
pub(super) fn token_hash(token: &str) -> TokenHash {
    hash(token)
}

impl Social {
    /// Revokes `token` if `client` holds it: here at once, in other processes within
    /// `auth.token_cache_ttl`. An unknown token is no error (RFC 7009).
    pub async fn revoke_access(&self, client: &AppRecord, token: &str) -> StoreResult<()> {
        let hash = token_hash(token);
        let revoked = self
            .store
            .oauth
            .revoke_access(&hash, &client.client_id)
            .await;
        self.oauth.grants.revoked(&hash);
        revoked?;
        // A refresh token given, or those issued with the access token given.
        self.store
            .oauth
            .revoke_refresh(&hash, &client.client_id)
            .await
            .map(|_| ())
    }

    /// What a bearer credential grants on the Mastodon API.
    pub async fn grant(&self, bearer: Option<&str>) -> Result<Grant, AuthError> {
        let bearer = bearer.ok_or(AuthError::Missing)?;
        let oauth_shaped = bearer.len() == ACCESS_CHARS
            && bearer
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
        if !oauth_shaped {
            return match self.auth.authenticate(Some(bearer)).await? {
                Some(user) => Ok(Grant {
                    user: Some(user),
                    client_id: None,
                    scopes: Scopes::all(),
                }),
                // `auth.mode = none`: a `/v1` credential names nobody.
                None => Err(AuthError::Invalid),
            };
        }
        let hash = token_hash(bearer);
        if let Some(grant) = self.oauth.grants.get(&hash) {
            return Ok(grant);
        }
        let seen = self.oauth.grants.generation();
        let record = self
            .store
            .oauth
            .access_by_hash(&hash)
            .await?
            .ok_or(AuthError::Invalid)?;
        let grant = Grant::from_access(&record);
        self.oauth.grants.keep(hash, &grant, seen);
        Ok(grant)
    }
}
