//! The Mastodon API's one error type: `{"error": "..."}` as `application/json`, the shape
//! every Mastodon client reads (masto.js refuses any other content type), and the
//! rewrite that gives the errors made outside its handlers (rate limits, time limits,
//! body limits, unknown routes) the same shape under its paths.

use axum::body::{Body, to_bytes};
use axum::extract::Request;
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use utoipa::ToSchema;

use crate::service::oauth::OAuthError;
use crate::store::StoreError;

/// An error as Mastodon renders it.
#[derive(Debug, Serialize, ToSchema)]
pub struct MastoErrorBody {
    #[schema(example = "Record not found")]
    pub error: String,
    /// OAuth errors (`/oauth/*`): the RFC 6749 code is `error`, the reason here.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error_description: Option<String>,
}

#[derive(Debug)]
pub struct MastoError {
    status: StatusCode,
    message: String,
    description: Option<String>,
}

impl MastoError {
    pub fn new(status: StatusCode, message: impl Into<String>) -> Self {
        MastoError {
            status,
            message: message.into(),
            description: None,
        }
    }

    pub fn not_found() -> Self {
        MastoError::new(StatusCode::NOT_FOUND, "Record not found")
    }

    /// An OAuth error: `{"error": code, "error_description": why}`.
    pub fn oauth(status: StatusCode, code: &str, why: impl Into<String>) -> Self {
        MastoError {
            status,
            message: code.to_owned(),
            description: Some(why.into()),
        }
    }

    /// 401, as Mastodon words it.
    pub fn unauthorized() -> Self {
        MastoError::new(StatusCode::UNAUTHORIZED, "The access token is invalid")
    }

    /// 403, as Mastodon words it.
    pub fn outside_scopes() -> Self {
        MastoError::new(
            StatusCode::FORBIDDEN,
            "This action is outside the authorized scopes",
        )
    }

    /// 422, Mastodon's answer to a request it cannot take.
    pub fn unprocessable(message: impl Into<String>) -> Self {
        MastoError::new(StatusCode::UNPROCESSABLE_ENTITY, message)
    }

    pub fn status(&self) -> StatusCode {
        self.status
    }
}

impl From<StoreError> for MastoError {
    fn from(error: StoreError) -> Self {
        match error {
            StoreError::NotFound(_) => MastoError::not_found(),
            StoreError::Conflict(what) => {
                MastoError::unprocessable(format!("Validation failed: {what} is taken"))
            }
            StoreError::Invalid(why) => {
                MastoError::unprocessable(format!("Validation failed: {why}"))
            }
            StoreError::Forbidden(why) => MastoError::new(StatusCode::FORBIDDEN, why),
            cause => {
                // The cause goes to the log, never to the client.
                tracing::error!(error = %format!("{cause:#}"), "storage failure");
                MastoError::new(StatusCode::SERVICE_UNAVAILABLE, "Service unavailable")
            }
        }
    }
}

impl From<OAuthError> for MastoError {
    /// Outside `/oauth/*` (apps, registration): a 422 that says why.
    fn from(error: OAuthError) -> Self {
        match error {
            OAuthError::Store(error) => error.into(),
            OAuthError::TooManyAttempts => {
                MastoError::new(StatusCode::TOO_MANY_REQUESTS, error.to_string())
            }
            OAuthError::InvalidClient => MastoError::unauthorized(),
            other => MastoError::unprocessable(format!("Validation failed: {other}")),
        }
    }
}

/// An OAuth error as `/oauth/token` and `/oauth/revoke` answer it (RFC 6749 5.2).
pub fn oauth_error(error: OAuthError) -> MastoError {
    let (status, code) = match &error {
        OAuthError::InvalidRequest(_) => (StatusCode::BAD_REQUEST, "invalid_request"),
        OAuthError::InvalidClient => (StatusCode::UNAUTHORIZED, "invalid_client"),
        OAuthError::InvalidGrant(_) => (StatusCode::BAD_REQUEST, "invalid_grant"),
        OAuthError::InvalidScope(_) => (StatusCode::BAD_REQUEST, "invalid_scope"),
        OAuthError::TooManyAttempts => (StatusCode::TOO_MANY_REQUESTS, "too_many_attempts"),
        OAuthError::Store(_) => {
            let OAuthError::Store(error) = error else {
                unreachable!()
            };
            return error.into();
        }
    };
    MastoError::oauth(status, code, error.to_string())
}

impl IntoResponse for MastoError {
    fn into_response(self) -> Response {
        let body = MastoErrorBody {
            error: self.message,
            error_description: self.description,
        };
        (self.status, axum::Json(body)).into_response()
    }
}

/// Whether `path` belongs to the Mastodon API, whose errors are `{"error": ...}`.
pub fn is_mastodon_path(path: &str) -> bool {
    ["/api/", "/oauth/", "/.well-known/", "/nodeinfo/"]
        .iter()
        .any(|prefix| path.starts_with(prefix))
}

/// Error bodies larger than this are not rewritten (none of ours come close).
const MAX_PROBLEM_BYTES: usize = 16 * 1024;

/// Under the Mastodon API's paths, rewrites a problem+json error made by a layer or a
/// fallback into `{"error": detail}`, keeping its status and headers (`Retry-After`
/// and the rate-limit headers among them).
pub async fn rewrite_problems(request: Request, next: Next) -> Response {
    let mastodon = is_mastodon_path(request.uri().path());
    let response = next.run(request).await;
    let problem = response
        .headers()
        .get(header::CONTENT_TYPE)
        .is_some_and(|value| value.as_bytes().starts_with(b"application/problem+json"));
    if !mastodon || !problem {
        return response;
    }
    let (mut parts, body) = response.into_parts();
    let detail = match to_bytes(body, MAX_PROBLEM_BYTES).await {
        Ok(bytes) => serde_json::from_slice::<serde_json::Value>(&bytes)
            .ok()
            .and_then(|v| v.get("detail")?.as_str().map(str::to_owned))
            .unwrap_or_else(|| status_text(parts.status)),
        Err(_) => status_text(parts.status),
    };
    let body = serde_json::to_vec(&MastoErrorBody {
        error: detail,
        error_description: None,
    })
    .unwrap_or_default();
    parts.headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    parts.headers.remove(header::CONTENT_LENGTH);
    Response::from_parts(parts, Body::from(body))
}

fn status_text(status: StatusCode) -> String {
    status.canonical_reason().unwrap_or("Error").to_owned()
}
