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

/// An error as Mastodon renders it.
#[derive(Debug, Serialize, ToSchema)]
pub struct MastoErrorBody {
    #[schema(example = "Record not found")]
    pub error: String,
}

#[derive(Debug)]
pub struct MastoError {
    status: StatusCode,
    message: String,
}

impl MastoError {
    pub fn new(status: StatusCode, message: impl Into<String>) -> Self {
        MastoError {
            status,
            message: message.into(),
        }
    }

    pub fn not_found() -> Self {
        MastoError::new(StatusCode::NOT_FOUND, "Record not found")
    }
}

impl IntoResponse for MastoError {
    fn into_response(self) -> Response {
        let body = MastoErrorBody {
            error: self.message,
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
    let body = serde_json::to_vec(&MastoErrorBody { error: detail }).unwrap_or_default();
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
