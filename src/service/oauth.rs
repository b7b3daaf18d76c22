//! Sign-in for the Mastodon API: passwords, OAuth 2 apps, authorization codes (PKCE
//! S256), access tokens with scopes, and the limit on failed sign-ins. The rules live
//! here once; `http::mastodon` parses and renders.
//!
//! OAuth access tokens are 48 random bytes (64 url-safe base64 characters), `/v1` API
//! tokens 32 (43 characters) and JWTs carry dots, so a bearer value's shape says which
//! store to look it up in: a `/v1` credential costs the Mastodon API no extra read.
//!
//! This file has the shared types and the token grants (`password`,
//! `client_credentials`, and the access token they issue); apps are in `oauth/apps.rs`,
//! signing in and registering with a password in `accounts.rs`, what a bearer grants
//! and revocation in `grants.rs`, the code flow in `code.rs`, refresh tokens in
//! `refresh.rs`, the authorize form's CSRF token in `forms.rs`.

mod accounts;
mod apps;
mod code;
mod forms;
mod grants;
mod limits;
mod passwords;
mod refresh;

use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;

use super::Social;
use super::auth::hash;
use crate::domain::clock::{Clock, SystemClock};
use crate::domain::scopes::Scopes;
use crate::store::{AccessRecord, AppRecord, StoreError};

pub use apps::{CreatedApp, NewApp};
pub use code::AuthorizeRequest;
pub use forms::FORM_TTL_MS;
pub use grants::Grant;
pub use limits::LimitSettings;
pub use passwords::{MAX_PASSWORD_CHARS, MIN_PASSWORD_CHARS, validate_password};

/// How long an authorization code may wait for its exchange.
pub const CODE_TTL_MS: i64 = 10 * 60 * 1000;
/// The redirect URI that shows the code on a page instead of redirecting.
pub const OOB_URI: &str = "urn:ietf:wg:oauth:2.0:oob";
/// The bytes of an OAuth access token.
const ACCESS_BYTES: usize = 48;
const ACCESS_CHARS: usize = 64;

/// Why an OAuth request is refused (the names are RFC 6749's).
#[derive(Debug, thiserror::Error)]
pub enum OAuthError {
    #[error("{0}")]
    InvalidRequest(String),
    #[error("client authentication failed")]
    InvalidClient,
    #[error("{0}")]
    InvalidGrant(String),
    #[error("{0}")]
    InvalidScope(String),
    #[error("too many failed sign-ins; try again later")]
    TooManyAttempts,
    #[error(transparent)]
    Store(#[from] StoreError),
}

pub type OAuthResult<T> = Result<T, OAuthError>;

/// Sign-in settings (`mastodon.signin_*`, `auth.token_cache_ttl`).
pub struct OAuthSettings {
    pub limits: LimitSettings,
    pub token_cache_ttl: Duration,
}

impl Default for OAuthSettings {
    fn default() -> Self {
        OAuthSettings {
            limits: LimitSettings::default(),
            token_cache_ttl: Duration::from_secs(10),
        }
    }
}

/// This process's sign-in state.
pub struct OAuthState {
    limits: limits::SignInLimits,
    forms: forms::FormKey,
    grants: grants::GrantCache,
    pub(super) clock: Arc<dyn Clock>,
}

impl OAuthState {
    pub fn new(settings: OAuthSettings) -> OAuthState {
        OAuthState {
            limits: limits::SignInLimits::new(settings.limits),
            forms: forms::FormKey::default(),
            grants: grants::GrantCache::new(settings.token_cache_ttl),
            clock: Arc::new(SystemClock),
        }
    }
}

/// An access token as issued: its value is shown once.
#[derive(Debug, Clone)]
pub struct IssuedAccess {
    pub token: String,
    /// Issued with the `authorization_code`, `password` and `refresh_token` grants:
    /// shown once, one use (see `oauth/refresh.rs`).
    pub refresh_token: Option<String>,
    pub scopes: Scopes,
    pub created_at_ms: i64,
}

fn random_token(bytes: usize) -> String {
    let mut buf = vec![0u8; bytes];
    rand::fill(&mut buf[..]);
    URL_SAFE_NO_PAD.encode(buf)
}

fn scopes_of(text: &str, default: &str) -> OAuthResult<Scopes> {
    Scopes::parse(text, default).map_err(OAuthError::InvalidScope)
}

/// `scope` as asked (the app's own scopes when empty), refused beyond the app's.
fn requested_scopes(app: &AppRecord, scope: Option<&str>) -> OAuthResult<Scopes> {
    let allowed = scopes_of(&app.scopes, "read")?;
    let asked = match scope.map(str::trim).filter(|s| !s.is_empty()) {
        Some(scope) => scopes_of(scope, "read")?,
        None => allowed.clone(),
    };
    if !asked.within(&allowed) {
        return Err(OAuthError::InvalidScope(format!(
            "the scopes asked for ({asked}) are beyond the app's ({allowed})"
        )));
    }
    Ok(asked)
}

impl Social {
    fn oauth_now(&self) -> i64 {
        self.oauth.clock.now_ms()
    }

    /// `password`: the user's credentials under the sign-in limits.
    pub async fn password_grant(
        &self,
        client: &AppRecord,
        user: &str,
        password: &str,
        scope: Option<&str>,
        address: IpAddr,
    ) -> OAuthResult<IssuedAccess> {
        let scopes = requested_scopes(client, scope)?;
        self.sign_in(user, password, address).await?;
        self.issue_pair(user, &client.client_id, scopes).await
    }

    /// `client_credentials`: a token for the app itself, with no user.
    pub async fn client_credentials_grant(
        &self,
        client: &AppRecord,
        scope: Option<&str>,
    ) -> OAuthResult<IssuedAccess> {
        let scopes = requested_scopes(client, scope)?;
        self.issue_access(None, &client.client_id, scopes).await
    }

    async fn issue_access(
        &self,
        user: Option<&str>,
        client_id: &str,
        scopes: Scopes,
    ) -> OAuthResult<IssuedAccess> {
        loop {
            let token = random_token(ACCESS_BYTES);
            let record = AccessRecord {
                id: hex::encode(rand::random::<[u8; 8]>()),
                user: user.map(str::to_owned),
                client_id: client_id.to_owned(),
                scopes: scopes.to_string(),
                created_at_ms: self.oauth_now(),
            };
            match self.store.oauth.insert_access(&hash(&token), &record).await {
                Ok(()) => {
                    return Ok(IssuedAccess {
                        token,
                        refresh_token: None,
                        scopes,
                        created_at_ms: record.created_at_ms,
                    });
                }
                Err(StoreError::Conflict(_)) => continue,
                Err(error) => return Err(error.into()),
            }
        }
    }
}
