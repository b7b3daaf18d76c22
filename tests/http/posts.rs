//! Posts over HTTP (created, listed, deleted) and the timelines they reach, for every
//! feed strategy.

use reqwest::StatusCode;
use serde_json::json;
use socialite::domain::FeedStrategy;

use super::{server, server_with};
use crate::common::kinds;

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
