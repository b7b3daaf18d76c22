//! The token grants: the password grant (a password, or for a user without one a `/v1`
//! token), scopes enforced (`/v1` tokens holding them all), and revocation by the
//! token's app alone.

use reqwest::StatusCode;
use serde_json::json;

use crate::{Client, servers};

#[tokio::test]
async fn the_password_grant_takes_a_password_or_for_a_user_without_one_a_token() {
    for (kind, server) in servers("password_grant", |_| {}).await {
        let client = Client::of(&server);
        let app = client
            .app("urn:ietf:wg:oauth:2.0:oob", "read write follow push")
            .await;
        client.user("ann", Some("correct horse")).await;
        let ok = client
            .password_grant(&app, "ann", "correct horse", "read write follow push")
            .await;
        assert_eq!(ok.status, StatusCode::OK, "{kind:?}: {}", ok.text);
        assert_eq!(ok.json()["scope"], "read write follow push");
        let token = ok.json()["access_token"].as_str().unwrap().to_owned();
        let me = client
            .get("/api/v1/accounts/verify_credentials", Some(&token))
            .await;
        assert_eq!(me.status, StatusCode::OK, "{}", me.text);
        assert_eq!(me.json()["username"], "ann");
        assert_eq!(me.json()["source"]["privacy"], "public");
        let wrong = client
            .password_grant(&app, "ann", "correct horsE", "read")
            .await;
        assert_eq!(wrong.status, StatusCode::BAD_REQUEST);
        assert_eq!(wrong.json()["error"], "invalid_grant");
        // Beyond the app's scopes.
        let admin = client
            .password_grant(&app, "ann", "correct horse", "read profile")
            .await;
        assert_eq!(admin.json()["error"], "invalid_scope", "{}", admin.text);
        // Bo has no password: their API token signs them in, until they set one.
        let bo_token = client.user("bo", None).await;
        assert_eq!(
            client
                .password_grant(&app, "bo", &bo_token, "read")
                .await
                .status,
            StatusCode::OK
        );
        let ann_token = client.user("cy", None).await;
        assert_eq!(
            client
                .password_grant(&app, "bo", &ann_token, "read")
                .await
                .status,
            StatusCode::BAD_REQUEST,
            "cy's token is not bo's"
        );
        let set = server
            .client
            .put(server.url("/v1/users/bo/password"))
            .bearer_auth(&bo_token)
            .json(&json!({"password": "battery staple"}))
            .send()
            .await
            .unwrap();
        assert_eq!(set.status(), StatusCode::NO_CONTENT);
        assert_eq!(
            client
                .password_grant(&app, "bo", &bo_token, "read")
                .await
                .status,
            StatusCode::BAD_REQUEST
        );
        assert_eq!(
            client
                .password_grant(&app, "bo", "battery staple", "read")
                .await
                .status,
            StatusCode::OK
        );
        // Only the owner sets it, and only a long enough one.
        for (token, password, expected) in [
            (&ann_token, "battery staple", StatusCode::FORBIDDEN),
            (&bo_token, "short", StatusCode::UNPROCESSABLE_ENTITY),
        ] {
            let refused = server
                .client
                .put(server.url("/v1/users/bo/password"))
                .bearer_auth(token)
                .json(&json!({"password": password}))
                .send()
                .await
                .unwrap();
            assert_eq!(refused.status(), expected);
        }
        let short = client
            .json("/v1/users", None, json!({"id": "dee", "password": "short"}))
            .await;
        assert_eq!(short.status, StatusCode::UNPROCESSABLE_ENTITY);
        server.stop().await;
    }
}

