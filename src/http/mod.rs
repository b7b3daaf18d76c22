//! The HTTP API.

mod activity;
pub mod auth;
pub mod error;
mod events;
mod follows;
mod ops;
mod posts;
pub mod rate;
pub mod server;
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
use utoipa::OpenApi;

use crate::domain::{PostId, validate_user_id};
use crate::service::Social;
use error::{ApiError, ApiResult};

/// Everything a handler needs; cheap to clone.
#[derive(Clone)]
pub struct AppState {
    pub social: Arc<Social>,
    pub workers: Arc<crate::workers::Workers>,
    pub metrics: PrometheusHandle,
    pub events: Arc<crate::service::EventsService>,
    pub rate: Arc<rate::RateLimits>,
}

#[derive(OpenApi)]
#[openapi(
    info(
        title = "socialite",
        description = "A social feed service: users, a follow graph, posts and home timelines built by a configurable fan-out strategy."
    ),
    paths(
        users::create_user, users::get_user, users::update_user,
        tokens::issue_token, tokens::revoke_token,
        follows::follow, follows::unfollow, follows::list_following, follows::list_followers,
        posts::create_post, posts::get_post, posts::delete_post, posts::list_posts,
        timeline::timeline, events::timeline_stream, events::list_events,
        trends::tag, trends::trends,
        activity::like, activity::unlike, activity::list_activity,
        ops::healthz, ops::readyz, ops::metrics, ops::openapi, ops::meta, ops::workers,
    ),
    components(schemas(error::Problem)),
    modifiers(&SecuritySchemes),
    tags(
        (name = "users", description = "Profiles"),
        (name = "graph", description = "The follow graph"),
        (name = "posts", description = "Content"),
        (name = "timeline", description = "Home timelines"),
        (name = "events", description = "The event log"),
        (name = "trends", description = "Hashtag counts"),
        (name = "activity", description = "Likes and the user activity log"),
        (name = "operations", description = "Health, metrics and metadata"),
    )
)]
pub struct ApiDoc;

/// `bearer`: a user's API token (`auth.mode = token`) or a JWT (`jwt`); `admin`:
/// `auth.admin_token`.
struct SecuritySchemes;

impl utoipa::Modify for SecuritySchemes {
    fn modify(&self, doc: &mut utoipa::openapi::OpenApi) {
        use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
        let components = doc.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "bearer",
            SecurityScheme::Http(
                HttpBuilder::new()
                    .scheme(HttpAuthScheme::Bearer)
                    .description(Some(
                        "The user's API token (auth.mode = token) or a JWT whose sub is the user id (auth.mode = jwt)",
                    ))
                    .build(),
            ),
        );
        components.add_security_scheme(
            "admin",
            SecurityScheme::Http(
                HttpBuilder::new()
                    .scheme(HttpAuthScheme::Bearer)
                    .description(Some("auth.admin_token, when set"))
                    .build(),
            ),
        );
    }
}

/// The spec, as served and as committed to `openapi/openapi.json`.
pub fn api_doc() -> utoipa::openapi::OpenApi {
    let mut doc = ApiDoc::openapi();
    // utoipa copies Cargo.toml's license field, which this crate does not set.
    doc.info.license = None;
    document_unavailable(&mut doc);
    document_auth_and_limits(&mut doc);
    doc
}

fn problem_response(description: &str, headers: &[(&str, &str)]) -> utoipa::openapi::Response {
    use utoipa::openapi::{
        ContentBuilder, HeaderBuilder, ObjectBuilder, Ref, ResponseBuilder, Type,
    };
    let mut response = ResponseBuilder::new().description(description).content(
        "application/problem+json",
        ContentBuilder::new()
            .schema(Some(Ref::from_schema_name("Problem")))
            .build(),
    );
    for (name, about) in headers {
        let kind = if *name == "WWW-Authenticate" {
            Type::String
        } else {
            Type::Integer
        };
        response = response.header(
            *name,
            HeaderBuilder::new()
                .schema(ObjectBuilder::new().schema_type(kind))
                .description(Some(*about))
                .build(),
        );
    }
    response.build()
}

