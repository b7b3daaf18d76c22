//! The Mastodon-compatible client API: a second view over the same service operations
//! as `/v1` (`mastodon.enabled`). Its handlers render Mastodon's entities and its
//! errors as `{"error": ...}` (`error.rs`); CORS is open on its paths, as Mastodon's is,
//! since its credentials travel in headers, never in cookies. The compatibility table is
//! docs/mastodon.md.

pub mod account_statuses;
pub mod accounts;
pub mod apps;
pub mod auth;
pub mod authorize;
pub mod engagement;
pub mod entities;
pub mod error;
pub mod form;
pub mod ids;
mod instance;
pub mod link;
pub mod markers;
pub mod notifications;
pub mod oauth;
pub mod paging;
pub mod registration;
pub mod relationships;
pub mod search;
pub mod statuses;
pub mod streaming;
pub mod stubs;
pub mod timelines;

use std::convert::Infallible;
use std::sync::LazyLock;

use axum::Router;
use axum::extract::Request;
use axum::http::{HeaderMap, HeaderName, HeaderValue, Method, header};
use axum::middleware::Next;
use axum::response::Response;
use axum::routing::{get, post};
use tower::{Layer, ServiceExt, service_fn};
use tower_http::cors::{Any, CorsLayer};

use super::AppState;
use crate::config::MastodonConfig;
use crate::domain::format_time_ms;
use crate::http::rate::StandingSlot;

pub use instance::{
    __path_instance_v1, __path_instance_v2, __path_nodeinfo, __path_nodeinfo_links, instance_v1,
    instance_v2, nodeinfo, nodeinfo_links,
};

/// What the Mastodon API's handlers need from the configuration.
#[derive(Debug, Clone)]
pub struct Settings {
    /// `mastodon.public_url`, without a trailing slash.
    pub public_url: Option<String>,
    pub title: String,
}

impl Settings {
    pub fn from_config(config: &MastodonConfig) -> Settings {
        Settings {
            public_url: config
                .public_url
                .as_ref()
                .map(|url| url.trim_end_matches('/').to_owned()),
            title: config.title.trim().to_owned(),
        }
    }
}

/// Where clients reach this server: `mastodon.public_url`, else `http://` and the
/// request's `Host`.
pub struct Origin {
    base: String,
}

impl Origin {
    pub fn of(settings: &Settings, headers: &HeaderMap) -> Origin {
        let base = match &settings.public_url {
            Some(url) => url.clone(),
            None => {
                let host = headers
                    .get(header::HOST)
                    .and_then(|h| h.to_str().ok())
                    .filter(|h| valid_host(h))
                    .unwrap_or("localhost");
                format!("http://{host}")
            }
        };
        Origin { base }
    }

    /// `https://social.example`.
    pub fn base(&self) -> &str {
        &self.base
    }

    /// `social.example` (with a port when there is one).
    pub fn domain(&self) -> &str {
        self.base.split_once("://").map_or(&self.base, |(_, d)| d)
    }

    /// The streaming API's address: this server, with the WebSocket scheme.
    pub fn streaming(&self) -> String {
        match self.base.strip_prefix("https://") {
            Some(rest) => format!("wss://{rest}"),
            None => format!("ws://{}", self.domain()),
        }
    }
}

/// A `Host` value that is a host name or address and maybe a port, nothing else.
fn valid_host(host: &str) -> bool {
    !host.is_empty()
        && host.len() <= 255
        && host
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-.:[]".contains(&b))
}

/// Open CORS, as Mastodon's: any origin, the methods and headers clients send, and the
/// pagination and rate-limit headers exposed.
static CORS: LazyLock<CorsLayer> = LazyLock::new(|| {
    CorsLayer::new()
        .allow_origin(Any)
        .allow_methods([
            Method::GET,
            Method::POST,
            Method::PUT,
            Method::PATCH,
            Method::DELETE,
        ])
        .allow_headers([
            header::AUTHORIZATION,
            header::CONTENT_TYPE,
            HeaderName::from_static("idempotency-key"),
        ])
        .expose_headers([
            header::LINK,
            HeaderName::from_static("x-ratelimit-limit"),
            HeaderName::from_static("x-ratelimit-remaining"),
            HeaderName::from_static("x-ratelimit-reset"),
        ])
});

