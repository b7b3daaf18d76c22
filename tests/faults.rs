//! Error paths driven by injected faults, over HTTP on every backend: a storage failure
//! answers 503 problem+json with `Retry-After` and an opaque body, never 500 and never
//! the cause; a failed retraction does not leave a deleted post readable.

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use common::faults::{FailingContent, FaultyTimelines, INJECTED};
use common::{fresh_config, kinds};
use reqwest::StatusCode;
use serde_json::json;
use socialite::app::{open_store, spawn_with_store};

#[tokio::test]
async fn storage_failures_answer_503_with_an_opaque_problem() {
    for kind in kinds("storage_failures_answer_503_with_an_opaque_problem") {
        let test = fresh_config(kind);
        let mut store = open_store(&test.config).await.unwrap();
        let content = Arc::new(FailingContent {
            inner: store.content.clone(),
            failing: AtomicBool::new(false),
        });
        store.content = content.clone();
        let server = spawn_with_store(&test.config, store).await.unwrap();
        let base = format!("http://{}", server.addr);
        let api = common::Api::new(reqwest::Client::new(), &base);
        api.user("ann").await;
        let post = api.say("ann", "before the fault").await;

        content.failing.store(true, Ordering::SeqCst);
        let client = reqwest::Client::new();
        let token = api.token("ann");
        let requests = [
            client.get(format!("{base}/v1/users/ann/posts")),
            client.get(format!("{base}/v1/posts/{post}")),
            client
                .post(format!("{base}/v1/users/ann/posts"))
                .bearer_auth(&token)
                .json(&json!({"text": "during"})),
            client
                .delete(format!("{base}/v1/posts/{post}"))
                .bearer_auth(&token),
            client
                .get(format!("{base}/v1/users/ann/timeline"))
                .bearer_auth(&token),
        ];
        for request in requests {
            let response = request.send().await.unwrap();
            let (status, headers) = (response.status(), response.headers().clone());
            let body = response.text().await.unwrap();
            assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{kind:?}: {body}");
            assert_eq!(headers["content-type"], "application/problem+json");
            assert_eq!(headers["retry-after"], "1");
            assert!(
                !body.contains(INJECTED),
                "{kind:?}: the cause leaked: {body}"
            );
            let problem: serde_json::Value = serde_json::from_str(&body).unwrap();
            assert_eq!(problem["status"], 503);
        }

        content.failing.store(false, Ordering::SeqCst);
        let (status, _) = api.get(&format!("/v1/posts/{post}")).await;
        assert_eq!(
            status,
            StatusCode::OK,
            "{kind:?}: the post survived the outage"
        );
        server.stop().await.unwrap();
    }
}

#[tokio::test]
async fn a_failed_retraction_answers_503_and_the_post_is_gone() {
    for kind in kinds("a_failed_retraction_answers_503_and_the_post_is_gone") {
        let test = fresh_config(kind);
        let mut store = open_store(&test.config).await.unwrap();
        let timelines = FaultyTimelines::new(store.timelines.clone());
        store.timelines = timelines.clone();
        let server = spawn_with_store(&test.config, store).await.unwrap();
        let api = common::Api::new(reqwest::Client::new(), format!("http://{}", server.addr));
        api.user("author").await;
        api.user("reader").await;
        assert_eq!(
            api.put("/v1/users/reader/following/author").await.0,
            StatusCode::NO_CONTENT
        );
        // A first read builds the reader's cache, so the post is materialised there.
        api.get("/v1/users/reader/timeline").await;
        let post = api.say("author", "soon deleted").await;

        timelines.set(Box::new(|method, _| method == "remove_post_entries"));
        let (status, _) = api.delete(&format!("/v1/posts/{post}")).await;
        assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{kind:?}");
        assert!(
            timelines.failures() >= 1,
            "{kind:?}: the retraction was attempted"
        );
        let (status, _) = api.get(&format!("/v1/posts/{post}")).await;
        assert_eq!(
            status,
            StatusCode::NOT_FOUND,
            "{kind:?}: the post itself is deleted"
        );
        server.stop().await.unwrap();
    }
}
