//! The activity log over HTTP: pages, bad input, and concurrent posts by one author.

use reqwest::StatusCode;
use serde_json::Value;

use crate::common::{TestServer, fresh_config, kinds};

#[tokio::test]
async fn activity_over_http() {
    for kind in kinds("activity_over_http") {
        let mut config = fresh_config(kind);
        config.config.activity.primary_limit = 3;
        config.config.activity.page_size = 2;
        let server = TestServer::start(config).await;
        let api = server.api();
        for id in ["ann", "ben"] {
            api.user(id).await;
        }
        let post_id = api.say("ben", "like me").await;
        let like = format!("/v1/users/ann/likes/{post_id}");
        assert_eq!(
            api.put("/v1/users/ann/following/ben").await.0,
            StatusCode::NO_CONTENT
        );
        assert_eq!(api.put(&like).await.0, StatusCode::NO_CONTENT);
        assert_eq!(api.put(&like).await.0, StatusCode::NO_CONTENT, "idempotent");
        for i in 0..3 {
            api.say("ann", &format!("p{i}")).await;
        }
        // Activities are recorded from the change feed: let the workers catch up.
        server.settle().await;
        let (_, log) = api.get("/v1/users/ann/activity?limit=10").await;
        assert_eq!(
            log["total"], 5,
            "a repeated like is not recorded twice: {log}"
        );
        assert_eq!(types(&log), ["post", "post", "post", "like", "follow"]);
        assert_eq!(log["items"][3]["ref"], post_id);
        assert_eq!(log["items"][4]["ref"], "ben");
        assert!(log["items"][0]["ts"].as_str().unwrap().ends_with('Z'));
        let (_, deep) = api.get("/v1/users/ann/activity?skip=3&limit=2").await;
        assert_eq!(types(&deep), ["like", "follow"]);
        assert_eq!(api.delete(&like).await.0, StatusCode::NO_CONTENT);
        assert_eq!(
            api.delete(&like).await.0,
            StatusCode::NO_CONTENT,
            "idempotent"
        );

        // `Api` also checks that each of these is a complete problem+json body.
        for (path, code) in [
            // Acting for a user nobody holds a token of: unauthenticated.
            ("/v1/users/ghost/activity", 401),
            ("/v1/users/ann/activity?skip=-1", 422),
            ("/v1/users/ann/activity?skip=x", 422),
            ("/v1/users/ann/activity?skip=10000001", 422),
            ("/v1/users/ann/activity?limit=0", 422),
            ("/v1/users/ann/activity?limit=101", 422),
        ] {
            assert_eq!(api.get(path).await.0.as_u16(), code, "{path}");
        }
        let (_, beyond) = api.get("/v1/users/ann/activity?skip=50").await;
        assert_eq!(
            (
                beyond["items"].as_array().unwrap().len(),
                beyond["total"].as_u64()
            ),
            (0, Some(5))
        );
        for (method, path, expected) in [
            (
                reqwest::Method::PUT,
                "/v1/users/ghost/likes/000000000000000000000000".to_owned(),
                StatusCode::UNAUTHORIZED,
            ),
            (
                reqwest::Method::PUT,
                "/v1/users/ann/likes/000000000000000000000000".to_owned(),
                StatusCode::NOT_FOUND,
            ),
            (
                reqwest::Method::PUT,
                "/v1/users/ann/likes/nope".to_owned(),
                StatusCode::NOT_FOUND,
            ),
            (
                reqwest::Method::DELETE,
                format!("/v1/users/ghost/likes/{post_id}"),
                StatusCode::UNAUTHORIZED,
            ),
        ] {
            let (status, _) = api.send(method.clone(), &path, None).await;
            assert_eq!(status, expected, "{method} {path}");
        }
        server.stop().await;
    }
}

/// The `type` of each item of an activity page, in order.
fn types(page: &Value) -> Vec<&str> {
    page["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["type"].as_str().unwrap())
        .collect()
}

/// Sixteen concurrent posts by one author: the log, written by the worker in feed
/// order, is newest first by time and holds each post once.
#[tokio::test]
async fn concurrent_posts_give_a_newest_first_log_with_each_post_once() {
    for kind in kinds("concurrent_posts_give_a_newest_first_log_with_each_post_once") {
        let server = TestServer::start(fresh_config(kind)).await;
        let api = server.api();
        api.user("busy").await;
        let mut tasks = Vec::new();
        for i in 0..16 {
            let api = server.api();
            tasks.push(tokio::spawn(async move {
                api.say("busy", &format!("burst {i}")).await
            }));
        }
        let mut posted = Vec::new();
        for task in tasks {
            posted.push(task.await.unwrap());
        }
        server.settle().await;
        let (_, log) = api.get("/v1/users/busy/activity?limit=100").await;
        let items = log["items"].as_array().unwrap();
        let mut refs: Vec<&str> = items.iter().map(|i| i["ref"].as_str().unwrap()).collect();
        let times: Vec<&str> = items.iter().map(|i| i["ts"].as_str().unwrap()).collect();
        assert!(
            times.windows(2).all(|w| w[0] >= w[1]),
            "{kind:?}: newest first by time: {times:?}"
        );
        refs.sort_unstable();
        posted.sort_unstable();
        assert_eq!(refs, posted, "{kind:?}: each post once");
        server.stop().await;
    }
}
