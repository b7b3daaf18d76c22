//! The live timeline stream and the event log over HTTP, against a real server on port
//! 0: delivery, resume with `Last-Event-ID`, `reset`, `delete` on unfollow and
//! deletion, a thousand streams at once, a client that never reads, the stream limit,
//! `/v1/events` pages and 410, and the hashtag endpoints.

mod common;
#[path = "stream/sse.rs"]
mod sse;

use common::{Kind, TestServer, event_log_kinds, fresh_config};
use reqwest::StatusCode;
use serde_json::json;
use socialite::config::Config;
use socialite::events::Hub;
use sse::Client;

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
        let mut stream = Client::open(
            &server.client,
            &server.base,
            "ann",
            server.api().credentials().token("ann"),
            None,
        )
        .await;
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
        let mut stream = Client::open(
            &server.client,
            &server.base,
            "ann",
            server.api().credentials().token("ann"),
            None,
        )
        .await;
        api.say("bob", "one").await;
        let first = stream.next().await.unwrap();
        drop(stream);
        let mut missed = Vec::new();
        for text in ["two", "three", "four"] {
            missed.push(api.say("bob", text).await);
        }
        let last = first.id.unwrap();
        let mut stream = Client::open(
            &server.client,
            &server.base,
            "ann",
            server.api().credentials().token("ann"),
            Some(&last),
        )
        .await;
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
    let mut stream = Client::open(
        &server.client,
        &server.base,
        "ann",
        server.api().credentials().token("ann"),
        Some("1"),
    )
    .await;
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unfollow_gives_a_delete_of_the_authors_items() {
    for kind in event_log_kinds("an_unfollow_gives_delete").await {
        let server = server(kind, |_| {}).await;
        pair(&server).await;
        let api = server.api();
        let mut posts = vec![api.say("bob", "a").await, api.say("bob", "b").await];
        posts.reverse();
        let mut stream = Client::open(
            &server.client,
            &server.base,
            "ann",
            server.api().credentials().token("ann"),
            None,
        )
        .await;
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

fn rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches(" kB").trim().parse().ok())
        .unwrap_or(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_thousand_streams_each_receive_a_post_with_memory_bounded() {
    const STREAMS: usize = 1000;
    let server = server(Kind::Embedded, |_| {}).await;
    let api = server.api();
    api.user("bob").await;
    for i in 0..STREAMS {
        api.user(&format!("r{i}")).await;
        assert_eq!(
            api.put(&format!("/v1/users/r{i}/following/bob")).await.0,
            StatusCode::NO_CONTENT
        );
    }
    let before = rss_kib();
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(0)
        .build()
        .unwrap();
    let names: Vec<String> = (0..STREAMS).map(|i| format!("r{i}")).collect();
    let streams = futures::future::join_all(names.iter().map(|name| {
        Client::open(
            &client,
            &server.base,
            name,
            api.credentials().token(name),
            None,
        )
    }))
    .await;
    assert_eq!(hub(&server).open_streams(), STREAMS, "one slot per stream");
    let post = api.say("bob", "to everyone").await;
    let received = futures::future::join_all(streams.into_iter().map(|mut s| async move {
        let message = s.next().await.unwrap();
        (message.data["id"].as_str().unwrap().to_owned(), s)
    }))
    .await;
    assert!(
        received.iter().all(|(id, _)| *id == post),
        "every stream got the post"
    );
    let grown_mib = rss_kib().saturating_sub(before) / 1024;
    eprintln!("1,000 streams (client and server in this process): RSS grew {grown_mib} MiB");
    assert!(
        grown_mib < 256,
        "memory stays bounded: grew {grown_mib} MiB"
    );
    drop(received);
    server.stop().await;
}

/// A stream whose client takes nothing (hyper polls an SSE body only when the socket can
/// take more, so a client that stops reading stops the polling) is closed once
/// `events.stream_buffer` messages wait: memory stays bounded, its slot is freed, and it
/// gets what was buffered and nothing after. Driven on the stream itself, so the outcome
/// does not hang on how much the kernel's socket buffers happen to hold.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_never_reads_is_disconnected() {
    const BUFFER: usize = 4;
    let server = server(Kind::Embedded, |c| c.events.stream_buffer = BUFFER).await;
    pair(&server).await;
    let hub = hub(&server);
    let mut stream = server
        .server
        .state
        .events
        .open_stream("ann", None)
        .await
        .expect("the stream opens");
    assert_eq!(hub.open_streams(), 1);
    let mut posts = Vec::new();
    for n in 0..BUFFER + 3 {
        posts.push(server.api().say("bob", &format!("post {n}")).await);
    }
    let closed = tokio::time::timeout(std::time::Duration::from_secs(60), async {
        while hub.slow_disconnects() == 0 || hub.open_streams() > 0 {
            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        }
    })
    .await;
    assert!(
        closed.is_ok(),
        "the stream was closed as slow and its slot freed"
    );
    assert_eq!(hub.slow_disconnects(), 1);
    let mut received = Vec::new();
    while let Some(message) = stream.recv().await {
        match message {
            socialite::events::StreamMessage::Item { item, .. } => {
                received.push(item.id.to_string())
            }
            other => panic!("only items were due, got {other:?}"),
        }
    }
    assert_eq!(
        received,
        posts[..BUFFER],
        "the buffered items, in order, then the end: nothing after the buffer filled"
    );
    // A later post finds no stream to reach.
    server.api().say("bob", "after the disconnect").await;
    assert_eq!(hub.open_streams(), 0);
    server.stop().await;
}

#[tokio::test]
async fn streams_past_the_limit_get_503() {
    let server = server(Kind::Embedded, |c| c.events.max_streams = 2).await;
    pair(&server).await;
    let _a = Client::open(
        &server.client,
        &server.base,
        "ann",
        server.api().credentials().token("ann"),
        None,
    )
    .await;
    let _b = Client::open(
        &server.client,
        &server.base,
        "bob",
        server.api().credentials().token("bob"),
        None,
    )
    .await;
    let (status, body) = server.api().get("/v1/users/ann/timeline/stream").await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{body}");
    assert_eq!(body["type"], "/problems/too-many-streams");
    let (status, _) = server.api().get("/v1/users/nobody/timeline/stream").await;
    assert_eq!(
        status,
        StatusCode::UNAUTHORIZED,
        "credentials are checked before the limit"
    );
    drop(_a);
    server.stop().await;
}

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
