//! JWTs from an identity provider: HS256 with a secret and ES256 with a public key file,
//! and the same 401 for every token that fails.

use jsonwebtoken::{Algorithm, EncodingKey, Header};
use reqwest::{Method, StatusCode};
use serde_json::json;
use socialite::config::AuthMode;

use crate::common::{self, As, TestServer, fresh_config};

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
