//! Black-box HTTP tests against a real server on port 0, on every backend under test.

mod common;

use common::{Kind, TestServer, fresh_config, kinds};
use reqwest::StatusCode;
use serde_json::{Value, json};
use socialite::domain::FeedStrategy;

async fn server(kind: Kind) -> TestServer {
    TestServer::start(fresh_config(kind)).await
}

async fn server_with(kind: Kind, strategy: FeedStrategy) -> TestServer {
    let mut config = fresh_config(kind);
    config.config.feed.strategy = strategy;
    TestServer::start(config).await
}

#[tokio::test]
async fn users_are_created_read_and_renamed() {
    for kind in kinds("users_are_created_read_and_renamed") {
        let server = server(kind).await;
        let api = server.api();
        let (status, body) = api.post("/v1/users", json!({"id": "alice"})).await;
        assert_eq!(status, StatusCode::CREATED);
        assert_eq!(body["display_name"], "alice", "defaults to the id");
        assert_eq!(body["followers_count"], 0);
        assert!(body["created_at"].as_str().unwrap().ends_with('Z'));

        let (status, body) = api
            .post("/v1/users", json!({"id": "bob", "display_name": "Bob B."}))
            .await;
        assert_eq!(
            (status, body["display_name"].as_str()),
            (StatusCode::CREATED, Some("Bob B."))
        );
        assert_eq!(
            api.post("/v1/users", json!({"id": "alice"})).await.0,
            StatusCode::CONFLICT
        );

        for bad in [
            json!({"id": ""}),
            json!({"id": "has space"}),
            json!({"id": "x".repeat(33)}),
            json!({"id": "ok", "display_name": ""}),
            json!({"id": "ok", "display_name": "y".repeat(65)}),
            json!({"id": 42}),
            json!({"display_name": "no id"}),
            json!({"id": "ok", "extra": 1}),
        ] {
            let (status, body) = api.post("/v1/users", bad.clone()).await;
            assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{bad} -> {body}");
        }
        assert_eq!(
            api.post("/v1/users", json!({"id": "x".repeat(32)})).await.0,
            StatusCode::CREATED
        );

        let (status, body) = api.get("/v1/users/alice").await;
        assert_eq!(
            (status, body["id"].as_str()),
            (StatusCode::OK, Some("alice"))
        );
        let (status, body) = api.get("/v1/users/nobody").await;
        assert_eq!(status, StatusCode::NOT_FOUND);
        assert!(body["detail"].as_str().unwrap().contains("nobody"));
        assert_eq!(api.get("/v1/users/bad%20id").await.0, StatusCode::NOT_FOUND);

        let (status, body) = api
            .patch("/v1/users/alice", json!({"display_name": "Alice A."}))
            .await;
        assert_eq!(
            (status, body["display_name"].as_str()),
            (StatusCode::OK, Some("Alice A."))
        );
        assert_eq!(
            api.get("/v1/users/alice").await.1["display_name"],
            "Alice A."
        );
        // Acting for a user whose token nobody holds: unauthenticated (401), not 404.
        assert_eq!(
            api.patch("/v1/users/nobody", json!({"display_name": "N"}))
                .await
                .0,
            StatusCode::UNAUTHORIZED
        );
        assert_eq!(
            api.patch("/v1/users/alice", json!({"display_name": ""}))
                .await
                .0,
            StatusCode::UNPROCESSABLE_ENTITY
        );
        assert_eq!(
            api.patch("/v1/users/alice", json!({})).await.0,
            StatusCode::UNPROCESSABLE_ENTITY
        );
        server.stop().await;
    }
}

#[tokio::test]
async fn malformed_requests_get_clear_client_errors() {
    for kind in kinds("malformed_requests_get_clear_client_errors") {
        let server = server(kind).await;
        let api = server.api();
        let client = &server.client;

        let response = client
            .post(server.url("/v1/users"))
            .header("content-type", "application/json")
            .body("{\"id\":")
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), StatusCode::BAD_REQUEST);
        assert_eq!(
            response.headers()["content-type"],
            "application/problem+json"
        );

        let response = client
            .post(server.url("/v1/users"))
            .body("{\"id\":\"a\"}")
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), StatusCode::UNSUPPORTED_MEDIA_TYPE);

        let huge = json!({"id": "big", "display_name": "x".repeat(100_000)});
        let (status, _) = api.post("/v1/users", huge).await;
        assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE);

        let (status, body) = api.get("/v1/nothing/here").await;
        assert_eq!(
            (status, body["type"].as_str()),
            (StatusCode::NOT_FOUND, Some("/problems/not-found"))
        );
        let (status, _) = api.send(reqwest::Method::DELETE, "/v1/users", None).await;
        assert_eq!(status, StatusCode::METHOD_NOT_ALLOWED);

        // The request id is echoed for correlation with the logs.
        let response = client.get(server.url("/healthz")).send().await.unwrap();
        assert!(response.headers().contains_key("x-request-id"));
        server.stop().await;
    }
}

