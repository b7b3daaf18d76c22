//! Authentication and authorization over HTTP: the matrix of writes and private reads,
//! JWTs, where tokens are (not) stored, the operations endpoints and `auth.mode = none`.
//!
//! This file holds the matrix; JWTs are in `auth/jwt.rs`, token storage in
//! `auth/tokens.rs`, when a revocation takes effect in `auth/revocation.rs`, and the
//! operations endpoints' guard and `auth.mode = none` in `auth/settings.rs`.

mod common;
#[path = "auth/jwt.rs"]
mod jwt;
#[path = "auth/revocation.rs"]
mod revocation;
#[path = "auth/settings.rs"]
mod settings;
#[path = "auth/tokens.rs"]
mod tokens;

use common::{As, TestServer, fresh_config, kinds};
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

/// One request a user makes on their own behalf, and the status it earns them.
struct Case {
    method: Method,
    path: String,
    body: Option<Value>,
    success: StatusCode,
}

fn case(method: Method, path: String, body: Option<Value>, success: u16) -> Case {
    Case {
        method,
        path,
        body,
        success: StatusCode::from_u16(success).unwrap(),
    }
}

/// Every write and every private read: the owner succeeds, another user gets 403, no
/// credentials get 401, a revoked token gets 401, and a wrong token the same 401.
#[tokio::test]
async fn only_the_owner_may_write_or_read_private_data() {
    for kind in kinds("only_the_owner_may_write_or_read_private_data") {
        let server = TestServer::start(fresh_config(kind)).await;
        let api = server.api();
        for id in ["alice", "bob"] {
            api.user(id).await;
        }
        let bobs = api.say("bob", "bob's").await;
        let alices = api.say("alice", "alice's").await;
        let (status, spare) = api.post("/v1/users/alice/tokens", json!({})).await;
        assert_eq!(status, StatusCode::CREATED, "{kind:?}: {spare}");
        let (status, revoked) = api.post("/v1/users/alice/tokens", json!({})).await;
        assert_eq!(status, StatusCode::CREATED);
        assert_ne!(spare["token"], revoked["token"], "every token is new");
        // Used once before it is revoked, so it sits in the verified-token cache.
        let (status, _) = api
            .send_as(
                As::Token(revoked["token"].as_str().unwrap()),
                Method::GET,
                "/v1/users/alice/timeline",
                None,
            )
            .await;
        assert_eq!(status, StatusCode::OK);
        let path = format!("/v1/users/alice/tokens/{}", revoked["id"].as_str().unwrap());
        assert_eq!(api.delete(&path).await.0, StatusCode::NO_CONTENT);
        assert_eq!(api.delete(&path).await.0, StatusCode::NOT_FOUND, "gone");
        let revoked = revoked["token"].as_str().unwrap().to_owned();
        let bob = api.token("bob");

        let cases = [
            case(
                Method::PATCH,
                "/v1/users/alice".into(),
                Some(json!({"display_name": "A"})),
                200,
            ),
            case(
                Method::PUT,
                "/v1/users/alice/following/bob".into(),
                None,
                204,
            ),
            case(
                Method::DELETE,
                "/v1/users/alice/following/bob".into(),
                None,
                204,
            ),
            case(
                Method::POST,
                "/v1/users/alice/posts".into(),
                Some(json!({"text": "hi"})),
                201,
            ),
            case(
                Method::PUT,
                format!("/v1/users/alice/likes/{bobs}"),
                None,
                204,
            ),
            case(
                Method::DELETE,
                format!("/v1/users/alice/likes/{bobs}"),
                None,
                204,
            ),
            case(Method::GET, "/v1/users/alice/timeline".into(), None, 200),
            case(Method::GET, "/v1/users/alice/activity".into(), None, 200),
            case(Method::POST, "/v1/users/alice/tokens".into(), None, 201),
            case(
                Method::DELETE,
                format!("/v1/users/alice/tokens/{}", spare["id"].as_str().unwrap()),
                None,
                204,
            ),
            case(Method::DELETE, format!("/v1/posts/{alices}"), None, 204),
        ];
        let mut unauthorized = Vec::new();
        for c in &cases {
            let what = format!("{kind:?} {} {}", c.method, c.path);
            let attempts = [
                (As::Nobody, StatusCode::UNAUTHORIZED),
                (As::Token(&revoked), StatusCode::UNAUTHORIZED),
                (As::Token("not-a-token"), StatusCode::UNAUTHORIZED),
                (As::Token(&bob), StatusCode::FORBIDDEN),
                (As::Owner, c.success),
            ];
            for (who, expected) in attempts {
                let (status, body) = api
                    .send_as(who, c.method.clone(), &c.path, c.body.clone())
                    .await;
                assert_eq!(status, expected, "{what} as {who:?}: {body}");
                if status == StatusCode::UNAUTHORIZED {
                    unauthorized.push(body);
                }
            }
        }
        // The live timeline is private too. Its owner's 200 is a stream that never ends
        // (tests/stream.rs reads it); everyone else is refused before it opens.
        for (who, expected) in [
            (As::Nobody, StatusCode::UNAUTHORIZED),
            (As::Token(&revoked), StatusCode::UNAUTHORIZED),
            (As::Token("not-a-token"), StatusCode::UNAUTHORIZED),
            (As::Token(&bob), StatusCode::FORBIDDEN),
        ] {
            let (status, body) = api
                .send_as(who, Method::GET, "/v1/users/alice/timeline/stream", None)
                .await;
            assert_eq!(status, expected, "{kind:?} stream as {who:?}: {body}");
            if status == StatusCode::UNAUTHORIZED {
                unauthorized.push(body);
            }
        }
        // No enumeration: every 401 is the same, whoever was named and whatever was sent.
        let (status, ghost) = api
            .send_as(
                As::Token(&revoked),
                Method::GET,
                "/v1/users/ghost/timeline",
                None,
            )
            .await;
        assert_eq!(status, StatusCode::UNAUTHORIZED);
        assert!(unauthorized.iter().all(|body| *body == ghost), "{kind:?}");

        // The 401 names the scheme.
        let response = server
            .client
            .get(server.url("/v1/users/alice/timeline"))
            .send()
            .await
            .unwrap();
        assert_eq!(response.headers()["www-authenticate"], "Bearer");

        // Profiles, posts, follower lists and the health checks stay public.
        for path in [
            "/v1/users/alice".to_owned(),
            "/v1/users/bob/posts".to_owned(),
            format!("/v1/posts/{bobs}"),
            "/v1/users/bob/followers".to_owned(),
            "/v1/users/alice/following".to_owned(),
            "/healthz".to_owned(),
            "/readyz".to_owned(),
        ] {
            let (status, body) = api.send_as(As::Nobody, Method::GET, &path, None).await;
            assert_eq!(status, StatusCode::OK, "{kind:?} {path}: {body}");
        }
        server.stop().await;
    }
}
