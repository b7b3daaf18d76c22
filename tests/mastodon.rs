//! The Mastodon-compatible client API, from a client's side: discovery (the instance
//! documents, NodeInfo), its error shape under every one of its paths, and CORS. The
//! real clients' runs are elsewhere; this holds the server to what they read first.

#[path = "mastodon/client.rs"]
mod client;
mod common;
#[path = "mastodon/engagement.rs"]
mod engagement;
#[path = "mastodon/kept_pages.rs"]
mod kept_pages;
#[path = "mastodon/markers.rs"]
mod markers;
#[path = "mastodon/notifications.rs"]
mod notifications;
#[path = "mastodon/statuses.rs"]
mod statuses;
#[path = "mastodon/timelines.rs"]
mod timelines;

use common::{Kind, TestServer, fresh_config};
use reqwest::StatusCode;
use reqwest::header::{CONTENT_TYPE, HeaderMap};
use serde_json::Value;

async fn get(server: &TestServer, path: &str) -> (StatusCode, HeaderMap, Value) {
    let response = server
        .client
        .get(format!("{}{path}", server.base))
        .send()
        .await
        .unwrap();
    let status = response.status();
    let headers = response.headers().clone();
    let body = response.json().await.unwrap_or(Value::Null);
    (status, headers, body)
}

/// A new user `id` with a password, signed in through the password grant of a new app
/// for `scope`: the access token.
pub(crate) async fn oauth_token(server: &TestServer, id: &str, scope: &str) -> String {
    let http = &server.client;
    let created = http
        .post(server.url("/v1/users"))
        .json(&serde_json::json!({"id": id, "password": "correct horse"}))
        .send()
        .await
        .unwrap();
    assert!(
        created.status() == StatusCode::CREATED || created.status() == StatusCode::CONFLICT,
        "{}",
        created.status()
    );
    let app: Value = http
        .post(server.url("/api/v1/apps"))
        .header("content-type", "application/x-www-form-urlencoded")
        .body(
            serde_urlencoded::to_string([
                ("client_name", "tests"),
                ("redirect_uris", "urn:ietf:wg:oauth:2.0:oob"),
                ("scopes", "read write follow"),
            ])
            .unwrap(),
        )
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let token: Value = http
        .post(server.url("/oauth/token"))
        .header("content-type", "application/x-www-form-urlencoded")
        .body(
            serde_urlencoded::to_string([
                ("grant_type", "password"),
                ("client_id", app["client_id"].as_str().unwrap()),
                ("client_secret", app["client_secret"].as_str().unwrap()),
                ("username", id),
                ("password", "correct horse"),
                ("scope", scope),
            ])
            .unwrap(),
        )
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    token["access_token"]
        .as_str()
        .unwrap_or_else(|| panic!("no token: {token}"))
        .to_owned()
}

fn json_type(headers: &HeaderMap) -> &str {
    headers.get(CONTENT_TYPE).unwrap().to_str().unwrap()
}

#[tokio::test]
async fn the_instance_documents_say_what_clients_parse() {
    let server = TestServer::start(fresh_config(Kind::Embedded)).await;
    let host = server.base.trim_start_matches("http://").to_owned();
    for path in ["/api/v1/instance", "/api/v1/instance/"] {
        let (status, _, v1) = get(&server, path).await;
        assert_eq!(status, StatusCode::OK, "{path}");
        // toot: `uri`; Mastodon.py: a leading X.Y.Z, and a streaming URL that is a
        // WebSocket address when it differs from the API's.
        assert_eq!(v1["uri"], host.as_str());
        let version = v1["version"].as_str().unwrap();
        assert!(
            version.starts_with("4.3.0 (compatible; socialite "),
            "{version}"
        );
        assert_eq!(v1["urls"]["streaming_api"], format!("ws://{host}"));
        assert_eq!(v1["configuration"]["statuses"]["max_characters"], 500);
    }
    for path in ["/api/v2/instance", "/api/v2/instance/"] {
        let (status, _, v2) = get(&server, path).await;
        assert_eq!(status, StatusCode::OK, "{path}");
        // Elk dereferences `configuration.urls.streaming`; Mastodon.py warns on a 4.3
        // server without `api_versions.mastodon`.
        assert_eq!(
            v2["configuration"]["urls"]["streaming"],
            format!("ws://{host}")
        );
        assert_eq!(v2["api_versions"]["mastodon"], 2);
        assert_eq!(v2["domain"], host.as_str());
        // Accounts are registered through `POST /api/v1/accounts`.
        assert_eq!(v2["registrations"]["enabled"], true);
    }
    server.stop().await;
}

