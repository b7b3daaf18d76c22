//! The endpoints that answer empty, the `X-RateLimit-*` headers and multipart forms.

use std::sync::Arc;

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use socialite::workers::ManualClock;

use super::common::{Kind, TestServer, fresh_config};
use super::{Client, servers};

/// Web clients read these at start; each answers empty, as JSON, under its scope (markers
/// until one is written).
#[tokio::test]
async fn the_empty_endpoints_answer_empty_under_their_scopes() {
    for (kind, server) in servers("empty endpoints", |_| {}).await {
        let client = Client::of(&server);
        let token = client.user("ann", Some("correct horse")).await;
        for path in [
            "/api/v1/lists",
            "/api/v1/followed_tags",
            "/api/v2/filters",
            "/api/v1/filters",
            "/api/v1/announcements",
        ] {
            let body = client.get(path, Some(&token)).await.expect(StatusCode::OK);
            assert_eq!(body, json!([]), "{kind:?} {path}");
            let refused = client
                .get(path, None)
                .await
                .expect(StatusCode::UNAUTHORIZED);
            assert!(refused["error"].is_string(), "{kind:?} {path}");
        }
        let emojis = client.get("/api/v1/custom_emojis", None).await;
        assert_eq!(emojis.expect(StatusCode::OK), json!([]));
        let markers = client.get("/api/v1/markers?timeline[]=home", Some(&token));
        assert_eq!(markers.await.expect(StatusCode::OK), json!({}));
        let saved = client
            .post(
                "/api/v1/markers",
                Some(&token),
                &[("home[last_read_id]", "1")],
            )
            .await;
        // Markers are stored now (tests/mastodon/markers.rs): the write answers its marker.
        let saved = saved.expect(StatusCode::OK);
        assert_eq!(saved["home"]["last_read_id"], "1", "{kind:?}");
        assert_eq!(saved["home"]["version"], 1, "{kind:?}");
        let preferences = client.get("/api/v1/preferences", Some(&token)).await;
        let preferences = preferences.expect(StatusCode::OK);
        assert_eq!(preferences["posting:default:visibility"], "public");
        assert_eq!(preferences["posting:default:sensitive"], false);
        assert_eq!(preferences["reading:expand:media"], "default");
        assert!(preferences["posting:default:language"].is_null());

        // A token without the scope is refused where Mastodon refuses it.
        let narrow = client
            .scoped_token("ann", "correct horse", "read:statuses")
            .await;
        for path in ["/api/v1/lists", "/api/v2/filters", "/api/v1/preferences"] {
            let refused = client.get(path, Some(&narrow)).await;
            let refused = refused.expect(StatusCode::FORBIDDEN);
            assert!(refused["error"].as_str().unwrap().contains("scopes"));
        }
        assert_eq!(
            client
                .get("/api/v1/markers", Some(&narrow))
                .await
                .expect(StatusCode::OK),
            json!({})
        );
        let write = client.post("/api/v1/markers", Some(&narrow), &[]).await;
        write.expect(StatusCode::FORBIDDEN);
        server.stop().await;
    }
}

