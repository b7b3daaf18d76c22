//! `POST /api/v1/accounts` (registration with an app's token, as Mastodon.py's
//! `create_account` and toot's `register_account` do it) and
//! `GET /api/v1/accounts/verify_credentials`, with a minimal Account entity: what a
//! client reads to finish signing in.

use axum::extract::State;
use axum::http::HeaderMap;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

use super::Origin;
use super::auth::{MastoAuth, ReadProfile, Scoped};
use super::error::{MastoError, MastoErrorBody};
use super::form::{FormOrJson, truthy};
use super::oauth::{Token, token};
use crate::domain::{User, format_time_ms};
use crate::http::AppState;
use crate::http::error::Json;

#[derive(Debug, Deserialize, ToSchema)]
pub struct RegistrationForm {
    /// The new user's id: 1–32 characters of `[A-Za-z0-9_]`.
    pub username: String,
    /// 8–128 characters.
    pub password: String,
    /// Accepted and not stored: this server sends no mail.
    pub email: Option<String>,
    /// Must be true.
    #[schema(value_type = bool)]
    pub agreement: Option<Value>,
    pub locale: Option<String>,
    pub reason: Option<String>,
}

/// Register a user with an app's token (`write:accounts`); the answer is a token for
/// the new user from that app, with the app token's scopes.
#[utoipa::path(post, path = "/api/v1/accounts", tag = "mastodon",
    security(("bearer" = [])),
    request_body(content = RegistrationForm, content_type = "application/x-www-form-urlencoded",
        description = "Or the same fields as JSON"),
    responses(
        (status = 200, description = "Registered", body = Token),
        (status = 400, description = "A malformed body", body = MastoErrorBody),
        (status = 401, description = "No valid token", body = MastoErrorBody),
        (status = 403, description = "The token lacks write:accounts", body = MastoErrorBody),
        (status = 415, description = "Neither a form nor JSON", body = MastoErrorBody),
        (status = 422, description = "A taken or invalid username, a short password, no agreement, or a token of no app", body = MastoErrorBody),
    ))]
pub async fn register(
    State(state): State<AppState>,
    auth: MastoAuth,
    FormOrJson(form): FormOrJson<RegistrationForm>,
) -> Result<Json<Token>, MastoError> {
    auth.require(&["write:accounts"])?;
    if !truthy(&form.agreement) {
        return Err(MastoError::unprocessable(
            "Validation failed: agreement must be accepted",
        ));
    }
    let issued = state
        .social
        .register_account(&auth.0, &form.username, &form.password)
        .await?;
    Ok(Json(token(issued)))
}

#[derive(Debug, Serialize, ToSchema)]
pub struct AccountSource {
    pub privacy: String,
    pub sensitive: bool,
    pub language: Option<String>,
    pub note: String,
    pub fields: Vec<Value>,
    pub follow_requests_count: u64,
}

/// Mastodon's Account entity, as far as this server has its fields.
#[derive(Debug, Serialize, ToSchema)]
pub struct Account {
    pub id: String,
    pub username: String,
    /// The user id (no domain: a local account).
    pub acct: String,
    pub display_name: String,
    pub locked: bool,
    pub bot: bool,
    pub group: bool,
    pub discoverable: bool,
    pub created_at: String,
    pub note: String,
    pub url: String,
    pub avatar: String,
    pub avatar_static: String,
    pub header: String,
    pub header_static: String,
    pub followers_count: u64,
    pub following_count: u64,
    pub statuses_count: u64,
    pub last_status_at: Option<String>,
    pub emojis: Vec<Value>,
    pub fields: Vec<Value>,
    /// Only for the account's own user (verify_credentials).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source: Option<AccountSource>,
}

/// The Account entity of `user`, with placeholder avatar and header images.
pub fn account(origin: &Origin, user: User) -> Account {
    let base = origin.base();
    let avatar = format!("{base}/avatars/original/missing.png");
    let header = format!("{base}/headers/original/missing.png");
    Account {
        url: format!("{base}/@{}", user.id),
        username: user.id.clone(),
        acct: user.id.clone(),
        id: user.id,
        display_name: user.display_name,
        locked: false,
        bot: false,
        group: false,
        discoverable: true,
        created_at: format_time_ms(user.created_at_ms),
        note: String::new(),
        avatar_static: avatar.clone(),
        avatar,
        header_static: header.clone(),
        header,
        followers_count: user.followers_count,
        following_count: user.following_count,
        statuses_count: user.posts_count,
        last_status_at: None,
        emojis: Vec::new(),
        fields: Vec::new(),
        source: None,
    }
}

/// The token's user, with `source`.
#[utoipa::path(get, path = "/api/v1/accounts/verify_credentials", tag = "mastodon",
    security(("bearer" = [])),
    responses(
        (status = 200, description = "The token's user", body = Account),
        (status = 401, description = "No valid token", body = MastoErrorBody),
        (status = 403, description = "The token holds neither read:accounts nor profile", body = MastoErrorBody),
        (status = 422, description = "An app's own token (no user)", body = MastoErrorBody),
    ))]
pub async fn verify_credentials(
    State(state): State<AppState>,
    headers: HeaderMap,
    auth: Scoped<ReadProfile>,
) -> Result<Json<Account>, MastoError> {
    let user = state.social.user(auth.user()?).await?;
    let mut account = account(&Origin::of(&state.mastodon, &headers), user);
    account.source = Some(AccountSource {
        privacy: "public".to_owned(),
        sensitive: false,
        language: None,
        note: String::new(),
        fields: Vec::new(),
        follow_requests_count: 0,
    });
    Ok(Json(account))
}
