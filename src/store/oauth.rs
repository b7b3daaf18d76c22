//! The sign-in port: users' password hashes, and OAuth 2's registered apps, authorization
//! codes and access tokens. Secrets are stored as hashes only: a password as its
//! Argon2id PHC string, an app's secret, a code and a token as the SHA-256 of their
//! value (looked up by that hash through the primary key, like `/v1` tokens).
//!
//! OAuth access tokens are kept apart from `/v1` API tokens (`TokenStore`): they carry
//! scopes and an app, and may name no user (an app's own token), which `/v1`, having no
//! scopes, could not enforce. So an OAuth token opens the Mastodon API only.

use async_trait::async_trait;

use super::{StoreResult, TokenHash};

/// A registered client application.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AppRecord {
    /// Public, random; the primary key.
    pub client_id: String,
    /// SHA-256 of the client secret.
    pub secret_hash: TokenHash,
    pub name: String,
    /// Exact URIs the authorize step may redirect to (or `urn:ietf:wg:oauth:2.0:oob`).
    pub redirect_uris: Vec<String>,
    /// Space-separated: the most any of its tokens may hold.
    pub scopes: String,
    pub website: Option<String>,
    pub created_at_ms: i64,
}

/// An authorization code, stored by the SHA-256 of its value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CodeRecord {
    pub client_id: String,
    pub user: String,
    /// The redirect URI of the authorize request, which the token request must repeat.
    pub redirect_uri: String,
    pub scopes: String,
    /// PKCE: the S256 challenge, when the client sent one.
    pub challenge: Option<String>,
    pub expires_at_ms: i64,
}

/// An OAuth access token, stored by the SHA-256 of its value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AccessRecord {
    /// Public id (random).
    pub id: String,
    /// `None`: the app's own token (client credentials).
    pub user: Option<String>,
    pub client_id: String,
    pub scopes: String,
    pub created_at_ms: i64,
}

/// An OAuth refresh token, stored by the SHA-256 of its value. One use: the
/// `refresh_token` grant takes it (`OAuthStore::take_refresh`) and issues another.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RefreshRecord {
    /// Public id (random).
    pub id: String,
    pub user: String,
    pub client_id: String,
    /// The most a token it buys may hold.
    pub scopes: String,
    /// The SHA-256 of the access token issued with it: revoking that token revokes this.
    pub access_hash: TokenHash,
    pub created_at_ms: i64,
}

#[async_trait]
pub trait OAuthStore: Send + Sync + 'static {
    /// Sets (replaces) `user`'s password hash; `false` when there is no such user.
    /// Not a change of the profile: nothing is appended to the change feed.
    async fn set_password(&self, user: &str, hash: &str) -> StoreResult<bool>;
    /// `user`'s password hash; `None` when the user is unknown or has none.
    async fn password_hash(&self, user: &str) -> StoreResult<Option<String>>;

    /// `Conflict` when the client id is taken.
    async fn insert_app(&self, app: &AppRecord) -> StoreResult<()>;
    async fn app(&self, client_id: &str) -> StoreResult<Option<AppRecord>>;

    /// Stores a code, and deletes the codes that expired before `now_ms`. `Conflict`
    /// when the hash is taken.
    async fn insert_code(
        &self,
        hash: &TokenHash,
        code: &CodeRecord,
        now_ms: i64,
    ) -> StoreResult<()>;
    /// Deletes the code and returns what it was, in one atomic write: of any number of
    /// calls with one hash, at most one gets `Some`. The caller checks the record (its
    /// client, redirect URI, expiry, PKCE verifier); a code presented once is spent
    /// whatever the outcome.
    async fn take_code(&self, hash: &TokenHash) -> StoreResult<Option<CodeRecord>>;

    /// `Conflict` when the hash is taken.
    async fn insert_access(&self, hash: &TokenHash, access: &AccessRecord) -> StoreResult<()>;
    async fn access_by_hash(&self, hash: &TokenHash) -> StoreResult<Option<AccessRecord>>;
    /// Deletes the token whose value hashes to `hash` if `client_id` issued it; `false`
    /// when there was none.
    async fn revoke_access(&self, hash: &TokenHash, client_id: &str) -> StoreResult<bool>;

    /// `Conflict` when the hash is taken.
    async fn insert_refresh(&self, hash: &TokenHash, refresh: &RefreshRecord) -> StoreResult<()>;
    /// Deletes the refresh token and returns what it was, in one atomic write: of any
    /// number of calls with one hash, at most one gets `Some` (rotation: a refresh token
    /// buys one new pair, then stops working).
    async fn take_refresh(&self, hash: &TokenHash) -> StoreResult<Option<RefreshRecord>>;
    /// Deletes, if `client_id` holds them, the refresh token whose value hashes to
    /// `hash` and those issued with the access token whose value hashes to `hash`;
    /// `false` when there was none.
    async fn revoke_refresh(&self, hash: &TokenHash, client_id: &str) -> StoreResult<bool>;
}
