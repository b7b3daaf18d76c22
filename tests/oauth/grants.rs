//! Apps, the token grants, scopes, revocation, registration and passwords.

use reqwest::StatusCode;
use serde_json::json;

use crate::{Client, servers};

#[tokio::test]
async fn apps_register_from_forms_and_json_and_the_metadata_lists_what_is_served() {
    for (kind, server) in servers("apps_register", |_| {}).await {
        let client = Client::of(&server);
        // A form with a list of redirect URIs (Rails' `key[]=`).
        let form = client
            .form(
                "/api/v1/apps",
                None,
                &[
                    ("client_name", "Form app"),
                    ("redirect_uris[]", "https://a.example/cb"),
                    ("redirect_uris[]", "urn:ietf:wg:oauth:2.0:oob"),
                    ("scopes", "read write"),
                ],
            )
            .await;
        assert_eq!(form.status, StatusCode::OK, "{kind:?}: {}", form.text);
        let app = form.json();
        assert_eq!(
            app["redirect_uris"],
            json!(["https://a.example/cb", "urn:ietf:wg:oauth:2.0:oob"])
        );
        assert_eq!(app["scopes"], json!(["read", "write"]));
        assert!(app["client_secret"].as_str().unwrap().len() >= 40);
        // JSON, URIs newline separated, as toot sends.
        let json_app = client
            .json(
                "/api/v1/apps",
                None,
                json!({"client_name": "toot", "redirect_uris": "https://b.example/cb\nhttps://c.example/cb", "scopes": "read write follow"}),
            )
            .await;
        assert_eq!(json_app.status, StatusCode::OK, "{}", json_app.text);
        assert_eq!(
            json_app.json()["redirect_uris"].as_array().unwrap().len(),
            2
        );
        // Bad input is a 422 in `{"error"}`: a URI with a fragment, an unknown scope.
        for (uris, scopes) in [
            ("https://a.example/cb#x", "read"),
            ("https://a.example/cb", "admin:read"),
        ] {
            let bad = client
                .form(
                    "/api/v1/apps",
                    None,
                    &[
                        ("client_name", "x"),
                        ("redirect_uris", uris),
                        ("scopes", scopes),
                    ],
                )
                .await;
            assert_eq!(
                bad.status,
                StatusCode::UNPROCESSABLE_ENTITY,
                "{uris} {scopes}"
            );
            assert!(bad.content_type.starts_with("application/json"));
            assert!(bad.json()["error"].is_string(), "{}", bad.text);
        }
        // The app's own token names it.
        let creds = (
            app["client_id"].as_str().unwrap().to_owned(),
            app["client_secret"].as_str().unwrap().to_owned(),
        );
        let token = client
            .form(
                "/oauth/token",
                None,
                &[
                    ("grant_type", "client_credentials"),
                    ("client_id", &creds.0),
                    ("client_secret", &creds.1),
                ],
            )
            .await;
        assert_eq!(token.status, StatusCode::OK, "{}", token.text);
        let token = token.json();
        assert_eq!(token["token_type"], "Bearer");
        assert_eq!(token["scope"], "read write");
        let verified = client
            .get(
                "/api/v1/apps/verify_credentials",
                token["access_token"].as_str(),
            )
            .await;
        assert_eq!(verified.status, StatusCode::OK, "{}", verified.text);
        assert_eq!(verified.json()["name"], "Form app");
        assert!(verified.json()["client_secret"].is_null());
        // A wrong secret is invalid_client.
        let wrong = client
            .form(
                "/oauth/token",
                None,
                &[
                    ("grant_type", "client_credentials"),
                    ("client_id", &creds.0),
                    ("client_secret", "nope"),
                ],
            )
            .await;
        assert_eq!(wrong.status, StatusCode::UNAUTHORIZED);
        assert_eq!(wrong.json()["error"], "invalid_client");
        let unsupported = client
            .form(
                "/oauth/token",
                None,
                &[
                    ("grant_type", "implicit"),
                    ("client_id", &creds.0),
                    ("client_secret", &creds.1),
                ],
            )
            .await;
        assert_eq!(unsupported.json()["error"], "unsupported_grant_type");
        let meta = client
            .get("/.well-known/oauth-authorization-server", None)
            .await
            .json();
        assert_eq!(
            meta["grant_types_supported"],
            json!([
                "authorization_code",
                "client_credentials",
                "password",
                "refresh_token"
            ])
        );
        assert_eq!(meta["code_challenge_methods_supported"], json!(["S256"]));
        assert_eq!(
            meta["token_endpoint"],
            format!("{}/oauth/token", server.base)
        );
        server.stop().await;
    }
}

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

