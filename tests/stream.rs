//! The live timeline stream and the event log over HTTP, against a real server on port
//! 0: delivery, resume with `Last-Event-ID`, `reset`, `delete` on unfollow and
//! deletion, a thousand streams at once, a client that never reads, the stream limit,
//! `/v1/events` pages and 410, and the hashtag endpoints.
//!
//! This file holds the helpers and delivery (items, deletes, resume, reset); capacity
//! (many streams, slow clients, the limit) is in `stream/capacity.rs`, bad requests,
//! `/v1/events` pages and the hashtag endpoints in `stream/endpoints.rs`, and the SSE
//! client in `stream/sse.rs`, reposts (seen once) in `stream/reposts.rs`.

#[path = "stream/capacity.rs"]
mod capacity;
mod common;
#[path = "stream/endpoints.rs"]
mod endpoints;
#[path = "stream/reposts.rs"]
mod reposts;
#[path = "stream/sse.rs"]
mod sse;

use common::{Kind, TestServer, event_log_kinds, fresh_config};
use reqwest::StatusCode;
use serde_json::json;
use socialite::config::Config;
use socialite::events::Hub;
use sse::Client;

/// `user`'s live timeline stream, opened with their own token.
async fn open_as(server: &TestServer, user: &str, last: Option<&str>) -> Client {
    let token = server.api().credentials().token(user);
    Client::open(&server.client, &server.base, user, token, last).await
}

async fn server(kind: Kind, tune: impl FnOnce(&mut Config)) -> TestServer {
    let mut test = fresh_config(kind);
    tune(&mut test.config);
    TestServer::start(test).await
}

fn hub(server: &TestServer) -> std::sync::Arc<Hub> {
    server
        .server
        .state
        .events
        .hub()
        .expect("the event log is on")
        .clone()
}

