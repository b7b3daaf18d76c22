//! Stream capacity: a thousand streams at once with memory bounded, a client that never
//! reads, and the limit on open streams.

use reqwest::StatusCode;

use super::{hub, open_as, pair, server};
use crate::common::Kind;
use crate::sse::Client;

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
    let _a = open_as(&server, "ann", None).await;
    let _b = open_as(&server, "bob", None).await;
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