#[tokio::test]
async fn the_public_url_names_the_instance_when_set() {
    let mut test = fresh_config(Kind::Embedded);
    test.config.mastodon.public_url = Some("https://social.example".to_owned());
    let server = TestServer::start(test).await;
    let (_, _, v1) = get(&server, "/api/v1/instance").await;
    assert_eq!(v1["uri"], "social.example");
    assert_eq!(v1["urls"]["streaming_api"], "wss://social.example");
    let (_, _, links) = get(&server, "/.well-known/nodeinfo").await;
    assert_eq!(
        links["links"][0]["href"],
        "https://social.example/nodeinfo/2.0"
    );
    server.stop().await;
}

#[tokio::test]
async fn nodeinfo_names_mastodon_as_the_upstream() {
    let server = TestServer::start(fresh_config(Kind::Embedded)).await;
    let (status, _, links) = get(&server, "/.well-known/nodeinfo").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        links["links"][0]["rel"],
        "http://nodeinfo.diaspora.software/ns/schema/2.0"
    );
    let (status, _, info) = get(&server, "/nodeinfo/2.0").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(info["version"], "2.0");
    assert_eq!(info["software"]["name"], "socialite");
    // megalodon's detector accepts an unknown software name with this upstream.
    assert_eq!(info["metadata"]["upstream"]["name"], "mastodon");
    server.stop().await;
}

#[tokio::test]
async fn errors_under_the_mastodon_paths_are_json_with_an_error_field() {
    let mut test = fresh_config(Kind::Embedded);
    test.config.rate.ip_per_min = 3;
    let server = TestServer::start(test).await;
    // An unknown route under /api/: masto.js throws on anything but application/json.
    let (status, headers, body) = get(&server, "/api/v1/no_such_thing").await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(json_type(&headers), "application/json");
    assert!(body["error"].is_string(), "{body}");
    // /v1 keeps problem+json.
    let (status, headers, body) = get(&server, "/v1/no_such_thing").await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(json_type(&headers), "application/problem+json");
    assert!(
        body["error"].is_null() && body["detail"].is_string(),
        "{body}"
    );
    // A limit reached in a layer, outside any handler, keeps its status and headers.
    let (mut status, mut headers, mut body) = get(&server, "/api/v1/instance").await;
    for _ in 0..20 {
        if status == StatusCode::TOO_MANY_REQUESTS {
            break;
        }
        (status, headers, body) = get(&server, "/api/v1/instance").await;
    }
    assert_eq!(status, StatusCode::TOO_MANY_REQUESTS, "{body}");
    assert_eq!(json_type(&headers), "application/json");
    assert!(body["error"].as_str().unwrap().contains("retry"), "{body}");
    assert!(headers.contains_key("retry-after"));
    server.stop().await;
}

#[tokio::test]
async fn cors_is_open_on_the_mastodon_paths_and_exposes_link() {
    let server = TestServer::start(fresh_config(Kind::Embedded)).await;
    let preflight = server
        .client
        .request(
            reqwest::Method::OPTIONS,
            format!("{}/api/v1/instance", server.base),
        )
        .header("origin", "https://elk.example")
        .header("access-control-request-method", "GET")
        .header("access-control-request-headers", "authorization")
        .send()
        .await
        .unwrap();
    assert!(preflight.status().is_success(), "{}", preflight.status());
    assert_eq!(preflight.headers()["access-control-allow-origin"], "*");
    let response = server
        .client
        .get(format!("{}/api/v2/instance", server.base))
        .header("origin", "https://elk.example")
        .send()
        .await
        .unwrap();
    assert_eq!(response.headers()["access-control-allow-origin"], "*");
    let exposed = response.headers()["access-control-expose-headers"]
        .to_str()
        .unwrap()
        .to_ascii_lowercase();
    assert!(exposed.contains("link") && exposed.contains("x-ratelimit-remaining"));
    // Not on /v1, which no browser app calls.
    let response = server
        .client
        .get(format!("{}/v1/meta", server.base))
        .header("origin", "https://elk.example")
        .send()
        .await
        .unwrap();
    assert!(
        !response
            .headers()
            .contains_key("access-control-allow-origin")
    );
    server.stop().await;
}

#[tokio::test]
async fn the_api_can_be_turned_off() {
    let mut test = fresh_config(Kind::Embedded);
    test.config.mastodon.enabled = false;
    let server = TestServer::start(test).await;
    let (status, headers, _) = get(&server, "/api/v1/instance").await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(json_type(&headers), "application/problem+json");
    server.stop().await;
}