/// `X-RateLimit-Limit`, `-Remaining` and `-Reset` come together on every Mastodon
/// answer, from the tightest bucket the request drew from, and on its 429 too.
#[tokio::test]
async fn rate_limit_headers_come_all_together_from_the_tightest_bucket() {
    let mut test = fresh_config(Kind::Embedded);
    test.config.rate.reads_per_min = 3;
    test.config.rate.ip_per_min = 1000;
    // 2026-11-27T12:00:00Z.
    let start = 1_795_780_800_000;
    let clock = Arc::new(ManualClock::at(start));
    let server = TestServer::start_with_clock(test, clock.clone()).await;
    let client = Client::of(&server);
    let token = client.user("ann", None).await;

    // No user: the address's bucket.
    let instance = client.get("/api/v1/instance", None).await;
    instance.expect(StatusCode::OK);
    assert_eq!(instance.header("x-ratelimit-limit"), Some("1000"));
    assert_eq!(instance.header("x-ratelimit-remaining"), Some("998"));
    assert_eq!(
        instance.header("x-ratelimit-reset"),
        Some("2026-11-27T12:00:00.120Z")
    );

    // A user's reads: their bucket of 3 is the tighter; one comes back every 20 s.
    for (remaining, reset) in [
        ("2", "2026-11-27T12:00:20.000Z"),
        ("1", "2026-11-27T12:00:40.000Z"),
        ("0", "2026-11-27T12:01:00.000Z"),
    ] {
        let answer = client
            .get("/api/v1/accounts/verify_credentials", Some(&token))
            .await;
        answer.expect(StatusCode::OK);
        assert_eq!(answer.header("x-ratelimit-limit"), Some("3"));
        assert_eq!(answer.header("x-ratelimit-remaining"), Some(remaining));
        assert_eq!(answer.header("x-ratelimit-reset"), Some(reset));
    }
    let refused = client
        .get("/api/v1/accounts/verify_credentials", Some(&token))
        .await;
    let body = refused.expect(StatusCode::TOO_MANY_REQUESTS);
    assert!(body["error"].as_str().unwrap().contains("retry"), "{body}");
    assert_eq!(refused.header("x-ratelimit-limit"), Some("3"));
    assert_eq!(refused.header("x-ratelimit-remaining"), Some("0"));
    assert_eq!(
        refused.header("x-ratelimit-reset"),
        Some("2026-11-27T12:00:20.000Z"),
        "a refusal's reset is when the bucket takes one again"
    );
    clock.advance(20_000);
    let again = client
        .get("/api/v1/accounts/verify_credentials", Some(&token))
        .await;
    again.expect(StatusCode::OK);
    assert_eq!(again.header("x-ratelimit-remaining"), Some("0"));

    // /v1 keeps its own headers only.
    let meta = client.get("/v1/meta", None).await;
    assert_eq!(meta.status, StatusCode::OK);
    assert!(meta.header("x-ratelimit-remaining").is_none());
    server.stop().await;
}

/// masto.js registers and updates credentials with `multipart/form-data`; every form
/// endpoint takes it, and a file part is refused by name, not dropped.
#[tokio::test]
async fn multipart_forms_register_accounts_and_refuse_files() {
    for (kind, server) in servers("multipart", |_| {}).await {
        let client = Client::of(&server);
        let app = client
            .multipart(
                Method::POST,
                "/api/v1/apps",
                None,
                &[
                    ("client_name", "masto.js"),
                    ("redirect_uris", "urn:ietf:wg:oauth:2.0:oob"),
                    ("scopes", "read write"),
                ],
                None,
            )
            .await
            .expect(StatusCode::OK);
        let grant = client
            .multipart(
                Method::POST,
                "/oauth/token",
                None,
                &[
                    ("grant_type", "client_credentials"),
                    ("client_id", app["client_id"].as_str().unwrap()),
                    ("client_secret", app["client_secret"].as_str().unwrap()),
                    ("scope", "read write"),
                ],
                None,
            )
            .await
            .expect(StatusCode::OK);
        let app_token = grant["access_token"].as_str().unwrap();
        let fields = [
            ("username", "newcomer"),
            ("email", "n@example.org"),
            ("password", "a long password"),
            ("agreement", "true"),
            ("locale", "en"),
        ];
        let refused = client
            .multipart(
                Method::POST,
                "/api/v1/accounts",
                Some(app_token),
                &fields,
                Some("avatar"),
            )
            .await
            .expect(StatusCode::UNPROCESSABLE_ENTITY);
        assert!(
            refused["error"].as_str().unwrap().contains("avatar"),
            "{kind:?}"
        );
        let token = client
            .multipart(
                Method::POST,
                "/api/v1/accounts",
                Some(app_token),
                &fields,
                None,
            )
            .await
            .expect(StatusCode::OK);
        assert_eq!(token["token_type"], "Bearer", "{kind:?}");
        let access = token["access_token"].as_str().unwrap();
        let me = client
            .get("/api/v1/accounts/verify_credentials", Some(access))
            .await
            .expect(StatusCode::OK);
        assert_eq!(me["username"], "newcomer", "{kind:?}");

        // A body that is no multipart at all under that type is a 400, as JSON.
        let broken = client
            .http
            .post(format!("{}/api/v1/accounts", client.base))
            .bearer_auth(app_token)
            .header("content-type", "multipart/form-data; boundary=x")
            .body("not multipart");
        let broken = client.send(broken, None).await;
        assert!(broken.status.is_client_error(), "{}", broken.text);
        assert_eq!(broken.header("content-type"), Some("application/json"));
        server.stop().await;
    }
}