/// CORS on the Mastodon API's paths only. A layer of its own around the whole router
/// (not on its routes), so that a preflight `OPTIONS` is answered before routing, which
/// would answer it 405.
pub async fn cors(request: Request, next: Next) -> Response {
    if !error::is_mastodon_path(request.uri().path()) {
        return next.run(request).await;
    }
    let mut next = Some(next);
    let inner = service_fn(move |request: Request| {
        let next = next.take();
        async move {
            Ok::<_, Infallible>(match next {
                Some(next) => next.run(request).await,
                None => unreachable!("a oneshot service is called once"),
            })
        }
    });
    match CORS.clone().layer(inner).oneshot(request).await {
        Ok(response) => response,
        Err(never) => match never {},
    }
}

/// Mastodon's `X-RateLimit-Limit`, `-Remaining` and `-Reset` (an ISO time), all three
/// or none, on the Mastodon API's paths: from the tightest bucket the request drew from
/// (its user's read or write bucket, its address's), refusals included. A request that
/// drew from none (limits off) gets none.
pub async fn rate_headers(mut request: Request, next: Next) -> Response {
    if !error::is_mastodon_path(request.uri().path()) {
        return next.run(request).await;
    }
    let slot = StandingSlot::default();
    request.extensions_mut().insert(slot.clone());
    let mut response = next.run(request).await;
    if let Some(standing) = slot.get() {
        let headers = response.headers_mut();
        let values = [
            ("x-ratelimit-limit", standing.limit.to_string()),
            ("x-ratelimit-remaining", standing.remaining.to_string()),
            ("x-ratelimit-reset", format_time_ms(standing.reset_ms)),
        ];
        for (name, value) in values {
            if let Ok(value) = HeaderValue::from_str(&value) {
                headers.insert(HeaderName::from_static(name), value);
            }
        }
    }
    response
}

