//! Health, readiness, metrics, the spec and build information.

use axum::extract::State;
use axum::http::header;
use axum::response::IntoResponse;
use serde::Serialize;
use utoipa::ToSchema;

use super::auth::Admin;
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
    security((), ("admin" = [])),
    responses(
        (status = 200, description = "Prometheus text format", body = String, content_type = "text/plain"),
        (status = 401, description = "`auth.admin_token` is set and was not sent", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn metrics(State(state): State<AppState>, _admin: Admin) -> impl IntoResponse {
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

/// One change-feed worker: its lease as stored, and this process's view of it.
#[derive(Debug, Serialize, ToSchema)]
pub struct WorkerBody {
    #[schema(example = "activity")]
    pub name: String,
    /// The process holding the lease, `null` when released or never taken.
    pub holder: Option<String>,
    /// The fencing token: increases whenever the lease changes hands.
    pub version: Option<u64>,
    /// The last committed change-feed position (opaque).
    pub position: Option<String>,
    /// Whether this process holds the lease.
    pub held_here: bool,
    /// Seconds between the newest applied change and its application, 0 when caught up.
    pub lag_seconds: f64,
    /// Seconds from the write of the newest change of the last applied batch to its
    /// commit: how far behind the source the derived data was, even when caught up.
    pub delay_seconds: f64,
    /// Changes waiting after the last step: exact on the embedded store (counted up to
    /// 1,000,000); on MongoDB, 1 while a full batch was just applied, else 0. At least 1
    /// from taking the lease until the first step under it ends.
    pub lag_changes: u64,
    /// Changes applied by this process since it started.
    pub processed: u64,
    /// Rebuilds done by this process: a first start on a feed that needs a position
    /// (the aggregates), a rebuild on request, and history lost.
    pub rebuilds: u64,
    /// Of those, the ones forced by history lost (a trimmed position), each logged as
    /// an error and counted in `socialite_worker_history_lost_total`.
    pub history_lost: u64,
    /// Changes this process skipped as poison (malformed), each logged as an error.
    pub quarantined: u64,
    pub last_error: Option<String>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct WorkersBody {
    pub workers: Vec<WorkerBody>,
}

#[utoipa::path(get, path = "/v1/workers", tag = "operations",
    security((), ("admin" = [])),
    responses(
        (status = 200, description = "Each change-feed worker's lease, position, lag and last error", body = WorkersBody),
        (status = 401, description = "`auth.admin_token` is set and was not sent", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn workers(State(state): State<AppState>, _admin: Admin) -> ApiResult<Json<WorkersBody>> {
    let reports = state.workers.report().await?;
    let workers = reports
        .into_iter()
        .map(|r| WorkerBody {
            holder: r.lease.as_ref().and_then(|l| l.holder.clone()),
            version: r.lease.as_ref().map(|l| l.version),
            position: r.lease.and_then(|l| l.position).map(|p| p.0),
            name: r.name,
            held_here: r.local.held,
            lag_seconds: r.local.lag_seconds,
            lag_changes: r.local.lag_changes,
            delay_seconds: r.local.delay_seconds,
            processed: r.local.processed,
            rebuilds: r.local.rebuilds,
            history_lost: r.local.history_lost,
            quarantined: r.local.quarantined,
            last_error: r.local.last_error,
        })
        .collect();
    Ok(Json(WorkersBody { workers }))
}
