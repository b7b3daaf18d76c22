//! Refresh tokens: issued with the password and code grants (not client credentials),
//! one use each (the old refresh token and its access token stop working), scopes only
//! narrow, another app's refresh token is refused, revocation takes them.

use reqwest::StatusCode;
use serde_json::Value;

use super::{Answer, Client, servers};

async fn refresh(
    client: &Client,
    app: &(String, String),
    token: &str,
    scope: Option<&str>,
) -> Answer {
    let mut fields = vec![
        ("grant_type", "refresh_token"),
        ("client_id", app.0.as_str()),
        ("client_secret", app.1.as_str()),
        ("refresh_token", token),
    ];
    if let Some(scope) = scope {
        fields.push(("scope", scope));
    }
    client.form("/oauth/token", None, &fields).await
}

fn field(answer: &Answer, name: &str) -> String {
    let body: Value = answer.json();
    body[name]
        .as_str()
        .unwrap_or_else(|| panic!("no {name} in {}", answer.text))
        .to_owned()
}

async fn me(client: &Client, token: &str) -> StatusCode {
    client
        .get("/api/v1/accounts/verify_credentials", Some(token))
        .await
        .status
}

#[tokio::test]
async fn a_refresh_token_buys_one_new_pair_and_scopes_only_narrow() {
    for (kind, server) in servers("refresh", |_| {}).await {
        let client = Client::of(&server);
        let app = client.app("urn:ietf:wg:oauth:2.0:oob", "read write").await;
        let other = client.app("urn:ietf:wg:oauth:2.0:oob", "read write").await;
        client.user("ann", Some("correct horse")).await;
        let first = client
            .password_grant(&app, "ann", "correct horse", "read write")
            .await;
        assert_eq!(first.status, StatusCode::OK, "{kind:?}: {}", first.text);
        let refresh_token = field(&first, "refresh_token");
        assert_ne!(field(&first, "access_token"), refresh_token);
        assert_eq!(me(&client, &refresh_token).await, StatusCode::UNAUTHORIZED);

        // Another app cannot spend it (and spends it trying: it was leaked).
        let foreign = refresh(&client, &other, &refresh_token, None).await;
        assert_eq!(foreign.status, StatusCode::BAD_REQUEST, "{kind:?}");
        assert_eq!(foreign.json()["error"], "invalid_grant");
        let dead = refresh(&client, &app, &refresh_token, None).await;
        assert_eq!(
            dead.json()["error"],
            "invalid_grant",
            "{kind:?}: {}",
            dead.text
        );

        let pair = client
            .password_grant(&app, "ann", "correct horse", "read write")
            .await;
        let token = field(&pair, "refresh_token");
        // Beyond its scopes: refused, and the token stays spent.
        let wider = refresh(&client, &app, &token, Some("read write follow")).await;
        assert_eq!(
            wider.json()["error"],
            "invalid_scope",
            "{kind:?}: {}",
            wider.text
        );
        let pair = client
            .password_grant(&app, "ann", "correct horse", "read write")
            .await;
        let (access, token) = (field(&pair, "access_token"), field(&pair, "refresh_token"));
        let narrowed = refresh(&client, &app, &token, Some("read")).await;
        assert_eq!(
            narrowed.status,
            StatusCode::OK,
            "{kind:?}: {}",
            narrowed.text
        );
        assert_eq!(narrowed.json()["scope"], "read");
        let new_access = field(&narrowed, "access_token");
        let new_refresh = field(&narrowed, "refresh_token");
        // Rotation: the old refresh token and its access token stop working.
        assert_eq!(
            me(&client, &access).await,
            StatusCode::UNAUTHORIZED,
            "{kind:?}"
        );
        assert_eq!(me(&client, &new_access).await, StatusCode::OK, "{kind:?}");
        let replay = refresh(&client, &app, &token, None).await;
        assert_eq!(
            replay.json()["error"],
            "invalid_grant",
            "{kind:?}: {}",
            replay.text
        );
        // The new one keeps the narrowed scopes when none are asked for.
        let next = refresh(&client, &app, &new_refresh, None).await;
        assert_eq!(next.status, StatusCode::OK, "{kind:?}: {}", next.text);
        assert_eq!(next.json()["scope"], "read");

        // Client credentials get none; revoking an access token takes its refresh token.
        let own = client
            .form(
                "/oauth/token",
                None,
                &[
                    ("grant_type", "client_credentials"),
                    ("client_id", &app.0),
                    ("client_secret", &app.1),
                ],
            )
            .await;
        assert!(own.json().get("refresh_token").is_none(), "{}", own.text);
        let (access, token) = (field(&next, "access_token"), field(&next, "refresh_token"));
        let revoked = client
            .form(
                "/oauth/revoke",
                None,
                &[
                    ("client_id", &app.0),
                    ("client_secret", &app.1),
                    ("token", &access),
                ],
            )
            .await;
        assert_eq!(revoked.status, StatusCode::OK);
        let after = refresh(&client, &app, &token, None).await;
        assert_eq!(
            after.json()["error"],
            "invalid_grant",
            "{kind:?}: {}",
            after.text
        );
        // A refresh token revoked by its own value.
        let pair = client
            .password_grant(&app, "ann", "correct horse", "read")
            .await;
        let token = field(&pair, "refresh_token");
        client
            .form(
                "/oauth/revoke",
                None,
                &[
                    ("client_id", &app.0),
                    ("client_secret", &app.1),
                    ("token", &token),
                ],
            )
            .await;
        let after = refresh(&client, &app, &token, None).await;
        assert_eq!(after.json()["error"], "invalid_grant", "{kind:?}");
        let missing = client
            .form(
                "/oauth/token",
                None,
                &[
                    ("grant_type", "refresh_token"),
                    ("client_id", &app.0),
                    ("client_secret", &app.1),
                ],
            )
            .await;
        assert_eq!(missing.json()["error"], "invalid_request", "{kind:?}");
        server.stop().await;
    }
}
