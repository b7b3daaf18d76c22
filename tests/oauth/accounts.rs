//! Accounts with passwords: registration with an app token, and sign-ins refused past
//! the limits on failures, even with the right password.

use reqwest::StatusCode;

use crate::{Client, servers};

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