/// The Mastodon API's routes.
pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/api/v1/instance", get(instance_v1))
        .route("/api/v1/instance/", get(instance_v1))
        .route("/api/v2/instance", get(instance_v2))
        .route("/api/v2/instance/", get(instance_v2))
        .route("/.well-known/nodeinfo", get(nodeinfo_links))
        .route("/nodeinfo/2.0", get(nodeinfo))
        .route("/api/v1/apps", post(apps::create_app))
        .route("/api/v1/apps/verify_credentials", get(apps::verify_app))
        .route("/oauth/token", post(oauth::token_endpoint))
        .route("/oauth/revoke", post(oauth::revoke))
        .route(
            "/.well-known/oauth-authorization-server",
            get(oauth::metadata),
        )
        .route(
            "/oauth/authorize",
            get(authorize::authorize_page).post(authorize::authorize_submit),
        )
        .route(
            "/oauth/authorize/",
            get(authorize::authorize_page).post(authorize::authorize_submit),
        )
        .route("/api/v1/accounts", post(registration::register))
        .route(
            "/api/v1/accounts/verify_credentials",
            get(registration::verify_credentials),
        )
        .route(
            "/api/v1/markers",
            get(markers::markers).post(markers::save_markers),
        )
        .route("/api/v1/custom_emojis", get(stubs::custom_emojis))
        .route("/api/v1/lists", get(stubs::lists))
        .route("/api/v1/followed_tags", get(stubs::followed_tags))
        .route("/api/v2/filters", get(stubs::filters_v2))
        .route("/api/v1/filters", get(stubs::filters_v1))
        .route("/api/v1/announcements", get(stubs::announcements))
        .route("/api/v1/preferences", get(stubs::preferences))
        .route("/api/v1/trends/tags", get(search::trending_tags))
        .route("/api/v1/trends", get(search::trends))
        .route("/api/v2/search", get(search::search))
        .route("/api/v1/accounts/lookup", get(accounts::lookup))
        .route(
            "/api/v1/accounts/relationships",
            get(relationships::relationships),
        )
        .route(
            "/api/v1/accounts/update_credentials",
            axum::routing::patch(accounts::update_credentials),
        )
        .route("/api/v1/accounts/{id}", get(accounts::get_account))
        .route(
            "/api/v1/accounts/{id}/statuses",
            get(account_statuses::statuses),
        )
        .route("/api/v1/accounts/{id}/followers", get(accounts::followers))
        .route("/api/v1/accounts/{id}/following", get(accounts::following))
        .route("/api/v1/accounts/{id}/follow", post(accounts::follow))
        .route("/api/v1/accounts/{id}/unfollow", post(accounts::unfollow))
        .route("/api/v1/accounts/{id}/block", post(accounts::block))
        .route("/api/v1/accounts/{id}/unblock", post(accounts::unblock))
        .route("/api/v1/accounts/{id}/mute", post(accounts::mute))
        .route("/api/v1/accounts/{id}/unmute", post(accounts::unmute))
        .route("/api/v1/blocks", get(relationships::blocks))
        .route("/api/v1/mutes", get(relationships::mutes))
        .route("/api/v1/statuses", post(statuses::create_status))
        .route(
            "/api/v1/statuses/{id}",
            get(statuses::get_status).delete(statuses::delete_status),
        )
        .route(
            "/api/v1/statuses/{id}/context",
            get(statuses::status_context),
        )
        .route("/api/v1/statuses/{id}/favourite", post(statuses::favourite))
        .route(
            "/api/v1/statuses/{id}/unfavourite",
            post(statuses::unfavourite),
        )
        .route("/api/v1/statuses/{id}/reblog", post(statuses::reblog))
        .route("/api/v1/statuses/{id}/unreblog", post(statuses::unreblog))
        .route(
            "/api/v1/statuses/{id}/favourited_by",
            get(engagement::favourited_by),
        )
        .route(
            "/api/v1/statuses/{id}/reblogged_by",
            get(engagement::reblogged_by),
        )
        .route("/api/v1/timelines/home", get(timelines::home))
        .route("/api/v1/streaming", get(streaming::ws::socket))
        .route("/api/v1/streaming/health", get(streaming::sse::health))
        .route("/api/v1/streaming/user", get(streaming::sse::user))
        .route(
            "/api/v1/streaming/user/notification",
            get(streaming::sse::user_notification),
        )
        .route("/api/v1/streaming/public", get(streaming::sse::public))
        .route("/api/v1/streaming/hashtag", get(streaming::sse::hashtag))
        .route(
            "/api/v1/streaming/public/local",
            get(streaming::sse::public_local),
        )
        .route(
            "/api/v1/streaming/hashtag/local",
            get(streaming::sse::hashtag_local),
        )
        .route("/api/v1/timelines/public", get(timelines::public))
        .route("/api/v1/timelines/tag/{hashtag}", get(timelines::tag))
        .route("/api/v1/notifications", get(notifications::notifications))
        .route("/api/v1/notifications/clear", post(notifications::clear))
        .route(
            "/api/v1/notifications/dismiss",
            post(notifications::dismiss_by_form),
        )
        .route(
            "/api/v1/notifications/{id}",
            get(notifications::notification),
        )
        .route(
            "/api/v1/notifications/{id}/dismiss",
            post(notifications::dismiss),
        )
        .route(
            "/api/v2/notifications",
            get(notifications::grouped_notifications),
        )
        .route(
            entities::account::AVATAR_PATH,
            get(entities::account::placeholder_image),
        )
        .route(
            entities::account::HEADER_PATH,
            get(entities::account::placeholder_image),
        )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_origin_comes_from_the_setting_or_the_host() {
        let settings = |url: Option<&str>| Settings {
            public_url: url.map(str::to_owned),
            title: "t".to_owned(),
        };
        let mut headers = HeaderMap::new();
        headers.insert(header::HOST, "127.0.0.1:8080".parse().unwrap());
        let local = Origin::of(&settings(None), &headers);
        assert_eq!(local.base(), "http://127.0.0.1:8080");
        assert_eq!(local.domain(), "127.0.0.1:8080");
        assert_eq!(local.streaming(), "ws://127.0.0.1:8080");
        let public = Origin::of(&settings(Some("https://social.example")), &headers);
        assert_eq!(public.domain(), "social.example");
        assert_eq!(public.streaming(), "wss://social.example");
        headers.insert(header::HOST, "evil.example/<x>".parse().unwrap());
        assert_eq!(
            Origin::of(&settings(None), &headers).base(),
            "http://localhost"
        );
    }
}
