//! The HTTP API.

mod activity;
pub mod auth;
mod engagement;
pub mod error;
mod events;
mod follows;
mod gzip;
mod listings;
pub mod mastodon;
mod notifications;
mod openapi;
mod ops;
mod posts;
pub mod rate;
mod relations;
mod reposts;
pub mod server;
mod threads;
mod timeline;
mod tokens;
mod trends;
mod users;

use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::Router;
use axum::extract::{ConnectInfo, DefaultBodyLimit, MatchedPath, Request, State};
use axum::http::{HeaderName, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, put};
use metrics_exporter_prometheus::PrometheusHandle;
use tower::ServiceBuilder;
use tower_http::request_id::{MakeRequestUuid, PropagateRequestIdLayer, SetRequestIdLayer};
use tower_http::trace::TraceLayer;

use crate::domain::{PostId, validate_user_id};
use crate::service::Social;
use error::{ApiError, ApiResult};
pub use openapi::{ApiDoc, api_doc, openapi_json};

/// Everything a handler needs; cheap to clone.
#[derive(Clone)]
pub struct AppState {
    pub social: Arc<Social>,
    pub workers: Arc<crate::workers::Workers>,
    pub metrics: PrometheusHandle,
    pub events: Arc<crate::service::EventsService>,
    pub rate: Arc<rate::RateLimits>,
    pub mastodon: Arc<mastodon::Settings>,
}

pub struct HttpSettings {
    pub request_timeout: Duration,
    pub body_limit_bytes: usize,
    /// `/metrics` and `/v1/workers` are served by [`admin_router`] only.
    pub separate_admin: bool,
    /// Serve the Mastodon client API beside `/v1` (`mastodon.enabled`).
    pub mastodon: bool,
}

/// `/metrics` and `/v1/workers`, for `server.admin_listen`.
pub fn admin_router(state: AppState, settings: &HttpSettings) -> Router {
    let admin = Router::new()
        .route("/v1/workers", get(ops::workers))
        .route("/metrics", get(ops::metrics))
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .with_state(state);
    admin.layer(ServiceBuilder::new().layer(middleware::from_fn_with_state(
        settings.request_timeout,
        time_limit,
    )))
}

pub fn router(state: AppState, settings: &HttpSettings) -> Router {
    let request_id = HeaderName::from_static("x-request-id");
    let api = Router::new()
        .route("/v1/users", axum::routing::post(users::create_user))
        .route(
            "/v1/users/{id}",
            get(users::get_user).patch(users::update_user),
        )
        .route(
            "/v1/users/{id}/following/{target}",
            put(follows::follow).delete(follows::unfollow),
        )
        .route("/v1/users/{id}/password", put(users::set_password))
        .route("/v1/users/{id}/following", get(follows::list_following))
        .route("/v1/users/{id}/followers", get(follows::list_followers))
        .route(
            "/v1/users/{id}/posts",
            get(posts::list_posts).post(posts::create_post),
        )
        .route(
            "/v1/posts/{post_id}",
            get(posts::get_post).delete(posts::delete_post),
        )
        .route(
            "/v1/users/{id}/blocks/{other}",
            put(relations::block).delete(relations::unblock),
        )
        .route("/v1/users/{id}/blocks", get(relations::list_blocks))
        .route(
            "/v1/users/{id}/mutes/{other}",
            put(relations::mute).delete(relations::unmute),
        )
        .route("/v1/users/{id}/mutes", get(relations::list_mutes))
        .route("/v1/posts/{post_id}/context", get(threads::context))
        .route("/v1/posts/{post_id}/likes", get(engagement::list_likers))
        .route(
            "/v1/posts/{post_id}/reposts",
            get(engagement::list_reposters),
        )
        .route("/v1/users/{id}/timeline", get(timeline::timeline))
        .route(
            "/v1/users/{id}/timeline/stream",
            get(events::timeline_stream),
        )
        .route("/v1/events", get(events::list_events))
        .route("/v1/tags/{tag}", get(trends::tag))
        .route("/v1/tags/{tag}/posts", get(listings::tag_posts))
        .route("/v1/timelines/public", get(listings::public_timeline))
        .route("/v1/trends", get(trends::trends))
        .route(
            "/v1/users/{id}/likes/{post_id}",
            put(activity::like).delete(activity::unlike),
        )
        .route(
            "/v1/users/{id}/reposts/{post_id}",
            put(reposts::repost).delete(reposts::unrepost),
        )
        .route("/v1/users/{id}/activity", get(activity::list_activity))
        .route(
            "/v1/users/{id}/notifications",
            get(notifications::list_notifications).delete(notifications::clear_notifications),
        )
        .route(
            "/v1/users/{id}/notifications/{notification_id}",
            get(notifications::get_notification).delete(notifications::dismiss_notification),
        )
        .route(
            "/v1/users/{id}/tokens",
            axum::routing::post(tokens::issue_token),
        )
        .route(
            "/v1/users/{id}/tokens/{token_id}",
            axum::routing::delete(tokens::revoke_token),
        )
        .route("/v1/meta", get(ops::meta))
        .route("/healthz", get(ops::healthz))
        .route("/readyz", get(ops::readyz))
        .route("/openapi.json", get(ops::openapi));
    let api = if settings.separate_admin {
        api
    } else {
        api.route("/v1/workers", get(ops::workers))
            .route("/metrics", get(ops::metrics))
    };
    let api = match settings.mastodon {
        true => api.merge(mastodon::routes()),
        false => api,
    };
    let limits = state.rate.clone();
    let api = api
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .with_state(state);
    let api = api.layer(
        ServiceBuilder::new()
            .layer(SetRequestIdLayer::new(request_id.clone(), MakeRequestUuid))
            .layer(
                TraceLayer::new_for_http().make_span_with(|request: &Request| {
                    let id = request
                        .headers()
                        .get("x-request-id")
                        .and_then(|v| v.to_str().ok())
                        .unwrap_or("-");
                    tracing::info_span!("request", method = %request.method(), uri = %request.uri(), request_id = %id)
                }),
            )
            .layer(PropagateRequestIdLayer::new(request_id))
            .layer(middleware::from_fn(record_metrics))
            .layer(middleware::from_fn_with_state(limits, limit_client_address))
            .layer(middleware::from_fn_with_state(
                settings.request_timeout,
                time_limit,
            ))
            .layer(DefaultBodyLimit::max(settings.body_limit_bytes)),
    );
    // Outermost, so that every error under the Mastodon API's paths, whoever made it,
    // is `{"error": ...}`.
    match settings.mastodon {
        true => api
            .layer(middleware::from_fn(mastodon::rate_headers))
            .layer(middleware::from_fn(mastodon::error::rewrite_problems))
            .layer(middleware::from_fn(mastodon::cors)),
        false => api,
    }
}

