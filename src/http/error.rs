//! The API's one error type, rendered as `application/problem+json` (RFC 9457), and
//! extractors whose rejections render the same way.

use axum::extract::rejection::{JsonRejection, QueryRejection};
use axum::extract::{FromRequest, FromRequestParts};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use utoipa::ToSchema;

use crate::store::StoreError;

/// A problem detail.
#[derive(Debug, Serialize, ToSchema)]
pub struct Problem {
    /// A URI reference naming the kind of problem.
    #[serde(rename = "type")]
    #[schema(example = "/problems/not-found")]
    pub kind: String,
    #[schema(example = "Not Found")]
    pub title: String,
    #[schema(example = 404)]
    pub status: u16,
    #[schema(example = "user alice not found")]
    pub detail: String,
}

#[derive(Debug)]
pub struct ApiError {
    status: StatusCode,
    kind: &'static str,
    detail: String,
    /// Seconds a client should wait before retrying, sent as `Retry-After`.
    retry_after: Option<u32>,
    /// More headers: `WWW-Authenticate` on a 401, `RateLimit-*` on a 429.
    headers: Vec<(&'static str, String)>,
}

impl ApiError {
    pub fn new(status: StatusCode, kind: &'static str, detail: impl Into<String>) -> Self {
        ApiError {
            status,
            kind,
            detail: detail.into(),
            retry_after: None,
            headers: Vec::new(),
        }
    }

    /// Missing or invalid credentials: the same answer whatever was wrong with them.
    pub fn unauthorized() -> Self {
        ApiError {
            headers: vec![("www-authenticate", "Bearer".to_owned())],
            ..ApiError::new(
                StatusCode::UNAUTHORIZED,
                "unauthorized",
                "missing or invalid credentials: send Authorization: Bearer <token>",
            )
        }
    }

    pub fn forbidden(detail: impl Into<String>) -> Self {
        ApiError::new(StatusCode::FORBIDDEN, "forbidden", detail)
    }

    /// A rate limit was reached: retry after `retry_after` seconds.
    pub fn too_many_requests(limit: u32, retry_after: u32, what: &str) -> Self {
        ApiError {
            retry_after: Some(retry_after),
            headers: vec![
                ("ratelimit-limit", limit.to_string()),
                ("ratelimit-remaining", "0".to_owned()),
                ("ratelimit-reset", retry_after.to_string()),
                ("ratelimit-policy", format!("{limit};w=60")),
            ],
            ..ApiError::new(
                StatusCode::TOO_MANY_REQUESTS,
                "rate-limited",
                format!("{what}: at most {limit} a minute; retry in {retry_after} s"),
            )
        }
    }

    /// The storage failed or timed out: retryable, and the cause stays in the log.
    pub fn unavailable() -> Self {
        ApiError {
            retry_after: Some(1),
            ..ApiError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "unavailable",
                "the service could not reach its storage; try again shortly",
            )
        }
    }

    pub fn not_found(detail: impl Into<String>) -> Self {
        ApiError::new(StatusCode::NOT_FOUND, "not-found", detail)
    }

    pub fn invalid(detail: impl Into<String>) -> Self {
        ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, "validation", detail)
    }

    pub fn status(&self) -> StatusCode {
        self.status
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let problem = Problem {
            kind: format!("/problems/{}", self.kind),
            title: self.status.canonical_reason().unwrap_or("Error").to_owned(),
            status: self.status.as_u16(),
            detail: self.detail,
        };
        let body = serde_json::to_vec(&problem).unwrap_or_default();
        let retry_after = self
            .retry_after
            .map(|s| (header::RETRY_AFTER.as_str(), s.to_string()));
        (
            self.status,
            [(header::CONTENT_TYPE, "application/problem+json")],
            axum::response::AppendHeaders(retry_after.into_iter().chain(self.headers)),
            body,
        )
            .into_response()
    }
}

impl From<StoreError> for ApiError {
    fn from(error: StoreError) -> Self {
        match error {
            StoreError::NotFound(what) => ApiError::not_found(format!("{what} not found")),
            StoreError::Conflict(what) => ApiError::new(
                StatusCode::CONFLICT,
                "conflict",
                format!("{what} already exists"),
            ),
            StoreError::Invalid(why) => ApiError::invalid(why),
            // Only the event log's readers see this: what they asked for was trimmed, or
            // was never issued by this log.
            StoreError::PositionLost(why) => ApiError::new(
                StatusCode::GONE,
                "position-lost",
                format!(
                    "the event log does not hold that position ({why}); start again without it, from the oldest kept event"
                ),
            ),
            StoreError::Forbidden(why) => ApiError::forbidden(why),
            // No route reads the change feed, so a position error is a storage fault too.
            cause @ (StoreError::InvalidPosition(_)
            | StoreError::Fenced(_)
            | StoreError::Poison(_)
            | StoreError::HistoryLost(_)
            | StoreError::NoPosition(_)
            | StoreError::Backend(_)) => {
                // The cause goes to the log, never to the client.
                tracing::error!(error = %format!("{cause:#}"), "storage failure");
                ApiError::unavailable()
            }
        }
    }
}

impl From<JsonRejection> for ApiError {
    fn from(rejection: JsonRejection) -> Self {
        let status = rejection.status();
        let kind = match status {
            StatusCode::PAYLOAD_TOO_LARGE => "too-large",
            StatusCode::UNSUPPORTED_MEDIA_TYPE => "unsupported-media-type",
            StatusCode::BAD_REQUEST => "malformed-json",
            _ => "validation",
        };
        ApiError::new(status, kind, rejection.body_text())
    }
}

impl From<QueryRejection> for ApiError {
    fn from(rejection: QueryRejection) -> Self {
        ApiError::invalid(rejection.body_text())
    }
}

/// `axum::Json` with problem+json rejections.
#[derive(Debug, FromRequest)]
#[from_request(via(axum::Json), rejection(ApiError))]
pub struct Json<T>(pub T);

impl<T: Serialize> IntoResponse for Json<T> {
    fn into_response(self) -> Response {
        axum::Json(self.0).into_response()
    }
}

/// `axum::extract::Query` with problem+json rejections.
#[derive(Debug, FromRequestParts)]
#[from_request(via(axum::extract::Query), rejection(ApiError))]
pub struct Query<T>(pub T);

pub type ApiResult<T> = Result<T, ApiError>;
