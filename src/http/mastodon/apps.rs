//! `POST /api/v1/apps` (register a client, form or JSON) and
//! `GET /api/v1/apps/verify_credentials`.

use axum::extract::State;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::auth::MastoAuth;
use super::error::{MastoError, MastoErrorBody};
use super::form::{FormOrJson, StringOrList};
use crate::http::AppState;
use crate::http::error::Json;
use crate::service::oauth::NewApp;
use crate::store::AppRecord;

/// A client's registration.
#[derive(Debug, Deserialize, ToSchema)]
pub struct AppForm {
    #[schema(example = "My client")]
    pub client_name: String,
    /// One URI, several separated by spaces or newlines, or a list; each matched
    /// exactly at the authorize step. `urn:ietf:wg:oauth:2.0:oob` shows the code.
    #[schema(value_type = String, example = "urn:ietf:wg:oauth:2.0:oob")]
    pub redirect_uris: StringOrList,
    /// Space-separated; `read` when absent.
    #[schema(value_type = Option<String>, example = "read write follow push")]
    pub scopes: Option<StringOrList>,
    pub website: Option<String>,
}

/// An application (Mastodon's Application entity).
#[derive(Debug, Serialize, ToSchema)]
pub struct Application {
    pub id: String,
    pub name: String,
    pub website: Option<String>,
    pub scopes: Vec<String>,
    /// The redirect URIs, newline separated (Mastodon's older field).
    pub redirect_uri: String,
    pub redirect_uris: Vec<String>,
    /// Empty: no Web Push.
    pub vapid_key: String,
}

/// An application with its credentials (Mastodon's CredentialApplication).
#[derive(Debug, Serialize, ToSchema)]
pub struct CredentialApplication {
    #[serde(flatten)]
    pub app: Application,
    pub client_id: String,
    /// Shown only now.
    pub client_secret: String,
    /// 0: never expires.
    pub client_secret_expires_at: i64,
}

pub(super) fn application(app: &AppRecord) -> Application {
    Application {
        id: app.client_id.clone(),
        name: app.name.clone(),
        website: app.website.clone(),
        scopes: app.scopes.split_whitespace().map(str::to_owned).collect(),
        redirect_uri: app.redirect_uris.join("\n"),
        redirect_uris: app.redirect_uris.clone(),
        vapid_key: String::new(),
    }
}

/// Register a client application.
#[utoipa::path(post, path = "/api/v1/apps", tag = "mastodon",
    request_body(content = AppForm, content_type = "application/x-www-form-urlencoded",
        description = "Or the same fields as JSON"),
    responses(
        (status = 200, description = "Registered", body = CredentialApplication),
        (status = 400, description = "A malformed body", body = MastoErrorBody),
        (status = 415, description = "Neither a form nor JSON", body = MastoErrorBody),
        (status = 422, description = "A missing or invalid field", body = MastoErrorBody),
    ))]
pub async fn create_app(
    State(state): State<AppState>,
    FormOrJson(form): FormOrJson<AppForm>,
) -> Result<Json<CredentialApplication>, MastoError> {
    let created = state
        .social
        .create_app(NewApp {
            name: form.client_name,
            redirect_uris: form.redirect_uris.items(),
            scopes: form.scopes.map(|s| s.joined()).unwrap_or_default(),
            website: form.website,
        })
        .await?;
    Ok(Json(CredentialApplication {
        app: application(&created.app),
        client_id: created.app.client_id,
        client_secret: created.client_secret,
        client_secret_expires_at: 0,
    }))
}

/// The application whose token this is.
#[utoipa::path(get, path = "/api/v1/apps/verify_credentials", tag = "mastodon",
    security(("bearer" = [])),
    responses(
        (status = 200, description = "The token's application", body = Application),
        (status = 401, description = "No valid token, or a token of no app (a /v1 token)", body = MastoErrorBody),
    ))]
pub async fn verify_app(
    State(state): State<AppState>,
    auth: MastoAuth,
) -> Result<Json<Application>, MastoError> {
    match state.social.app_of(&auth.0).await? {
        Some(app) => Ok(Json(application(&app))),
        None => Err(MastoError::unauthorized()),
    }
}