#[tokio::test]
async fn the_follow_graph_is_idempotent_and_paginated() {
    for kind in kinds("the_follow_graph_is_idempotent_and_paginated") {
        let server = server(kind).await;
        let api = server.api();
        for id in ["hub", "f1", "f2", "f3", "f4", "f5"] {
            api.user(id).await;
        }
        for f in ["f3", "f1", "f5", "f2", "f4"] {
            assert_eq!(
                api.put(&format!("/v1/users/{f}/following/hub")).await.0,
                StatusCode::NO_CONTENT
            );
            assert_eq!(
                api.put(&format!("/v1/users/hub/following/{f}")).await.0,
                StatusCode::NO_CONTENT
            );
        }
        assert_eq!(
            api.put("/v1/users/f1/following/hub").await.0,
            StatusCode::NO_CONTENT,
            "idempotent"
        );
        // On MongoDB a recount racing a request's `$inc` can be one off until the
        // counters worker applies the later change (see the README): count once it has.
        server.settle().await;
        assert_eq!(api.get("/v1/users/hub").await.1["followers_count"], 5);
        assert_eq!(api.get("/v1/users/hub").await.1["following_count"], 5);

        assert_eq!(
            api.put("/v1/users/hub/following/hub").await.0,
            StatusCode::UNPROCESSABLE_ENTITY
        );
        assert_eq!(
            api.put("/v1/users/hub/following/ghost").await.0,
            StatusCode::NOT_FOUND
        );
        assert_eq!(
            api.put("/v1/users/ghost/following/hub").await.0,
            StatusCode::UNAUTHORIZED
        );
        assert_eq!(
            api.delete("/v1/users/ghost/following/hub").await.0,
            StatusCode::UNAUTHORIZED
        );

        for which in ["followers", "following"] {
            let mut seen = Vec::new();
            let mut cursor: Option<String> = None;
            loop {
                let path = match &cursor {
                    Some(c) => format!("/v1/users/hub/{which}?limit=2&cursor={c}"),
                    None => format!("/v1/users/hub/{which}?limit=2"),
                };
                let (status, body) = api.get(&path).await;
                assert_eq!(status, StatusCode::OK);
                for item in body["items"].as_array().unwrap() {
                    seen.push(item["id"].as_str().unwrap().to_owned());
                }
                match body["next_cursor"].as_str() {
                    Some(c) => cursor = Some(c.to_owned()),
                    None => break,
                }
            }
            assert_eq!(seen, ["f1", "f2", "f3", "f4", "f5"], "{which}");
        }
        let (_, body) = api.get("/v1/users/hub/followers?limit=5").await;
        assert!(
            body["next_cursor"].is_null(),
            "no cursor when the page ends the list"
        );
        assert_eq!(
            api.get("/v1/users/hub/followers?limit=0").await.0,
            StatusCode::UNPROCESSABLE_ENTITY
        );
        assert_eq!(
            api.get("/v1/users/hub/followers?limit=101").await.0,
            StatusCode::UNPROCESSABLE_ENTITY
        );
        assert_eq!(
            api.get("/v1/users/hub/followers?limit=ten").await.0,
            StatusCode::UNPROCESSABLE_ENTITY
        );
        assert_eq!(
            api.get("/v1/users/hub/followers?cursor=bad%20cursor")
                .await
                .0,
            StatusCode::UNPROCESSABLE_ENTITY
        );
        assert_eq!(
            api.get("/v1/users/ghost/following").await.0,
            StatusCode::NOT_FOUND
        );

        assert_eq!(
            api.delete("/v1/users/f1/following/hub").await.0,
            StatusCode::NO_CONTENT
        );
        assert_eq!(
            api.delete("/v1/users/f1/following/hub").await.0,
            StatusCode::NO_CONTENT,
            "idempotent"
        );
        assert_eq!(api.get("/v1/users/hub").await.1["followers_count"], 4);
        assert_eq!(api.get("/v1/users/f1").await.1["following_count"], 0);
        server.stop().await;
    }
}

