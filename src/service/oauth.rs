//! Sign-in for the Mastodon API: passwords, OAuth 2 apps, authorization codes (PKCE
//! S256), access tokens with scopes, and the limit on failed sign-ins. The rules live
//! here once; `http::mastodon` parses and renders.
//!
//! OAuth access tokens are 48 random bytes (64 url-safe base64 characters), `/v1` API
//! tokens 32 (43 characters) and JWTs carry dots, so a bearer value's shape says which
//! store to look it up in: a `/v1` credential costs the Mastodon API no extra read.

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
use subtle::ConstantTimeEq;

use super::Social;
use super::auth::{AuthError, hash};
use crate::domain::clock::{Clock, SystemClock};
use crate::domain::scopes::Scopes;
use crate::domain::{User, validate_user_id};
use crate::store::{AccessRecord, AppRecord, StoreError, StoreResult};

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

/// A new app's registration.
pub struct NewApp {
    pub name: String,
    pub redirect_uris: Vec<String>,
    pub scopes: String,
    pub website: Option<String>,
}

/// An app as registered, with its secret shown once.
pub struct CreatedApp {
    pub app: AppRecord,
    pub client_secret: String,
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

/// A URI an app may register: a scheme, then no whitespace and no fragment.
fn valid_redirect_uri(uri: &str) -> bool {
    let Some((scheme, rest)) = uri.split_once(':') else {
        return false;
    };
    uri.len() <= 2000
        && !rest.is_empty()
        && scheme.starts_with(|c: char| c.is_ascii_alphabetic())
        && scheme
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c))
        && !uri
            .chars()
            .any(|c| c.is_whitespace() || c.is_control() || c == '#')
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

    /// Registers an app.
    pub async fn create_app(&self, app: NewApp) -> OAuthResult<CreatedApp> {
        let name = app.name.trim();
        if name.is_empty() || name.chars().count() > 200 {
            return Err(OAuthError::InvalidRequest(
                "client_name must be 1-200 characters".to_owned(),
            ));
        }
        if app.redirect_uris.is_empty() || app.redirect_uris.len() > 10 {
            return Err(OAuthError::InvalidRequest(
                "redirect_uris must name 1-10 URIs".to_owned(),
            ));
        }
        if let Some(bad) = app.redirect_uris.iter().find(|u| !valid_redirect_uri(u)) {
            return Err(OAuthError::InvalidRequest(format!(
                "redirect URI {bad:?} is not an absolute URI without a fragment"
            )));
        }
        let scopes = scopes_of(&app.scopes, "read")?;
        let website = app.website.filter(|w| !w.trim().is_empty());
        if website.as_ref().is_some_and(|w| w.len() > 2000) {
            return Err(OAuthError::InvalidRequest("website is too long".to_owned()));
        }
        let client_secret = random_token(32);
        let record = AppRecord {
            client_id: random_token(32),
            secret_hash: hash(&client_secret),
            name: name.to_owned(),
            redirect_uris: app.redirect_uris,
            scopes: scopes.to_string(),
            website,
            created_at_ms: self.oauth_now(),
        };
        self.store.oauth.insert_app(&record).await?;
        Ok(CreatedApp {
            app: record,
            client_secret,
        })
    }

    /// The app `client_id` names, once `client_secret` proves it (digests compared in
    /// constant time).
    pub async fn client(&self, client_id: &str, client_secret: &str) -> OAuthResult<AppRecord> {
        let app = self
            .store
            .oauth
            .app(client_id)
            .await?
            .ok_or(OAuthError::InvalidClient)?;
        if bool::from(hash(client_secret).ct_eq(&app.secret_hash)) {
            Ok(app)
        } else {
            Err(OAuthError::InvalidClient)
        }
    }

    /// The app a grant's token belongs to.
    pub async fn app_of(&self, grant: &Grant) -> StoreResult<Option<AppRecord>> {
        match &grant.client_id {
            Some(id) => self.store.oauth.app(id).await,
            None => Ok(None),
        }
    }

    /// A CSRF token for the authorize form carrying `fields`.
    pub fn form_token(&self, fields: &[&str]) -> String {
        self.oauth.forms.issue(fields, self.oauth_now())
    }

    /// Whether `token` was issued by [`Social::form_token`] for `fields`, lately.
    pub fn form_token_holds(&self, token: &str, fields: &[&str]) -> bool {
        self.oauth.forms.check(token, fields, self.oauth_now())
    }

    /// Checks `user`'s credentials under the sign-in limits: their password, or, for a
    /// user without one, one of their `/v1` credentials (an API token or a JWT). The
    /// answer does not say whether the user exists.
    pub async fn sign_in(&self, user: &str, secret: &str, address: IpAddr) -> OAuthResult<()> {
        let refused = || OAuthError::InvalidGrant("invalid user or password".to_owned());
        if validate_user_id(user).is_err() || secret.is_empty() || secret.len() > 8 * 1024 {
            return Err(refused());
        }
        self.oauth
            .limits
            .attempt(user, address, self.oauth_now())
            .map_err(|_| OAuthError::TooManyAttempts)?;
        let holds = match self.store.oauth.password_hash(user).await? {
            Some(phc) => passwords::verify_password(secret, &phc).await,
            None => match self.auth.authenticate(Some(secret)).await {
                Ok(Some(named)) => bool::from(named.as_bytes().ct_eq(user.as_bytes())),
                Ok(None) | Err(AuthError::Missing | AuthError::Invalid) => false,
                Err(AuthError::Store(error)) => return Err(error.into()),
            },
        };
        if !holds {
            tracing::info!(user, %address, "a sign-in failed");
            return Err(refused());
        }
        self.oauth.limits.succeeded(user, address);
        Ok(())
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

    /// Revokes `token` if `client` holds it: here at once, in other processes within
    /// `auth.token_cache_ttl`. An unknown token is no error (RFC 7009).
    pub async fn revoke_access(&self, client: &AppRecord, token: &str) -> StoreResult<()> {
        let hash = grants::token_hash(token);
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
        let hash = grants::token_hash(bearer);
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

    /// Sets `user`'s password (replacing any).
    pub async fn set_password(&self, user: &str, password: &str) -> StoreResult<()> {
        validate_password(password).map_err(StoreError::Invalid)?;
        let phc = passwords::hash_password(password).await?;
        if self.store.oauth.set_password(user, &phc).await? {
            Ok(())
        } else {
            Err(StoreError::NotFound(format!("user {user}")))
        }
    }

    /// [`Social::register`] with an optional password, hashed before the user is
    /// stored; should storing it fail, the user exists without one (the answer is a
    /// 503) and can set one with their token.
    pub async fn register_with_password(
        &self,
        id: &str,
        display_name: &str,
        password: Option<&str>,
    ) -> StoreResult<(User, Option<super::IssuedToken>)> {
        let phc = match password {
            Some(password) => {
                validate_password(password).map_err(StoreError::Invalid)?;
                Some(passwords::hash_password(password).await?)
            }
            None => None,
        };
        let user = self.create_user(id, display_name).await?;
        if let Some(phc) = phc {
            self.store.oauth.set_password(id, &phc).await?;
        }
        let token = if self.auth.issues_tokens() {
            Some(self.auth.issue(id).await?)
        } else {
            None
        };
        Ok((user, token))
    }

    /// `POST /api/v1/accounts`: a new user with a password, and a token for them from
    /// the app whose token asked, with that token's scopes.
    pub async fn register_account(
        &self,
        grant: &Grant,
        username: &str,
        password: &str,
    ) -> OAuthResult<IssuedAccess> {
        let client_id = grant
            .client_id
            .clone()
            .ok_or_else(|| OAuthError::InvalidRequest("an app token is needed".to_owned()))?;
        validate_user_id(username).map_err(|e| OAuthError::InvalidRequest(e.to_string()))?;
        validate_password(password).map_err(OAuthError::InvalidRequest)?;
        self.register_with_password(username, username, Some(password))
            .await?;
        self.issue_access(Some(username), &client_id, grant.scopes.clone())
            .await
    }
}
