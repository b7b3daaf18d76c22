//! `POST /api/v1/accounts` (registration with an app's token, as Mastodon.py's
//! `create_account` and toot's `register_account` do it) and
//! `GET /api/v1/accounts/verify_credentials`: what a client reads to finish signing in.

use axum::extract::State;
use axum::http::HeaderMap;
use serde::Deserialize;
use serde_json::Value;
use utoipa::ToSchema;

use super::Origin;
use super::auth::{MastoAuth, ReadProfile, Scoped};
use super::entities::Account;
use super::error::{MastoError, MastoErrorBody};
use super::form::{FormOrJson, truthy};
use super::oauth::{Token, token};
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
    let account = state.social.account(auth.user()?).await?;
    let origin = Origin::of(&state.mastodon, &headers);
    Ok(Json(Account::credential(&origin, &account)))
}
