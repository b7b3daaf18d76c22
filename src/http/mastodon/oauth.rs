//! `POST /oauth/token` (grants `authorization_code` with PKCE S256,
//! `client_credentials`, `password`, `refresh_token`; the code and password grants issue
//! a refresh token, one use each), `POST /oauth/revoke`
//! and `GET /.well-known/oauth-authorization-server`, which lists exactly these. Bodies
//! are forms or JSON; the client authenticates in the body or with HTTP Basic.

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::Origin;
use super::auth::ClientAddr;
use super::error::{MastoError, MastoErrorBody, oauth_error};
use super::form::{FormOrJson, StringOrList};
use crate::domain::scopes::{GRANULAR_SCOPES, TOP_SCOPES};
use crate::http::AppState;
use crate::http::error::Json;
use crate::service::oauth::{IssuedAccess, OAuthError};
use crate::store::AppRecord;

/// The grants `/oauth/token` serves.
pub const GRANT_TYPES: [&str; 4] = [
    "authorization_code",
    "client_credentials",
    "password",
    "refresh_token",
];

#[derive(Debug, Deserialize, ToSchema)]
pub struct TokenForm {
    #[schema(example = "authorization_code")]
    pub grant_type: String,
    pub client_id: Option<String>,
    pub client_secret: Option<String>,
    /// `authorization_code`.
    pub code: Option<String>,
    /// `authorization_code`: the authorize request's, repeated.
    pub redirect_uri: Option<String>,
    /// `authorization_code` with PKCE.
    pub code_verifier: Option<String>,
    /// `password`: the user id.
    pub username: Option<String>,
    /// `refresh_token`: a refresh token this app was given, spent by this request.
    pub refresh_token: Option<String>,
    /// `password`.
    pub password: Option<String>,
    /// `password`, `client_credentials`: space-separated, within the app's; the app's
    /// scopes when absent. `refresh_token`: within the refresh token's; its scopes when
    /// absent.
    #[schema(value_type = Option<String>)]
    pub scope: Option<StringOrList>,
}

/// An access token (Mastodon's Token entity).
#[derive(Debug, Serialize, ToSchema)]
pub struct Token {
    pub access_token: String,
    #[schema(example = "Bearer")]
    pub token_type: String,
    #[schema(example = "read write follow push")]
    pub scope: String,
    /// Unix seconds.
    pub created_at: i64,
    /// With the `authorization_code`, `password` and `refresh_token` grants: spend it
    /// with `grant_type=refresh_token` for a new pair (once; it stops working then, and
    /// the access token issued with it is revoked).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub refresh_token: Option<String>,
}

pub(super) fn token(issued: IssuedAccess) -> Token {
    Token {
        access_token: issued.token,
        token_type: "Bearer".to_owned(),
        scope: issued.scopes.to_string(),
        created_at: issued.created_at_ms.div_euclid(1000),
        refresh_token: issued.refresh_token,
    }
}

/// The client's id and secret, from the body or an `Authorization: Basic` header.
fn client_credentials(
    headers: &HeaderMap,
    client_id: Option<String>,
    client_secret: Option<String>,
) -> Option<(String, String)> {
    if let (Some(id), Some(secret)) = (client_id, client_secret) {
        return Some((id, secret));
    }
    let value = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, encoded) = value.split_once(' ')?;
    if !scheme.eq_ignore_ascii_case("basic") {
        return None;
    }
    let decoded = String::from_utf8(STANDARD.decode(encoded.trim()).ok()?).ok()?;
    let (id, secret) = decoded.split_once(':')?;
    Some((id.to_owned(), secret.to_owned()))
}

async fn client(
    state: &AppState,
    headers: &HeaderMap,
    id: Option<String>,
    secret: Option<String>,
) -> Result<AppRecord, MastoError> {
    let (id, secret) =
        client_credentials(headers, id, secret).ok_or(oauth_error(OAuthError::InvalidClient))?;
    state.social.client(&id, &secret).await.map_err(oauth_error)
}

fn missing(field: &str) -> MastoError {
    oauth_error(OAuthError::InvalidRequest(format!("{field} is missing")))
}

/// Obtain an access token.
#[utoipa::path(post, path = "/oauth/token", tag = "mastodon",
    request_body(content = TokenForm, content_type = "application/x-www-form-urlencoded",
        description = "Or the same fields as JSON"),
    responses(
        (status = 200, description = "Issued", body = Token),
        (status = 400, description = "invalid_request, invalid_grant (unknown, spent, expired or foreign code, wrong redirect_uri or code_verifier, wrong credentials, unknown, spent, revoked or foreign refresh token), invalid_scope or unsupported_grant_type", body = MastoErrorBody),
        (status = 401, description = "invalid_client", body = MastoErrorBody),
        (status = 415, description = "Neither a form nor JSON", body = MastoErrorBody),
        (status = 422, description = "A field of the wrong type", body = MastoErrorBody),
        (status = 429, description = "Too many failed sign-ins for the user or from the address", body = MastoErrorBody),
    ))]
