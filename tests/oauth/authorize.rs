//! The authorize page and the code flow: PKCE S256 and its failures (wrong verifier,
//! reused code, expired code, wrong redirect URI), CSRF, deny, out-of-band codes, and
//! no open redirect.

use std::sync::Arc;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use reqwest::StatusCode;
use sha2::{Digest, Sha256};
use socialite::domain::clock::ManualClock;

use crate::common::{TestServer, fresh_config, kinds};
use crate::{Answer, Client, servers};

const CALLBACK: &str = "https://app.example/cb";
const VERIFIER: &str = "a-verifier-of-enough-length-0123456789-abcdefghij";

fn challenge(verifier: &str) -> String {
    URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()))
}

fn csrf(page: &Answer) -> String {
    let found = regex::Regex::new(r#"name="csrf" value="([^"]+)""#)
        .unwrap()
        .captures(&page.text)
        .unwrap_or_else(|| panic!("no csrf field in {}", page.text));
    found[1].to_owned()
}

fn query_param(location: &str, name: &str) -> Option<String> {
    let query = location.split_once('?')?.1;
    let pairs: Vec<(String, String)> = serde_urlencoded::from_str(query).ok()?;
    pairs.into_iter().find(|(k, _)| k == name).map(|(_, v)| v)
}

/// The authorize page for `app` (`redirect_uri`, PKCE challenge): the answer.
async fn page(
    client: &Client,
    app: &(String, String),
    redirect_uri: &str,
    challenge: &str,
) -> Answer {
    let query = serde_urlencoded::to_string([
        ("response_type", "code"),
        ("client_id", app.0.as_str()),
        ("redirect_uri", redirect_uri),
        ("scope", "read write"),
        ("state", "s t&ate"),
        ("code_challenge", challenge),
        ("code_challenge_method", "S256"),
    ])
    .unwrap();
    client.get(&format!("/oauth/authorize?{query}"), None).await
}

/// Submits the page's form with `csrf`, as `user`/`password`, `decision`.
async fn submit(
    client: &Client,
    app: &(String, String),
    redirect_uri: &str,
    csrf: &str,
    user: &str,
    password: &str,
    decision: &str,
) -> Answer {
    let challenge = challenge(VERIFIER);
    client
        .form(
            "/oauth/authorize",
            None,
            &[
                ("response_type", "code"),
                ("client_id", &app.0),
                ("redirect_uri", redirect_uri),
                ("scope", "read write"),
                ("state", "s t&ate"),
                ("code_challenge", &challenge),
                ("code_challenge_method", "S256"),
                ("csrf", csrf),
                ("user", user),
                ("password", password),
                ("decision", decision),
            ],
        )
        .await
}

/// A code for ann through the page.
async fn code(client: &Client, app: &(String, String)) -> String {
    let shown = page(client, app, CALLBACK, &challenge(VERIFIER)).await;
    assert_eq!(shown.status, StatusCode::OK, "{}", shown.text);
    let answer = submit(
        client,
        app,
        CALLBACK,
        &csrf(&shown),
        "ann",
        "correct horse",
        "approve",
    )
    .await;
    assert_eq!(answer.status, StatusCode::FOUND, "{}", answer.text);
    let location = answer.location.unwrap();
    assert!(location.starts_with(&format!("{CALLBACK}?")), "{location}");
    assert_eq!(query_param(&location, "state").as_deref(), Some("s t&ate"));
    query_param(&location, "code").unwrap()
}

async fn exchange(
    client: &Client,
    app: &(String, String),
    code: &str,
    redirect_uri: &str,
    verifier: &str,
) -> Answer {
    client
        .form(
            "/oauth/token",
            None,
            &[
                ("grant_type", "authorization_code"),
                ("client_id", &app.0),
                ("client_secret", &app.1),
                ("code", code),
                ("redirect_uri", redirect_uri),
                ("code_verifier", verifier),
            ],
        )
        .await
}

#[tokio::test]
async fn the_code_flow_holds_to_pkce_and_each_code_is_used_once_before_it_expires() {
    for kind in kinds("code_flow") {
        let clock = Arc::new(ManualClock::at(socialite::domain::now_ms()));
        let server = TestServer::start_with_clock(fresh_config(kind), clock.clone()).await;
        let client = Client::of(&server);
        let app = client
            .app(
                &format!("{CALLBACK} urn:ietf:wg:oauth:2.0:oob"),
                "read write",
            )
            .await;
        client.user("ann", Some("correct horse")).await;
        let shown = page(&client, &app, CALLBACK, &challenge(VERIFIER)).await;
        assert!(shown.content_type.starts_with("text/html"));
        assert!(shown.text.contains("Test client") && shown.text.contains("<code>write</code>"));
        assert!(!shown.text.contains("<script"));
        // The flow, then the same code again.
        let first = code(&client, &app).await;
        let token = exchange(&client, &app, &first, CALLBACK, VERIFIER).await;
        assert_eq!(token.status, StatusCode::OK, "{kind:?}: {}", token.text);
        assert_eq!(token.json()["scope"], "read write");
        let access = token.json()["access_token"].as_str().unwrap().to_owned();
        assert_eq!(
            token.json()["refresh_token"].as_str().map(str::len),
            Some(64),
            "the code grant issues a refresh token: {}",
            token.text
        );
        let me = client
            .get("/api/v1/accounts/verify_credentials", Some(&access))
            .await;
        assert_eq!(me.json()["id"], "ann");
        let reused = exchange(&client, &app, &first, CALLBACK, VERIFIER).await;
        assert_eq!(reused.status, StatusCode::BAD_REQUEST);
        assert_eq!(reused.json()["error"], "invalid_grant");
        // A wrong verifier, and the code is spent by the attempt.
        let second = code(&client, &app).await;
        let wrong = exchange(
            &client,
            &app,
            &second,
            CALLBACK,
            &VERIFIER.replace('a', "b"),
        )
        .await;
        assert_eq!(wrong.json()["error"], "invalid_grant", "{}", wrong.text);
        assert_eq!(
            exchange(&client, &app, &second, CALLBACK, VERIFIER)
                .await
                .status,
            StatusCode::BAD_REQUEST
        );
        // A redirect URI other than the request's.
        let third = code(&client, &app).await;
        let elsewhere =
            exchange(&client, &app, &third, "urn:ietf:wg:oauth:2.0:oob", VERIFIER).await;
        assert_eq!(
            elsewhere.json()["error"],
            "invalid_grant",
            "{}",
            elsewhere.text
        );
        // Another app's code.
        let other = client.app(CALLBACK, "read write").await;
        let fourth = code(&client, &app).await;
        assert_eq!(
            exchange(&client, &other, &fourth, CALLBACK, VERIFIER)
                .await
                .json()["error"],
            "invalid_grant"
        );
        // Expired: ten minutes later by the server's clock.
        let fifth = code(&client, &app).await;
        clock.advance(10 * 60 * 1000);
        let expired = exchange(&client, &app, &fifth, CALLBACK, VERIFIER).await;
        assert_eq!(expired.json()["error"], "invalid_grant", "{}", expired.text);
        assert!(expired.text.contains("expired"), "{}", expired.text);
        server.stop().await;
    }
}

#[tokio::test]
async fn the_authorize_page_refuses_forged_forms_and_foreign_redirects() {
    let shown_code = regex::Regex::new(r#"<code id="code">([^<]+)</code>"#).unwrap();
    for (kind, server) in servers("authorize_page", |_| {}).await {
        let client = Client::of(&server);
        let app = client
            .app(
                &format!("{CALLBACK} urn:ietf:wg:oauth:2.0:oob"),
                "read write",
            )
            .await;
        client.user("ann", Some("correct horse")).await;
        // A redirect URI the app did not register: a page, no redirect.
        for uri in [
            "https://evil.example/cb",
            "https://app.example/cb/..",
            "https://app.example/cb?x=1",
        ] {
            let foreign = page(&client, &app, uri, &challenge(VERIFIER)).await;
            assert_eq!(foreign.status, StatusCode::BAD_REQUEST, "{kind:?} {uri}");
            assert!(foreign.location.is_none());
        }
        let shown = page(&client, &app, CALLBACK, &challenge(VERIFIER)).await;
        let token = csrf(&shown);
        // No CSRF token, a made-up one, and the real one on a form sent elsewhere.
        for forged in ["", "AAAA", token.as_str()] {
            let target = if forged == token {
                "urn:ietf:wg:oauth:2.0:oob"
            } else {
                CALLBACK
            };
            let answer = submit(
                &client,
                &app,
                target,
                forged,
                "ann",
                "correct horse",
                "approve",
            )
            .await;
            assert_eq!(
                answer.status,
                StatusCode::FORBIDDEN,
                "{kind:?} {forged:?}: {}",
                answer.text
            );
            assert!(answer.location.is_none());
        }
        // A POST to an unregistered redirect URI is refused before anything else.
        let evil = submit(
            &client,
            &app,
            "https://evil.example/cb",
            &token,
            "ann",
            "correct horse",
            "approve",
        )
        .await;
        assert_eq!(evil.status, StatusCode::BAD_REQUEST);
        assert!(evil.location.is_none());
        // Wrong credentials: the form again, with a fresh token.
        let wrong = submit(
            &client,
            &app,
            CALLBACK,
            &token,
            "ann",
            "wrong password",
            "approve",
        )
        .await;
        assert_eq!(wrong.status, StatusCode::UNAUTHORIZED);
        assert!(wrong.text.contains("invalid user or password"));
        // Deny: back to the app with access_denied and the state.
        let denied = submit(&client, &app, CALLBACK, &csrf(&wrong), "", "", "deny").await;
        assert_eq!(denied.status, StatusCode::FOUND);
        let location = denied.location.unwrap();
        assert_eq!(
            query_param(&location, "error").as_deref(),
            Some("access_denied")
        );
        assert_eq!(query_param(&location, "state").as_deref(), Some("s t&ate"));
        assert!(query_param(&location, "code").is_none());
        // Out of band: the code on a page, and it works.
        let oob_page = page(
            &client,
            &app,
            "urn:ietf:wg:oauth:2.0:oob",
            &challenge(VERIFIER),
        )
        .await;
        let oob = submit(
            &client,
            &app,
            "urn:ietf:wg:oauth:2.0:oob",
            &csrf(&oob_page),
            "ann",
            "correct horse",
            "approve",
        )
        .await;
        assert_eq!(oob.status, StatusCode::OK, "{}", oob.text);
        let code = shown_code.captures(&oob.text).unwrap()[1].to_owned();
        let token = exchange(&client, &app, &code, "urn:ietf:wg:oauth:2.0:oob", VERIFIER).await;
        assert_eq!(token.status, StatusCode::OK, "{}", token.text);
        server.stop().await;
    }
}

#[tokio::test]
async fn the_authorize_page_counts_failed_sign_ins() {
    for kind in kinds("authorize_limits") {
        let mut test = fresh_config(kind);
        test.config.mastodon.signin_failures_per_account = 2;
        let server = TestServer::start(test).await;
        let client = Client::of(&server);
        let app = client.app(CALLBACK, "read write").await;
        client.user("ann", Some("correct horse")).await;
        let mut shown = page(&client, &app, CALLBACK, &challenge(VERIFIER)).await;
        for _ in 0..2 {
            shown = submit(
                &client,
                &app,
                CALLBACK,
                &csrf(&shown),
                "ann",
                "wrong password",
                "approve",
            )
            .await;
            assert_eq!(shown.status, StatusCode::UNAUTHORIZED);
        }
        let limited = submit(
            &client,
            &app,
            CALLBACK,
            &csrf(&shown),
            "ann",
            "correct horse",
            "approve",
        )
        .await;
        assert_eq!(
            limited.status,
            StatusCode::TOO_MANY_REQUESTS,
            "{kind:?}: {}",
            limited.text
        );
        assert!(limited.location.is_none());
        server.stop().await;
    }
}
