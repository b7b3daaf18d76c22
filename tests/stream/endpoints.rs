//! Bad stream requests, the `/v1/events` pages (with `next`) and the hashtag endpoints.

use reqwest::StatusCode;
use serde_json::json;

use super::{pair, server};
use crate::common::{self, Kind, event_log_kinds};

#[tokio::test]
async fn bad_stream_requests_are_4xx() {
    let server = server(Kind::Embedded, |_| {}).await;
    pair(&server).await;
    let api = server.api();
    // Without the owner's credentials an unknown user is the same 401 as any other.
    assert_eq!(
        api.get("/v1/users/nobody/timeline/stream").await.0,
        StatusCode::UNAUTHORIZED
    );
    assert_eq!(
        api.get("/v1/users/no-such!/timeline/stream").await.0,
        StatusCode::UNAUTHORIZED
    );
    assert_eq!(
        api.send_as(
            common::As::Token(&api.token("bob")),
            reqwest::Method::GET,
            "/v1/users/ann/timeline/stream",
            None
        )
        .await
        .0,
        StatusCode::FORBIDDEN,
        "another user's stream"
    );
    let response = server
        .client
        .get(server.url("/v1/users/ann/timeline/stream"))
        .bearer_auth(api.token("ann"))
        .header("Last-Event-ID", "abc")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::UNPROCESSABLE_ENTITY);
    server.stop().await;
}

#[tokio::test]
async fn the_event_log_pages_with_next() {
    for kind in event_log_kinds("the_event_log_pages_with_next").await {
        let server = server(kind, |_| {}).await;
        pair(&server).await;
        let api = server.api();
        let post = api.say("bob", "#Hi there").await;
        api.put(&format!("/v1/users/ann/likes/{post}")).await;
        server.settle().await;
        let (status, page) = api.get("/v1/events?limit=2").await;
        assert_eq!(status, StatusCode::OK);
        let events = page["events"].as_array().unwrap();
        assert_eq!(events.len(), 2);
        assert_eq!(events[0]["type"], "user.followed");
        assert_eq!(
            events[0]["payload"],
            json!({ "follower": "ann", "followee": "bob" })
        );
        assert_eq!(events[1]["type"], "post.created");
        assert_eq!(events[1]["payload"]["tags"], json!(["hi"]));
        assert!(events[1]["time"].is_string());
        let next = page["next"].as_str().unwrap().to_owned();
        assert_eq!(next, events[1]["id"].as_str().unwrap());
        let (_, page) = api.get(&format!("/v1/events?after={next}")).await;
        let events = page["events"].as_array().unwrap();
        assert_eq!(events.len(), 1, "{kind:?}: {page}");
        assert_eq!(events[0]["type"], "post.liked");
        let (_, empty) = api
            .get(&format!(
                "/v1/events?after={}",
                page["next"].as_str().unwrap()
            ))
            .await;
        assert_eq!(empty["events"], json!([]));
        assert_eq!(
            empty["next"], page["next"],
            "an empty page keeps the cursor"
        );
        for bad in ["after=x", "after=-1", "limit=0", "limit=1001", "limit=x"] {
            let (status, body) = api.get(&format!("/v1/events?{bad}")).await;
            assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{bad}: {body}");
        }
        server.stop().await;
    }
}

#[tokio::test]
async fn tags_and_trends_count_hashtags() {
    for kind in event_log_kinds("tags_and_trends_count_hashtags").await {
        let server = server(kind, |_| {}).await;
        let api = server.api();
        api.user("bob").await;
        api.say("bob", "#Café, #café and #RUST! # #").await;
        api.say("bob", "#rust again").await;
        let gone = api.say("bob", "#zig #rust").await;
        assert_eq!(
            api.delete(&format!("/v1/posts/{gone}")).await.0,
            StatusCode::NO_CONTENT
        );
        server.settle().await;
        let (status, body) = api.get("/v1/tags/caf%C3%A9").await;
        assert_eq!(status, StatusCode::OK, "{body}");
        assert_eq!(body["tag"], "café");
        assert_eq!(body["total"], 1);
        assert_eq!(body["hours"].as_array().unwrap().len(), 1);
        assert_eq!(body["hours"][0]["posts"], 1);
        let (_, body) = api.get("/v1/tags/zig").await;
        assert_eq!(body["total"], 0, "a deletion takes its tags away");
        let (status, body) = api.get("/v1/trends?window=1h&limit=5").await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(
            body["tags"],
            json!([{ "tag": "rust", "posts": 2 }, { "tag": "café", "posts": 1 }]),
            "{kind:?}"
        );
        let (_, body) = api.get("/v1/trends?limit=1").await;
        assert_eq!(body["window"], "24h");
        assert_eq!(body["tags"], json!([{ "tag": "rust", "posts": 2 }]));
        assert_eq!(api.get("/v1/tags/Rust").await.0, StatusCode::NOT_FOUND);
        assert_eq!(api.get("/v1/tags/a-b").await.0, StatusCode::NOT_FOUND);
        for bad in ["window=7d", "limit=0", "limit=101"] {
            let (status, _) = api.get(&format!("/v1/trends?{bad}")).await;
            assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{bad}");
        }
        server.stop().await;
    }
}