#[tokio::test]
async fn scopes_are_enforced_and_v1_tokens_hold_them_all() {
    for (kind, server) in servers("scopes", |_| {}).await {
        let client = Client::of(&server);
        let app = client
            .app("urn:ietf:wg:oauth:2.0:oob", "read write profile")
            .await;
        let v1 = client.user("ann", Some("correct horse")).await;
        let grant = |scope: &'static str| {
            let (client, app) = (&client, &app);
            async move {
                let answer = client
                    .password_grant(app, "ann", "correct horse", scope)
                    .await;
                assert_eq!(answer.status, StatusCode::OK, "{scope}: {}", answer.text);
                answer.json()["access_token"].as_str().unwrap().to_owned()
            }
        };
        for (scope, expected) in [
            ("read:statuses", StatusCode::FORBIDDEN),
            ("write", StatusCode::FORBIDDEN),
            ("read:accounts", StatusCode::OK),
            ("read", StatusCode::OK),
            ("profile", StatusCode::OK),
        ] {
            let token = grant(scope).await;
            let answer = client
                .get("/api/v1/accounts/verify_credentials", Some(&token))
                .await;
            assert_eq!(answer.status, expected, "{kind:?} {scope}: {}", answer.text);
            if expected == StatusCode::FORBIDDEN {
                assert_eq!(
                    answer.json()["error"],
                    "This action is outside the authorized scopes"
                );
            }
        }
        let none = client
            .get("/api/v1/accounts/verify_credentials", None)
            .await;
        assert_eq!(none.status, StatusCode::UNAUTHORIZED);
        assert_eq!(none.json()["error"], "The access token is invalid");
        let bad = client
            .get("/api/v1/accounts/verify_credentials", Some(&"x".repeat(64)))
            .await;
        assert_eq!(bad.status, StatusCode::UNAUTHORIZED);
        // A /v1 token holds every scope on the Mastodon API ...
        assert_eq!(
            client
                .get("/api/v1/accounts/verify_credentials", Some(&v1))
                .await
                .status,
            StatusCode::OK
        );
        // ... but an OAuth token opens nothing on /v1, which has no scopes.
        let oauth = grant("read").await;
        let patch = server
            .client
            .patch(server.url("/v1/users/ann"))
            .bearer_auth(&oauth)
            .json(&json!({"display_name": "x"}))
            .send()
            .await
            .unwrap();
        assert_eq!(patch.status(), StatusCode::UNAUTHORIZED);
        // An app's own token has no user.
        let app_token = client
            .form(
                "/oauth/token",
                None,
                &[
                    ("grant_type", "client_credentials"),
                    ("client_id", &app.0),
                    ("client_secret", &app.1),
                    ("scope", "read"),
                ],
            )
            .await
            .json()["access_token"]
            .as_str()
            .unwrap()
            .to_owned();
        assert_eq!(
            client
                .get("/api/v1/accounts/verify_credentials", Some(&app_token))
                .await
                .status,
            StatusCode::UNPROCESSABLE_ENTITY
        );
        server.stop().await;
    }
}

#[tokio::test]
async fn a_revoked_token_opens_nothing_and_only_its_app_revokes_it() {
    for (kind, server) in servers("revoke", |_| {}).await {
        let client = Client::of(&server);
        let app = client.app("urn:ietf:wg:oauth:2.0:oob", "read").await;
        let other = client.app("urn:ietf:wg:oauth:2.0:oob", "read").await;
        client.user("ann", Some("correct horse")).await;
        let token = client
            .password_grant(&app, "ann", "correct horse", "read")
            .await
            .json()["access_token"]
            .as_str()
            .unwrap()
            .to_owned();
        let me = |token: String| {
            let client = &client;
            async move {
                client
                    .get("/api/v1/accounts/verify_credentials", Some(&token))
                    .await
                    .status
            }
        };
        assert_eq!(me(token.clone()).await, StatusCode::OK);
        let foreign = client
            .form(
                "/oauth/revoke",
                None,
                &[
                    ("client_id", &other.0),
                    ("client_secret", &other.1),
                    ("token", &token),
                ],
            )
            .await;
        assert_eq!(foreign.status, StatusCode::OK, "RFC 7009: no error");
        assert_eq!(
            me(token.clone()).await,
            StatusCode::OK,
            "{kind:?}: another app cannot revoke it"
        );
        let unauthenticated = client
            .form(
                "/oauth/revoke",
                None,
                &[
                    ("client_id", &app.0),
                    ("client_secret", "x"),
                    ("token", &token),
                ],
            )
            .await;
        assert_eq!(unauthenticated.status, StatusCode::UNAUTHORIZED);
        let revoked = client
            .json(
                "/oauth/revoke",
                None,
                json!({"client_id": app.0, "client_secret": app.1, "token": token}),
            )
            .await;
        assert_eq!(revoked.status, StatusCode::OK, "{}", revoked.text);
        assert_eq!(me(token).await, StatusCode::UNAUTHORIZED);
        server.stop().await;
    }
}
