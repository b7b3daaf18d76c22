//! Health, readiness, metrics, the spec and build information.

use axum::extract::State;
use axum::http::header;
use axum::response::IntoResponse;
use serde::Serialize;
use utoipa::ToSchema;

use super::error::{ApiError, ApiResult, Json, Problem};
use super::{AppState, api_doc};

#[derive(Debug, Serialize, ToSchema)]
pub struct Status {
    #[schema(example = "ok")]
    pub status: &'static str,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct Meta {
    #[schema(example = "0.1.0")]
    pub version: &'static str,
    /// `embedded` or `mongodb`.
    #[schema(example = "embedded")]
    pub storage: &'static str,
    /// `fanout_on_read`, `timed_buckets`, `sized_buckets` or `cache`.
    #[schema(example = "cache")]
    pub feed_strategy: &'static str,
}

/// Liveness: the process serves HTTP.
#[utoipa::path(get, path = "/healthz", tag = "operations",
    responses((status = 200, description = "Alive", body = Status)))]
pub async fn healthz() -> Json<Status> {
    Json(Status { status: "ok" })
}

/// Readiness: the storage answers.
#[utoipa::path(get, path = "/readyz", tag = "operations",
    responses(
        (status = 200, description = "Ready", body = Status),
        (status = 503, description = "Storage unavailable", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn readyz(State(state): State<AppState>) -> ApiResult<Json<Status>> {
    match state.social.ping().await {
        Ok(()) => Ok(Json(Status { status: "ok" })),
        Err(error) => {
            tracing::warn!(error = %error, "readiness check failed");
            Err(ApiError::unavailable())
        }
    }
}

/// Prometheus metrics: request counts and latency per route, fan-out counters.
#[utoipa::path(get, path = "/metrics", tag = "operations",
    responses((status = 200, description = "Prometheus text format", body = String, content_type = "text/plain")))]
pub async fn metrics(State(state): State<AppState>) -> impl IntoResponse {
    (
        [(header::CONTENT_TYPE, "text/plain; version=0.0.4")],
        state.metrics.render(),
    )
}

/// This OpenAPI document.
#[utoipa::path(get, path = "/openapi.json", tag = "operations",
    responses((status = 200, description = "OpenAPI 3.1 document", body = Object)))]
pub async fn openapi() -> Json<utoipa::openapi::OpenApi> {
    Json(api_doc())
}

/// Version, storage backend and feed strategy of this server.
#[utoipa::path(get, path = "/v1/meta", tag = "operations",
    responses((status = 200, description = "Build and configuration facts", body = Meta)))]
pub async fn meta(State(state): State<AppState>) -> Json<Meta> {
    Json(Meta {
        version: env!("CARGO_PKG_VERSION"),
        storage: state.social.backend(),
        feed_strategy: state.social.strategy().as_str(),
    })
}
