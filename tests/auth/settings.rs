//! What the deployment settings change: `auth.admin_token` and `server.admin_listen`
//! guard the operations endpoints, and `auth.mode = none` lets anyone act for anyone.

use reqwest::{Method, StatusCode};
use serde_json::json;
use socialite::config::AuthMode;

use crate::common::{self, As, TestServer, fresh_config};

/// `auth.admin_token` guards `/metrics` and `/v1/workers`; `server.admin_listen` moves
/// them off the public listener.
#[tokio::test]
async fn operations_endpoints_are_guarded() {
    let mut test = fresh_config(common::Kind::Embedded);
    test.config.auth.admin_token = Some("an admin token of some length".into());
    let server = TestServer::start(test).await;
    let api = server.api();
    for path in ["/metrics", "/v1/workers"] {
        let (status, _) = api.send_as(As::Nobody, Method::GET, path, None).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED, "{path}");
        let (status, _) = api
            .send_as(
                As::Token("an admin token of some length"),
                Method::GET,
                path,
                None,
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{path}");
    }
    server.stop().await;

    let mut test = fresh_config(common::Kind::Embedded);
    test.config.server.admin_listen = Some("127.0.0.1:0".parse().unwrap());
    let server = TestServer::start(test).await;
    let (status, _) = server.api().get("/metrics").await;
    assert_eq!(status, StatusCode::NOT_FOUND, "not on the public listener");
    server.stop().await;
}

/// `auth.mode = none` behaves as before authentication existed.
#[tokio::test]
async fn with_auth_off_anyone_acts_for_anyone() {
    let mut test = fresh_config(common::Kind::Embedded);
    test.config.auth.mode = AuthMode::None;
    let server = TestServer::start(test).await;
    let api = server.api();
    let (_, created) = api.post("/v1/users", json!({"id": "open"})).await;
    assert!(created.get("token").is_none());
    let post = api.say("open", "no token needed").await;
    let (status, _) = api
        .send_as(
            As::Nobody,
            Method::DELETE,
            &format!("/v1/posts/{post}"),
            None,
        )
        .await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let (status, _) = api.post("/v1/users/open/tokens", json!({})).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "no tokens to issue");
    server.stop().await;
}