#[tokio::test]
async fn registration_with_an_app_token_creates_a_user_with_a_password() {
    for (kind, server) in servers("registration", |_| {}).await {
        let client = Client::of(&server);
        let app = client
            .app("urn:ietf:wg:oauth:2.0:oob", "read write follow push")
            .await;
        let app_token = |scope: &'static str| {
            let (client, app) = (&client, &app);
            async move {
                client
                    .form(
                        "/oauth/token",
                        None,
                        &[
                            ("grant_type", "client_credentials"),
                            ("client_id", &app.0),
                            ("client_secret", &app.1),
                            ("scope", scope),
                        ],
                    )
                    .await
                    .json()["access_token"]
                    .as_str()
                    .unwrap()
                    .to_owned()
            }
        };
        let writer = app_token("read write follow push").await;
        let fields = |user: &'static str, agreement: &'static str| {
            [
                ("username", user),
                ("password", "correct horse"),
                ("email", "x@example.org"),
                ("agreement", agreement),
                ("locale", "en"),
            ]
        };
        let created = client
            .form("/api/v1/accounts", Some(&writer), &fields("newbie", "true"))
            .await;
        assert_eq!(created.status, StatusCode::OK, "{kind:?}: {}", created.text);
        assert_eq!(created.json()["scope"], "read write follow push");
        let token = created.json()["access_token"].as_str().unwrap().to_owned();
        let me = client
            .get("/api/v1/accounts/verify_credentials", Some(&token))
            .await;
        assert_eq!(me.json()["acct"], "newbie");
        assert_eq!(
            client
                .password_grant(&app, "newbie", "correct horse", "read")
                .await
                .status,
            StatusCode::OK
        );
        let taken = client
            .form("/api/v1/accounts", Some(&writer), &fields("newbie", "true"))
            .await;
        assert_eq!(
            taken.status,
            StatusCode::UNPROCESSABLE_ENTITY,
            "{}",
            taken.text
        );
        let disagreed = client
            .form("/api/v1/accounts", Some(&writer), &fields("other", "false"))
            .await;
        assert_eq!(disagreed.status, StatusCode::UNPROCESSABLE_ENTITY);
        let reader = app_token("read").await;
        let scoped = client
            .form("/api/v1/accounts", Some(&reader), &fields("other", "true"))
            .await;
        assert_eq!(scoped.status, StatusCode::FORBIDDEN);
        let anonymous = client
            .form("/api/v1/accounts", None, &fields("other", "true"))
            .await;
        assert_eq!(anonymous.status, StatusCode::UNAUTHORIZED);
        server.stop().await;
    }
}

#[tokio::test]
async fn failed_sign_ins_past_the_limits_are_refused_even_with_the_right_password() {
    let limits = |test: &mut crate::TestConfig| {
        test.config.mastodon.signin_failures_per_account = 3;
        test.config.mastodon.signin_failures_per_address = 5;
    };
    for (kind, server) in servers("signin_limits", limits).await {
        let client = Client::of(&server);
        let app = client.app("urn:ietf:wg:oauth:2.0:oob", "read").await;
        client.user("ann", Some("correct horse")).await;
        client.user("bo", Some("battery staple")).await;
        for _ in 0..3 {
            let wrong = client
                .password_grant(&app, "ann", "guess guess", "read")
                .await;
            assert_eq!(wrong.status, StatusCode::BAD_REQUEST);
        }
        let limited = client
            .password_grant(&app, "ann", "correct horse", "read")
            .await;
        assert_eq!(
            limited.status,
            StatusCode::TOO_MANY_REQUESTS,
            "{kind:?}: {}",
            limited.text
        );
        // Bo's account is not limited, but the address is after two more failures.
        assert_eq!(
            client
                .password_grant(&app, "bo", "battery staple", "read")
                .await
                .status,
            StatusCode::OK
        );
        for _ in 0..2 {
            assert_eq!(
                client
                    .password_grant(&app, "bo", "guess guess", "read")
                    .await
                    .status,
                StatusCode::BAD_REQUEST
            );
        }
        let by_address = client
            .password_grant(&app, "bo", "battery staple", "read")
            .await;
        assert_eq!(by_address.status, StatusCode::TOO_MANY_REQUESTS);
        server.stop().await;
    }
}
