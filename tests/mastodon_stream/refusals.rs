//! What the streaming API refuses: a bad token (401 on every stream, and before a
//! WebSocket upgrade), a token without the stream's scope (403), a hashtag stream
//! without a tag that can be one (400), and, on a store without an event log (the
//! MongoDB stand-in), every stream it would serve (503, never a 500 or an empty 200);
//! the health endpoint answers either way.

use reqwest::StatusCode;
use serde_json::{Value, json};
use tokio_tungstenite::tungstenite::client::IntoClientRequest;

use crate::common::{self, TestServer, fresh_config};
use crate::ws_base;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn streams_refuse_bad_tokens_and_missing_scopes_and_health_answers() {
    for kind in common::kinds("streams_refuse_bad_tokens") {
        refusals(TestServer::start(fresh_config(kind)).await).await;
    }
}

/// On a store without an event log (the MongoDB stand-in) a stream it would serve is
/// 503, never a 500 or an empty 200.
async fn refusals(server: TestServer) {
    let log = server.server.state.events.hub().is_some();
    let health = server
        .client
        .get(server.url("/api/v1/streaming/health"))
        .send()
        .await
        .unwrap();
    assert_eq!(health.status(), StatusCode::OK);
    assert!(
        health.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/plain")
    );
    assert_eq!(health.text().await.unwrap(), "OK");
    for path in [
        "/api/v1/streaming/user",
        "/api/v1/streaming/user/notification",
        "/api/v1/streaming/public",
        "/api/v1/streaming/public/local",
        "/api/v1/streaming/hashtag?tag=rust",
        "/api/v1/streaming/hashtag/local?tag=rust",
    ] {
        let sep = if path.contains('?') { '&' } else { '?' };
        let answer = server
            .client
            .get(server.url(&format!("{path}{sep}access_token=not-a-token")))
            .send()
            .await
            .unwrap();
        assert_eq!(answer.status(), StatusCode::UNAUTHORIZED, "{path}");
        let body: Value = answer.json().await.unwrap();
        assert!(body["error"].is_string());
    }
    // A token for notifications alone reads the notification stream, not the user's.
    let token = scoped_token(&server, "ed", "read:notifications").await;
    for (path, status) in [
        ("/api/v1/streaming/user", StatusCode::FORBIDDEN),
        (
            "/api/v1/streaming/user/notification",
            match log {
                true => StatusCode::OK,
                false => StatusCode::SERVICE_UNAVAILABLE,
            },
        ),
    ] {
        let answer = server
            .client
            .get(server.url(path))
            .bearer_auth(&token)
            .send()
            .await
            .unwrap();
        assert_eq!(answer.status(), status, "{path}");
    }
    // The listings' streams: a token that may read statuses opens them (503 without an
    // event log); a hashtag stream needs a tag that can be one.
    let reader = scoped_token(&server, "fi", "read:statuses").await;
    let open = match log {
        true => StatusCode::OK,
        false => StatusCode::SERVICE_UNAVAILABLE,
    };
    for (path, status) in [
        ("/api/v1/streaming/public", open),
        ("/api/v1/streaming/public/local", open),
        ("/api/v1/streaming/hashtag?tag=%23Rust", open),
        ("/api/v1/streaming/hashtag/local?tag=rust", open),
        ("/api/v1/streaming/hashtag", StatusCode::BAD_REQUEST),
        ("/api/v1/streaming/hashtag?tag=", StatusCode::BAD_REQUEST),
        (
            "/api/v1/streaming/hashtag?tag=no-dash",
            StatusCode::BAD_REQUEST,
        ),
        ("/api/v1/streaming/public", StatusCode::FORBIDDEN),
    ] {
        let token = match status {
            StatusCode::FORBIDDEN => &token,
            _ => &reader,
        };
        let answer = server
            .client
            .get(server.url(path))
            .bearer_auth(token)
            .send()
            .await
            .unwrap();
        assert_eq!(answer.status(), status, "{path}");
        if status != StatusCode::OK {
            let body: Value = answer.json().await.unwrap();
            assert!(body["error"].is_string(), "{path}: {body}");
        }
    }
    // A bad token is refused before the upgrade.
    let mut request = format!("{}/api/v1/streaming?stream=user", ws_base(&server))
        .into_client_request()
        .unwrap();
    request
        .headers_mut()
        .insert("sec-websocket-protocol", "not-a-token".parse().unwrap());
    match tokio_tungstenite::connect_async(request).await {
        Err(tokio_tungstenite::tungstenite::Error::Http(response)) => {
            assert_eq!(response.status(), StatusCode::UNAUTHORIZED);
        }
        other => panic!(
            "a bad token was upgraded: {:?}",
            other.map(|(_, r)| r.status())
        ),
    }
}

/// A new user `id`'s OAuth token for `scope`, through the password grant.
async fn scoped_token(server: &TestServer, id: &str, scope: &str) -> String {
    let http = &server.client;
    let created = http
        .post(server.url("/v1/users"))
        .json(&json!({"id": id, "password": "correct horse"}))
        .send()
        .await
        .unwrap();
    assert_eq!(created.status(), StatusCode::CREATED);
    let form = |pairs: &[(&str, &str)]| serde_urlencoded::to_string(pairs).unwrap();
    let app: Value = http
        .post(server.url("/api/v1/apps"))
        .header("content-type", "application/x-www-form-urlencoded")
        .body(form(&[
            ("client_name", "tests"),
            ("redirect_uris", "urn:ietf:wg:oauth:2.0:oob"),
            ("scopes", "read write follow"),
        ]))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let token: Value = http
        .post(server.url("/oauth/token"))
        .header("content-type", "application/x-www-form-urlencoded")
        .body(form(&[
            ("grant_type", "password"),
            ("client_id", app["client_id"].as_str().unwrap()),
            ("client_secret", app["client_secret"].as_str().unwrap()),
            ("username", id),
            ("password", "correct horse"),
            ("scope", scope),
        ]))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    token["access_token"].as_str().unwrap().to_owned()
}