/// Trends come from the real hashtag counts, with a week of daily history, newest day
/// first; search finds accounts by id prefix and an exact hashtag, never statuses.
#[tokio::test]
async fn trends_and_search_read_the_real_counts() {
    for kind in super::common::event_log_kinds("trends").await {
        let server = TestServer::start(fresh_config(kind)).await;
        let client = Client::of(&server);
        let ann = client.user("ann", None).await;
        client.user("bob", None).await;
        for text in ["learning #Rust", "more #rust and #go", "#go"] {
            let fields = [("status", text)];
            let posted = client.post("/api/v1/statuses", Some(&ann), &fields).await;
            posted.expect(StatusCode::OK);
        }
        client
            .post("/api/v1/statuses", Some(&ann), &[("status", "#rust")])
            .await;
        server.settle().await;

        let trends = client.get("/api/v1/trends/tags?limit=5", None).await;
        let trends = trends.expect(StatusCode::OK);
        let names: Vec<&str> = trends
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["rust", "go"], "{kind:?}: most posts first");
        let history = trends[0]["history"].as_array().unwrap();
        assert_eq!(history.len(), 7);
        assert_eq!(history[0]["uses"], "3", "{kind:?}: today first");
        let today: i64 = history[0]["day"].as_str().unwrap().parse().unwrap();
        let yesterday: i64 = history[1]["day"].as_str().unwrap().parse().unwrap();
        assert_eq!(today - yesterday, 86_400);
        assert!(trends[0]["url"].as_str().unwrap().ends_with("/tags/rust"));
        let alias = client
            .get("/api/v1/trends", None)
            .await
            .expect(StatusCode::OK);
        assert_eq!(alias, client.get("/api/v1/trends/tags", None).await.json());
        let bad = client.get("/api/v1/trends/tags?limit=none", None).await;
        bad.expect(StatusCode::UNPROCESSABLE_ENTITY);

        let found = client
            .get("/api/v2/search?q=bob&resolve=true", Some(&ann))
            .await;
        let found = found.expect(StatusCode::OK);
        assert_eq!(found["accounts"][0]["id"], "bob");
        assert_eq!(found["hashtags"], json!([]));
        assert_eq!(found["statuses"], json!([]));
        let tag = client.get("/api/v2/search?q=%23Rust&type=hashtags", Some(&ann));
        let tag = tag.await.expect(StatusCode::OK);
        assert_eq!(tag["hashtags"][0]["name"], "rust", "{kind:?}");
        assert_eq!(tag["hashtags"][0]["history"][0]["uses"], "3");
        assert_eq!(tag["accounts"], json!([]));
        // Accounts by id prefix, by id (an exact match first), at most `limit`.
        client.user("bobby", None).await;
        client.user("bo_", None).await;
        let prefix = client.get("/api/v2/search?q=%40bo", Some(&ann)).await;
        let ids = |v: &Value| -> Vec<String> {
            v["accounts"]
                .as_array()
                .unwrap()
                .iter()
                .map(|a| a["id"].as_str().unwrap().to_owned())
                .collect()
        };
        assert_eq!(
            ids(&prefix.expect(StatusCode::OK)),
            ["bo_", "bob", "bobby"],
            "{kind:?}"
        );
        let one = client.get("/api/v2/search?q=bob&limit=1", Some(&ann)).await;
        assert_eq!(ids(&one.expect(StatusCode::OK)), ["bob"], "{kind:?}");
        let nothing = client.get("/api/v2/search?q=bz", Some(&ann)).await;
        assert_eq!(nothing.expect(StatusCode::OK)["accounts"], json!([]));
        let bad = client
            .get("/api/v2/search?q=bob&type=people", Some(&ann))
            .await;
        bad.expect(StatusCode::UNPROCESSABLE_ENTITY);
        // Without a token, as on Mastodon: found, but not with `resolve` or `offset`.
        let anonymous = client.get("/api/v2/search?q=bobb", None).await;
        assert_eq!(
            ids(&anonymous.expect(StatusCode::OK)),
            ["bobby"],
            "{kind:?}"
        );
        for query in ["q=bob&resolve=true", "q=bob&offset=0"] {
            client
                .get(&format!("/api/v2/search?{query}"), None)
                .await
                .expect(StatusCode::UNAUTHORIZED);
        }
        server.stop().await;
    }
}