#[tokio::test]
async fn posts_are_created_listed_and_deleted() {
    for kind in kinds("posts_are_created_listed_and_deleted") {
        let server = server(kind).await;
        let api = server.api();
        api.user("writer").await;
        let mut ids = Vec::new();
        for i in 0..5 {
            ids.push(api.say("writer", &format!("post {i}")).await);
        }
        let mut sorted = ids.clone();
        sorted.sort();
        assert_eq!(ids, sorted, "ids increase in creation order");
        assert!(
            ids.iter()
                .all(|id| id.len() == 24 && id.bytes().all(|b| b.is_ascii_hexdigit()))
        );

        let (status, body) = api.get(&format!("/v1/posts/{}", ids[0])).await;
        assert_eq!(
            (status, body["text"].as_str(), body["author"].as_str()),
            (StatusCode::OK, Some("post 0"), Some("writer"))
        );
        assert_eq!(
            api.get("/v1/posts/000000000000000000000000").await.0,
            StatusCode::NOT_FOUND
        );
        assert_eq!(
            api.get("/v1/posts/not-an-id").await.0,
            StatusCode::NOT_FOUND
        );

        assert_eq!(
            api.post("/v1/users/writer/posts", json!({"text": ""}))
                .await
                .0,
            StatusCode::UNPROCESSABLE_ENTITY
        );
        assert_eq!(
            api.post("/v1/users/writer/posts", json!({"text": "z".repeat(501)}))
                .await
                .0,
            StatusCode::UNPROCESSABLE_ENTITY
        );
        assert_eq!(
            api.post("/v1/users/writer/posts", json!({"text": 5}))
                .await
                .0,
            StatusCode::UNPROCESSABLE_ENTITY
        );
        assert_eq!(
            api.post("/v1/users/writer/posts", json!({"text": "é".repeat(500)}))
                .await
                .0,
            StatusCode::CREATED
        );
        assert_eq!(
            api.post("/v1/users/ghost/posts", json!({"text": "boo"}))
                .await
                .0,
            StatusCode::UNAUTHORIZED
        );

        let (status, page) = api.get("/v1/users/writer/posts?limit=2").await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(page["items"].as_array().unwrap().len(), 2);
        let cursor = page["next_cursor"].as_str().unwrap();
        let (_, page2) = api
            .get(&format!("/v1/users/writer/posts?limit=10&before={cursor}"))
            .await;
        assert_eq!(page2["items"].as_array().unwrap().len(), 4);
        assert!(page2["next_cursor"].is_null());
        assert_eq!(
            api.get("/v1/users/writer/posts?before=nope").await.0,
            StatusCode::UNPROCESSABLE_ENTITY
        );
        assert_eq!(
            api.get("/v1/users/ghost/posts").await.0,
            StatusCode::NOT_FOUND
        );

        assert_eq!(
            api.delete(&format!("/v1/posts/{}", ids[1])).await.0,
            StatusCode::NO_CONTENT
        );
        assert_eq!(
            api.delete(&format!("/v1/posts/{}", ids[1])).await.0,
            StatusCode::NOT_FOUND
        );
        assert_eq!(
            api.get(&format!("/v1/posts/{}", ids[1])).await.0,
            StatusCode::NOT_FOUND
        );
        let (_, all) = api.get("/v1/users/writer/posts?limit=100").await;
        assert!(
            all["items"]
                .as_array()
                .unwrap()
                .iter()
                .all(|p| p["id"] != ids[1].as_str())
        );
        // Exact once the workers caught up: on MongoDB the counters worker's recount can
        // briefly race with the delete's own decrement (see the README).
        server.settle().await;
        assert_eq!(api.get("/v1/users/writer").await.1["posts_count"], 5);
        server.stop().await;
    }
}