pub async fn token_endpoint(
    State(state): State<AppState>,
    ClientAddr(address): ClientAddr,
    headers: HeaderMap,
    FormOrJson(form): FormOrJson<TokenForm>,
) -> Result<Json<Token>, MastoError> {
    if !GRANT_TYPES.contains(&form.grant_type.as_str()) {
        return Err(MastoError::oauth(
            StatusCode::BAD_REQUEST,
            "unsupported_grant_type",
            format!("grant_type must be one of {}", GRANT_TYPES.join(", ")),
        ));
    }
    let app = client(&state, &headers, form.client_id, form.client_secret).await?;
    let scope = form.scope.as_ref().map(StringOrList::joined);
    let issued = match form.grant_type.as_str() {
        "authorization_code" => {
            let code = form.code.ok_or_else(|| missing("code"))?;
            state
                .social
                .exchange_code(
                    &app,
                    &code,
                    form.redirect_uri.as_deref(),
                    form.code_verifier.as_deref(),
                )
                .await
        }
        "password" => {
            let user = form.username.ok_or_else(|| missing("username"))?;
            let password = form.password.ok_or_else(|| missing("password"))?;
            state
                .social
                .password_grant(&app, &user, &password, scope.as_deref(), address)
                .await
        }
        "refresh_token" => {
            let refresh = form.refresh_token.ok_or_else(|| missing("refresh_token"))?;
            state
                .social
                .refresh_grant(&app, &refresh, scope.as_deref())
                .await
        }
        _ => {
            state
                .social
                .client_credentials_grant(&app, scope.as_deref())
                .await
        }
    };
    Ok(Json(token(issued.map_err(oauth_error)?)))
}

#[derive(Debug, Deserialize, ToSchema)]
pub struct RevokeForm {
    pub client_id: Option<String>,
    pub client_secret: Option<String>,
    /// The access token or refresh token to revoke (an access token takes the refresh
    /// token issued with it along).
    pub token: String,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct Empty {}

/// Revoke an access or refresh token the client holds; an unknown one is no error.
#[utoipa::path(post, path = "/oauth/revoke", tag = "mastodon",
    request_body(content = RevokeForm, content_type = "application/x-www-form-urlencoded",
        description = "Or the same fields as JSON"),
    responses(
        (status = 200, description = "Revoked, or no such token of this client", body = Empty),
        (status = 400, description = "A malformed body", body = MastoErrorBody),
        (status = 401, description = "invalid_client", body = MastoErrorBody),
        (status = 415, description = "Neither a form nor JSON", body = MastoErrorBody),
        (status = 422, description = "No token", body = MastoErrorBody),
    ))]
pub async fn revoke(
    State(state): State<AppState>,
    headers: HeaderMap,
    FormOrJson(form): FormOrJson<RevokeForm>,
) -> Result<Json<Empty>, MastoError> {
    let app = client(&state, &headers, form.client_id, form.client_secret).await?;
    state.social.revoke_access(&app, &form.token).await?;
    Ok(Json(Empty {}))
}

/// RFC 8414 authorization server metadata: what this server serves, nothing more.
#[derive(Debug, Serialize, ToSchema)]
pub struct ServerMetadata {
    pub issuer: String,
    pub authorization_endpoint: String,
    pub token_endpoint: String,
    pub revocation_endpoint: String,
    pub app_registration_endpoint: String,
    pub scopes_supported: Vec<String>,
    pub response_types_supported: Vec<String>,
    pub response_modes_supported: Vec<String>,
    pub grant_types_supported: Vec<String>,
    pub code_challenge_methods_supported: Vec<String>,
    pub token_endpoint_auth_methods_supported: Vec<String>,
}

fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| (*s).to_owned()).collect()
}

/// OAuth 2 server metadata.
#[utoipa::path(get, path = "/.well-known/oauth-authorization-server", tag = "mastodon",
    responses((status = 200, description = "The endpoints, grants and scopes served", body = ServerMetadata)))]
pub async fn metadata(State(state): State<AppState>, headers: HeaderMap) -> Json<ServerMetadata> {
    let origin = Origin::of(&state.mastodon, &headers);
    let base = origin.base();
    Json(ServerMetadata {
        issuer: format!("{base}/"),
        authorization_endpoint: format!("{base}/oauth/authorize"),
        token_endpoint: format!("{base}/oauth/token"),
        revocation_endpoint: format!("{base}/oauth/revoke"),
        app_registration_endpoint: format!("{base}/api/v1/apps"),
        scopes_supported: TOP_SCOPES
            .iter()
            .chain(GRANULAR_SCOPES.iter())
            .map(|s| (*s).to_owned())
            .collect(),
        response_types_supported: strings(&["code"]),
        response_modes_supported: strings(&["query"]),
        grant_types_supported: strings(&GRANT_TYPES),
        code_challenge_methods_supported: strings(&["S256"]),
        token_endpoint_auth_methods_supported: strings(&[
            "client_secret_basic",
            "client_secret_post",
        ]),
    })
}