/// Every operation that names the `bearer` scheme answers 401 without valid
/// credentials and 403 with another user's; every operation but the health checks can
/// answer 429 (the per-address limit, and the per-user ones where authenticated).
fn document_auth_and_limits(doc: &mut utoipa::openapi::OpenApi) {
    let unauthorized = problem_response(
        "Missing or invalid credentials (the same answer for an unknown user)",
        &[("WWW-Authenticate", "Bearer")],
    );
    let forbidden = problem_response("The credentials are another user's", &[]);
    let limited = problem_response(
        "A rate limit was reached",
        &[
            ("Retry-After", "Seconds until a request would be allowed"),
            ("RateLimit-Limit", "Requests allowed a minute"),
            ("RateLimit-Remaining", "Requests left now: 0"),
            (
                "RateLimit-Reset",
                "Seconds until a request would be allowed",
            ),
        ],
    );
    for (path, item) in doc.paths.paths.iter_mut() {
        let operations = [
            &mut item.get,
            &mut item.put,
            &mut item.post,
            &mut item.delete,
            &mut item.patch,
        ];
        for operation in operations.into_iter().flatten() {
            let responses = &mut operation.responses.responses;
            let user_scheme = operation.security.iter().flatten().any(|requirement| {
                serde_json::to_value(requirement).is_ok_and(|v| v.get("bearer").is_some())
            });
            if user_scheme {
                responses
                    .entry("401".to_owned())
                    .or_insert_with(|| unauthorized.clone().into());
                responses
                    .entry("403".to_owned())
                    .or_insert_with(|| forbidden.clone().into());
            }
            if path != "/healthz" && path != "/readyz" {
                responses
                    .entry("429".to_owned())
                    .or_insert_with(|| limited.clone().into());
            }
        }
    }
}

/// Every operation can answer 503: any request that runs past `server.request_timeout`,
/// and any that touches storage when storage fails. Added here once rather than on each
/// handler.
fn document_unavailable(doc: &mut utoipa::openapi::OpenApi) {
    use utoipa::openapi::{ContentBuilder, Ref, ResponseBuilder};
    let response = ResponseBuilder::new()
        .description(
            "Storage unavailable or the request timed out; retry after `Retry-After` seconds",
        )
        .header(
            "Retry-After",
            utoipa::openapi::HeaderBuilder::new()
                .schema(
                    utoipa::openapi::ObjectBuilder::new()
                        .schema_type(utoipa::openapi::Type::Integer),
                )
                .description(Some("Seconds to wait before retrying"))
                .build(),
        )
        .content(
            "application/problem+json",
            ContentBuilder::new()
                .schema(Some(Ref::from_schema_name("Problem")))
                .build(),
        )
        .build();
    for item in doc.paths.paths.values_mut() {
        let operations = [
            &mut item.get,
            &mut item.put,
            &mut item.post,
            &mut item.delete,
            &mut item.patch,
        ];
        for operation in operations.into_iter().flatten() {
            operation
                .responses
                .responses
                .entry("503".to_owned())
                .or_insert_with(|| response.clone().into());
        }
    }
}

pub fn openapi_json() -> String {
    let mut json = api_doc()
        .to_pretty_json()
        .expect("the OpenAPI document serialises");
    json.push('\n');
    json
}

pub struct HttpSettings {
    pub request_timeout: Duration,
    pub body_limit_bytes: usize,
    /// `/metrics` and `/v1/workers` are served by [`admin_router`] only.
    pub separate_admin: bool,
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
        .route("/v1/users/{id}/timeline", get(timeline::timeline))
        .route(
            "/v1/users/{id}/timeline/stream",
            get(events::timeline_stream),
        )
        .route("/v1/events", get(events::list_events))
        .route("/v1/tags/{tag}", get(trends::tag))
        .route("/v1/trends", get(trends::trends))
        .route(
            "/v1/users/{id}/likes/{post_id}",
            put(activity::like).delete(activity::unlike),
        )
        .route("/v1/users/{id}/activity", get(activity::list_activity))
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
    let limits = state.rate.clone();
    let api = api
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .with_state(state);
    api.layer(
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
    )
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
    if path != "/healthz" && path != "/readyz" {
        if let Some(ConnectInfo(peer)) = request
            .extensions()
            .get::<ConnectInfo<std::net::SocketAddr>>()
        {
            let client = limits.client_ip(peer.ip(), request.headers());
            if let Err(limited) = limits.check_ip(client) {
                return limited.into_response();
            }
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