#[tokio::test]
async fn timelines_over_http_for_every_strategy() {
    for kind in kinds("timelines_over_http_for_every_strategy") {
        for strategy in FeedStrategy::ALL {
            let server = server_with(kind, strategy).await;
            let api = server.api();
            for id in ["reader", "star", "other"] {
                api.user(id).await;
            }
            api.patch("/v1/users/star", json!({"display_name": "The Star"}))
                .await;
            let early = api.say("star", "before the follow").await;
            api.say("other", "not followed").await;
            assert_eq!(
                api.put("/v1/users/reader/following/star").await.0,
                StatusCode::NO_CONTENT
            );
            let mut expected = vec![early.clone()];
            for i in 0..24 {
                expected.push(
                    api.say(if i % 3 == 0 { "reader" } else { "star" }, &format!("n{i}"))
                        .await,
                );
            }
            expected.reverse();

            let (status, page) = api.get("/v1/users/reader/timeline").await;
            assert_eq!(status, StatusCode::OK);
            let items = page["items"].as_array().unwrap();
            assert_eq!(items.len(), 20, "{strategy}: limit defaults to 20");
            let first = &items[0];
            assert_eq!(first["id"], expected[0].as_str());
            for key in ["id", "author", "author_display_name", "text", "created_at"] {
                assert!(first[key].is_string(), "{strategy}: {key} in {first}");
            }
            let star_item = items.iter().find(|i| i["author"] == "star").unwrap();
            assert_eq!(star_item["author_display_name"], "The Star");

            let mut got = Vec::new();
            let mut path = "/v1/users/reader/timeline?limit=7".to_owned();
            loop {
                let (_, page) = api.get(&path).await;
                got.extend(
                    page["items"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .map(|i| i["id"].as_str().unwrap().to_owned()),
                );
                match page["next_cursor"].as_str() {
                    Some(c) => path = format!("/v1/users/reader/timeline?limit=7&before={c}"),
                    None => break,
                }
            }
            assert_eq!(
                got, expected,
                "{strategy}: all pages, no gaps or duplicates"
            );

            for bad in [
                "limit=0",
                "limit=101",
                "limit=-1",
                "limit=x",
                "before=123",
                "before=zzzzzzzzzzzzzzzzzzzzzzzz",
            ] {
                let (status, body) = api.get(&format!("/v1/users/reader/timeline?{bad}")).await;
                assert_eq!(
                    status,
                    StatusCode::UNPROCESSABLE_ENTITY,
                    "{strategy} {bad}: {body}"
                );
            }
            assert_eq!(
                api.get("/v1/users/ghost/timeline").await.0,
                StatusCode::UNAUTHORIZED
            );

            assert_eq!(
                api.delete(&format!("/v1/posts/{}", expected[0])).await.0,
                StatusCode::NO_CONTENT
            );
            assert_eq!(
                api.delete("/v1/users/reader/following/star").await.0,
                StatusCode::NO_CONTENT
            );
            let (_, page) = api.get("/v1/users/reader/timeline?limit=100").await;
            let items = page["items"].as_array().unwrap();
            assert!(
                items.iter().all(|i| i["author"] == "reader"),
                "{strategy}: unfollowed author gone"
            );
            assert!(items.iter().all(|i| i["id"] != expected[0].as_str()));
            assert_eq!(items.len(), 8, "{strategy}");

            let (_, meta) = api.get("/v1/meta").await;
            assert_eq!(meta["feed_strategy"], strategy.as_str());
            server.stop().await;
        }
    }
}

#[tokio::test]
async fn operations_endpoints() {
    for kind in kinds("operations_endpoints") {
        let server = server(kind).await;
        let api = server.api();
        assert_eq!(
            api.get("/healthz").await,
            (StatusCode::OK, json!({"status": "ok"}))
        );
        assert_eq!(
            api.get("/readyz").await,
            (StatusCode::OK, json!({"status": "ok"}))
        );
        let (_, meta) = api.get("/v1/meta").await;
        assert_eq!(
            meta["storage"],
            if kind == Kind::Mongo {
                "mongodb"
            } else {
                "embedded"
            }
        );
        assert_eq!(meta["feed_strategy"], "cache");
        assert_eq!(meta["version"], env!("CARGO_PKG_VERSION"));

        api.user("m1").await;
        api.user("m2").await;
        api.put("/v1/users/m2/following/m1").await;
        api.get("/v1/users/m2/timeline").await;
        api.say("m1", "counted").await;
        let metrics = server
            .client
            .get(server.url("/metrics"))
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        for needle in [
            "http_requests_total{method=\"POST\",route=\"/v1/users\",status=\"201\"}",
            "http_request_duration_seconds_bucket{method=\"GET\",route=\"/v1/users/{id}/timeline\"",
            "socialite_fanout_posts_total{strategy=\"cache\"}",
            "socialite_fanout_timelines_total{strategy=\"cache\"}",
            "socialite_cache_builds_total",
        ] {
            assert!(metrics.contains(needle), "missing {needle} in\n{metrics}");
        }

        let served: Value = server
            .client
            .get(server.url("/openapi.json"))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let committed: Value =
            serde_json::from_str(&std::fs::read_to_string("openapi/openapi.json").unwrap())
                .unwrap();
        assert_eq!(
            served, committed,
            "openapi/openapi.json is stale: run `cargo run -- openapi > openapi/openapi.json`"
        );
        server.stop().await;
    }
}