/// Answers 503 problem+json when a request runs past `server.request_timeout`.
async fn time_limit(
    axum::extract::State(limit): axum::extract::State<Duration>,
    request: Request,
    next: Next,
) -> Response {
    match tokio::time::timeout(limit, next.run(request)).await {
        Ok(response) => response,
        Err(_) => {
            tracing::warn!(?limit, "request timed out");
            ApiError::unavailable().into_response()
        }
    }
}

/// The per-address bucket, for every request but the health checks.
async fn limit_client_address(
    State(limits): State<Arc<rate::RateLimits>>,
    request: Request,
    next: Next,
) -> Response {
    let path = request.uri().path();
    if path != "/healthz"
        && path != "/readyz"
        && let Some(ConnectInfo(peer)) = request
            .extensions()
            .get::<ConnectInfo<std::net::SocketAddr>>()
    {
        let client = limits.client_ip(peer.ip(), request.headers());
        let slot = request.extensions().get::<rate::StandingSlot>();
        if let Err(limited) = limits.check_ip(client, slot) {
            return limited.into_response();
        }
    }
    next.run(request).await
}

async fn not_found() -> ApiError {
    ApiError::not_found("no such resource")
}

async fn method_not_allowed() -> ApiError {
    ApiError::new(
        StatusCode::METHOD_NOT_ALLOWED,
        "method-not-allowed",
        "this resource does not support that method",
    )
}

/// Request counts and latencies per route template, so ids do not explode cardinality.
async fn record_metrics(request: Request, next: Next) -> Response {
    let route = request
        .extensions()
        .get::<MatchedPath>()
        .map(|path| path.as_str().to_owned())
        .unwrap_or_else(|| "unmatched".to_owned());
    let method = request.method().as_str().to_owned();
    let started = Instant::now();
    let response = next.run(request).await;
    let status = response.status().as_u16().to_string();
    let labels = [("method", method), ("route", route), ("status", status)];
    metrics::counter!("http_requests_total", &labels).increment(1);
    metrics::histogram!("http_request_duration_seconds", &labels[..2])
        .record(started.elapsed().as_secs_f64());
    response
}

/// A path user id that breaks the id rules names no user.
pub(crate) fn known_user_id(id: &str) -> ApiResult<()> {
    validate_user_id(id).map_err(|_| ApiError::not_found(format!("user {id} not found")))
}

pub(crate) fn parse_limit(raw: Option<&str>) -> ApiResult<usize> {
    match raw {
        None => Ok(20),
        Some(raw) => match raw.parse::<usize>() {
            Ok(limit) if (1..=100).contains(&limit) => Ok(limit),
            _ => Err(ApiError::invalid(format!(
                "limit must be an integer from 1 to 100, got {raw:?}"
            ))),
        },
    }
}

pub(crate) fn parse_before(raw: Option<&str>) -> ApiResult<Option<PostId>> {
    match raw {
        None => Ok(None),
        Some(raw) => raw.parse().map(Some).map_err(|_| {
            ApiError::invalid(format!("before must be a 24-hex post id, got {raw:?}"))
        }),
    }
}

/// A path post id that is not 24 hex characters names no post.
pub(crate) fn known_post_id(raw: &str) -> ApiResult<PostId> {
    raw.parse()
        .map_err(|_| ApiError::not_found(format!("post {raw} not found")))
}
