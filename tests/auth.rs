//! Authentication and authorization over HTTP: the matrix of writes and private reads,
//! JWTs, where tokens are (not) stored, the operations endpoints and `auth.mode = none`.

mod common;

use common::{As, TestServer, fresh_config, kinds};
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use socialite::config::AuthMode;

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

/// The tokens are in no table or collection: only their SHA-256 is.
#[tokio::test]
async fn the_database_holds_no_plaintext_token() {
    for kind in kinds("the_database_holds_no_plaintext_token") {
        let test = fresh_config(kind);
        let (file, uri) = (
            test.config.storage.path.clone(),
            test.config.storage.mongodb_uri.clone(),
        );
        let server = TestServer::start(test).await;
        let api = server.api();
        api.user("keeper").await;
        let (_, more) = api.post("/v1/users/keeper/tokens", json!({})).await;
        let tokens = [
            api.token("keeper"),
            more["token"].as_str().unwrap().to_owned(),
        ];
        let hash = hex_sha256(&tokens[0]);
        let stored = match kind {
            common::Kind::Embedded => {
                // The WAL holds the newest pages: read the database and its log.
                let mut bytes = std::fs::read(&file).unwrap();
                bytes.extend(std::fs::read(file.with_extension("db-wal")).unwrap_or_default());
                let hex_hash_bytes: [u8; 32] = hex::decode(&hash).unwrap().try_into().unwrap();
                assert!(
                    bytes.windows(32).any(|w| w == hex_hash_bytes),
                    "the hash is stored, so the scan reads the right data"
                );
                String::from_utf8_lossy(&bytes).into_owned()
            }
            common::Kind::Mongo => {
                let client = mongodb::Client::with_uri_str(uri.unwrap()).await.unwrap();
                let db = client.default_database().unwrap();
                let mut dump = String::new();
                for name in db.list_collection_names().await.unwrap() {
                    let mut cursor = db
                        .collection::<mongodb::bson::Document>(&name)
                        .find(mongodb::bson::doc! {})
                        .await
                        .unwrap();
                    while cursor.advance().await.unwrap() {
                        let doc = cursor.deserialize_current().unwrap();
                        dump.push_str(&format!("{name}: {doc}\n"));
                    }
                }
                assert!(dump.contains(&hash), "the hash is stored: {dump}");
                dump
            }
        };
        for token in &tokens {
            assert!(
                !stored.contains(token.as_str()),
                "{kind:?}: token stored in clear"
            );
        }
        server.stop().await;
    }
}

fn hex_sha256(value: &str) -> String {
    use sha2::Digest;
    hex::encode(sha2::Sha256::digest(value.as_bytes()))
}

#[derive(serde::Serialize)]
struct Claims<'a> {
    sub: &'a str,
    exp: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    aud: Option<&'a str>,
    iss: &'a str,
}

fn now_s() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

fn jwt(key: &EncodingKey, algorithm: Algorithm, sub: &str, exp: u64, aud: Option<&str>) -> String {
    let claims = Claims {
        sub,
        exp,
        aud,
        iss: "https://id.example",
    };
    jsonwebtoken::encode(&Header::new(algorithm), &claims, key).unwrap()
}

/// HS256 with a secret, ES256 with a public key file: a valid token acts as `sub`;
/// expired, wrongly signed, wrong-audience tokens and unknown subjects get the same 401.
#[tokio::test]
async fn jwts_are_verified() {
    let fixtures = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let private = std::fs::read(fixtures.join("jwt-es256-private.pem")).unwrap();
    let keys = [
        (
            Algorithm::HS256,
            EncodingKey::from_secret(b"a shared secret of enough length"),
        ),
        (
            Algorithm::ES256,
            EncodingKey::from_ec_pem(&private).unwrap(),
        ),
    ];
    for (algorithm, key) in keys {
        let mut test = fresh_config(common::Kind::Embedded);
        test.config.auth.mode = AuthMode::Jwt;
        test.config.auth.jwt_audience = Some("socialite".into());
        test.config.auth.jwt_issuer = Some("https://id.example".into());
        if algorithm == Algorithm::HS256 {
            test.config.auth.jwt_secret = Some("a shared secret of enough length".into());
        } else {
            test.config.auth.jwt_public_key_file = Some(fixtures.join("jwt-es256-public.pem"));
        }
        test.config.validate().unwrap();
        let server = TestServer::start(test).await;
        let api = server.api();
        let (status, created) = api.post("/v1/users", json!({"id": "carol"})).await;
        assert_eq!(status, StatusCode::CREATED);
        assert!(created.get("token").is_none(), "no API tokens in jwt mode");

        let later = now_s() + 3600;
        let valid = jwt(&key, algorithm, "carol", later, Some("socialite"));
        let path = "/v1/users/carol/posts";
        let post = |token: String| {
            let api = &api;
            async move {
                api.send_as(
                    As::Token(&token),
                    Method::POST,
                    path,
                    Some(json!({"text": "t"})),
                )
                .await
            }
        };
        assert_eq!(
            post(valid.clone()).await.0,
            StatusCode::CREATED,
            "{algorithm:?}"
        );
        let other_key = EncodingKey::from_secret(b"some other secret entirely");
        let mut refused = Vec::new();
        for (what, token) in [
            (
                "expired",
                jwt(&key, algorithm, "carol", now_s() - 60, Some("socialite")),
            ),
            (
                "wrong audience",
                jwt(&key, algorithm, "carol", later, Some("elsewhere")),
            ),
            ("no audience", jwt(&key, algorithm, "carol", later, None)),
            (
                "unknown subject",
                jwt(&key, algorithm, "nobody", later, Some("socialite")),
            ),
            ("wrong signature", {
                // This payload under the signature of another payload, same key.
                let other = jwt(&key, algorithm, "carol", later + 1, Some("socialite"));
                let (signed, _) = valid.rsplit_once('.').unwrap();
                format!("{signed}.{}", other.rsplit_once('.').unwrap().1)
            }),
            (
                "other key",
                jwt(
                    &other_key,
                    Algorithm::HS256,
                    "carol",
                    later,
                    Some("socialite"),
                ),
            ),
            ("tampered", format!("{}x", &valid[..valid.len() - 1])),
        ] {
            let (status, body) = post(token).await;
            assert_eq!(
                status,
                StatusCode::UNAUTHORIZED,
                "{algorithm:?} {what}: {body}"
            );
            refused.push(body);
        }
        assert!(refused.windows(2).all(|w| w[0] == w[1]), "one 401 for all");
        // The subject acts only for itself.
        let (status, _) = api
            .send_as(
                As::Token(&valid),
                Method::PUT,
                "/v1/users/dave/following/carol",
                None,
            )
            .await;
        assert_eq!(status, StatusCode::FORBIDDEN);
        server.stop().await;
    }
}

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