async fn pair(server: &TestServer) {
    let api = server.api();
    api.user("ann").await;
    api.user("bob").await;
    assert_eq!(
        api.put("/v1/users/ann/following/bob").await.0,
        StatusCode::NO_CONTENT
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_followee_post_arrives_as_an_item_and_a_deletion_as_a_delete() {
    for kind in event_log_kinds("a_followee_post_arrives").await {
        let server = server(kind, |_| {}).await;
        pair(&server).await;
        api_rename(&server).await;
        let mut stream = open_as(&server, "ann", None).await;
        let post = server.api().say("bob", "hello #live").await;
        let message = stream.next().await.unwrap();
        assert_eq!(message.event, "item", "{kind:?}");
        assert_eq!(message.data["id"], post.as_str());
        assert_eq!(message.data["author"], "bob");
        assert_eq!(message.data["author_display_name"], "Robert");
        assert_eq!(message.data["text"], "hello #live");
        assert!(message.data["created_at"].is_string());
        assert!(message.id.is_some(), "every event carries its id");
        // A stranger's post is not in ann's timeline; her own is.
        server.api().user("cat").await;
        server.api().say("cat", "not for ann").await;
        let own = server.api().say("ann", "mine").await;
        let message = stream.next().await.unwrap();
        assert_eq!(
            message.data["id"],
            own.as_str(),
            "{kind:?}: no stranger's item"
        );
        assert_eq!(
            server.api().delete(&format!("/v1/posts/{post}")).await.0,
            StatusCode::NO_CONTENT
        );
        let message = stream.next().await.unwrap();
        assert_eq!(message.event, "delete");
        assert_eq!(message.data["ids"], json!([post]));
        server.stop().await;
    }
}

async fn api_rename(server: &TestServer) {
    let (status, _) = server
        .api()
        .patch("/v1/users/bob", json!({ "display_name": "Robert" }))
        .await;
    assert_eq!(status, StatusCode::OK);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reconnecting_with_last_event_id_gets_exactly_the_missed_items_in_order() {
    for kind in event_log_kinds("reconnecting_with_last_event_id").await {
        let server = server(kind, |_| {}).await;
        pair(&server).await;
        let api = server.api();
        let mut stream = open_as(&server, "ann", None).await;
        api.say("bob", "one").await;
        let first = stream.next().await.unwrap();
        drop(stream);
        let mut missed = Vec::new();
        for text in ["two", "three", "four"] {
            missed.push(api.say("bob", text).await);
        }
        let last = first.id.unwrap();
        let mut stream = open_as(&server, "ann", Some(&last)).await;
        let mut got = Vec::new();
        for _ in 0..3 {
            let message = stream.next().await.unwrap();
            assert_eq!(message.event, "item");
            assert!(
                message.id.as_ref().unwrap().parse::<u64>().unwrap() > last.parse::<u64>().unwrap()
            );
            got.push(message.data["id"].as_str().unwrap().to_owned());
        }
        assert_eq!(got, missed, "{kind:?}: exactly the missed items, in order");
        // Then live, with nothing repeated.
        let live = api.say("bob", "five").await;
        assert_eq!(
            stream.next().await.unwrap().data["id"],
            live.as_str(),
            "{kind:?}"
        );
        server.stop().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_last_event_id_older_than_the_log_gives_reset_and_the_page_gives_410() {
    // Bounded by count: the embedded store.
    let server = server(Kind::Embedded, |c| c.events.max_count = 3).await;
    pair(&server).await;
    for i in 0..6 {
        server.api().say("bob", &format!("post {i}")).await;
    }
    server.settle().await;
    let mut stream = open_as(&server, "ann", Some("1")).await;
    let reset = stream.next().await.unwrap();
    assert_eq!(reset.event, "reset");
    let (status, body) = server.api().get("/v1/events").await;
    assert_eq!(status, StatusCode::OK);
    let newest = body["events"].as_array().unwrap().last().unwrap()["id"].clone();
    assert_eq!(
        reset.id.as_deref(),
        newest.as_str(),
        "continue from the head"
    );
    let (status, body) = server.api().get("/v1/events?after=1").await;
    assert_eq!(status, StatusCode::GONE, "{body}");
    assert_eq!(body["type"], "/problems/position-lost");
    // After the reset it is live.
    let post = server.api().say("bob", "after the reset").await;
    assert_eq!(stream.next().await.unwrap().data["id"], post.as_str());
    server.stop().await;
}

/// An id this log never issued (past its newest event, even past `i64::MAX`) is not a
/// position to wait at: the stream starts with `reset` at the head and then delivers
/// what follows (it used to skip every item until ids passed the id), and the page is
/// 410 (it used to be 200, or 410 "after -1" once the id wrapped).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_last_event_id_never_issued_gives_reset_and_the_page_gives_410() {
    for kind in event_log_kinds("a_last_event_id_never_issued").await {
        let server = server(kind, |_| {}).await;
        pair(&server).await;
        let api = server.api();
        api.say("bob", "before").await;
        server.settle().await;
        let (_, page) = api.get("/v1/events").await;
        let mut head = page["next"].as_str().unwrap().to_owned();
        let (status, page) = api.get(&format!("/v1/events?after={head}")).await;
        assert_eq!(status, StatusCode::OK, "{kind:?}: the head itself");
        assert_eq!(
            (&page["events"], page["next"].as_str()),
            (&json!([]), Some(&*head))
        );
        let next = head.parse::<u64>().unwrap() + 1;
        for after in [next, 1_000_000, i64::MAX as u64 + 1, u64::MAX] {
            let (status, body) = api.get(&format!("/v1/events?after={after}")).await;
            assert_eq!(status, StatusCode::GONE, "{kind:?} {after}: {body}");
            assert_eq!(body["type"], "/problems/position-lost");
            let detail = body["detail"].as_str().unwrap();
            assert!(
                detail.contains(&format!("event {after} was never issued")),
                "{detail}"
            );
        }
        for last in ["1000000", "18446744073709551615"] {
            let mut stream = open_as(&server, "ann", Some(last)).await;
            let reset = next_within_a_minute(&mut stream).await;
            assert_eq!(reset.event, "reset", "{kind:?} {last}");
            assert_eq!(reset.id.as_deref(), Some(&*head), "continue from the head");
            let post = api.say("bob", "after the reset").await;
            let item = next_within_a_minute(&mut stream).await;
            assert_eq!(
                item.data["id"],
                post.as_str(),
                "{kind:?} {last}: not skipped"
            );
            head = item.id.unwrap();
        }
        server.stop().await;
    }
}

/// The next message; a stream that sends nothing fails the test instead of hanging it.
async fn next_within_a_minute(stream: &mut Client) -> sse::Message {
    let wait = std::time::Duration::from_secs(60);
    tokio::time::timeout(wait, stream.next())
        .await
        .expect("a message")
        .expect("the stream is open")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unfollow_gives_a_delete_of_the_authors_items() {
    for kind in event_log_kinds("an_unfollow_gives_delete").await {
        let server = server(kind, |_| {}).await;
        pair(&server).await;
        let api = server.api();
        let mut posts = vec![api.say("bob", "a").await, api.say("bob", "b").await];
        posts.reverse();
        let mut stream = open_as(&server, "ann", None).await;
        assert_eq!(
            api.delete("/v1/users/ann/following/bob").await.0,
            StatusCode::NO_CONTENT
        );
        // Items the hub had not broadcast yet when the stream opened may come first.
        let mut message = stream.next().await.unwrap();
        while message.event == "item"
            && posts.contains(&message.data["id"].as_str().unwrap().to_owned())
        {
            message = stream.next().await.unwrap();
        }
        assert_eq!(message.event, "delete", "{kind:?}");
        assert_eq!(message.data["author"], "bob");
        assert_eq!(message.data["ids"], json!(posts), "newest first");
        // bob's posts no longer reach ann; a follow brings the next ones again.
        api.say("bob", "unseen").await;
        assert_eq!(
            api.put("/v1/users/ann/following/bob").await.0,
            StatusCode::NO_CONTENT
        );
        let seen = api.say("bob", "seen").await;
        assert_eq!(
            stream.next().await.unwrap().data["id"],
            seen.as_str(),
            "{kind:?}"
        );
        server.stop().await;
    }
}
