//! Rate limits (on a clock moved by hand) and connection hardening: stalled clients
//! are cut off at the header timeout, the connection cap refuses the excess, and too
//! many header fields get 431 problem+json.

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::{As, TestServer, fresh_config, kinds};
use reqwest::{Method, StatusCode};
use serde_json::json;
use socialite::workers::ManualClock;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// The limit-th + 1 write within a minute is refused with `Retry-After` and
/// `RateLimit-*`; another user is unaffected; the bucket refills as the clock moves.
#[tokio::test]
async fn writes_past_the_limit_get_429_per_user() {
    let mut test = fresh_config(common::Kind::Embedded);
    test.config.rate.writes_per_min = 5;
    test.config.rate.reads_per_min = 1000;
    let clock = Arc::new(ManualClock::at(1_000_000));
    let server = TestServer::start_with_clock(test, clock.clone()).await;
    let api = server.api();
    for id in ["ann", "bo"] {
        api.user(id).await;
    }
    let post = |user: &'static str| {
        let request = server
            .client
            .post(server.url(&format!("/v1/users/{user}/posts")))
            .bearer_auth(api.token(user))
            .json(&json!({"text": "x"}));
        async move { request.send().await.unwrap() }
    };
    for i in 0..5 {
        assert_eq!(post("ann").await.status(), StatusCode::CREATED, "write {i}");
    }
    let refused = post("ann").await;
    assert_eq!(refused.status(), StatusCode::TOO_MANY_REQUESTS);
    let headers = refused.headers().clone();
    // One write every 60 / 5 = 12 s.
    assert_eq!(headers["retry-after"], "12");
    assert_eq!(headers["ratelimit-limit"], "5");
    assert_eq!(headers["ratelimit-remaining"], "0");
    assert_eq!(headers["ratelimit-reset"], "12");
    assert_eq!(headers["content-type"], "application/problem+json");
    let problem: serde_json::Value = refused.json().await.unwrap();
    assert_eq!(problem["status"], 429);

    assert_eq!(
        post("bo").await.status(),
        StatusCode::CREATED,
        "bo has his own bucket"
    );
    let (status, _) = api.get("/v1/users/ann/timeline").await;
    assert_eq!(status, StatusCode::OK, "reads draw from another bucket");

    clock.advance(11_999);
    assert_eq!(post("ann").await.status(), StatusCode::TOO_MANY_REQUESTS);
    clock.advance(1);
    assert_eq!(post("ann").await.status(), StatusCode::CREATED, "refilled");
    assert_eq!(post("ann").await.status(), StatusCode::TOO_MANY_REQUESTS);
    server.stop().await;
}

/// The per-address limit reads `X-Forwarded-For` only from a trusted proxy, and leaves
/// the health checks alone.
#[tokio::test]
async fn the_client_address_limit_trusts_only_configured_proxies() {
    for trusted in [true, false] {
        let mut test = fresh_config(common::Kind::Embedded);
        test.config.rate.ip_per_min = 3;
        if trusted {
            test.config.server.trusted_proxies = vec!["127.0.0.1".parse().unwrap()];
        }
        let clock = Arc::new(ManualClock::at(5_000_000));
        let server = TestServer::start_with_clock(test, clock).await;
        let get = |client_ip: &str| {
            let request = server
                .client
                .get(server.url("/v1/meta"))
                .header("x-forwarded-for", format!("{client_ip}, 127.0.0.1"));
            async move { request.send().await.unwrap().status() }
        };
        for _ in 0..3 {
            assert_eq!(get("203.0.113.1").await, StatusCode::OK);
        }
        assert_eq!(get("203.0.113.1").await, StatusCode::TOO_MANY_REQUESTS);
        let other = get("203.0.113.2").await;
        if trusted {
            assert_eq!(other, StatusCode::OK, "another client behind the proxy");
        } else {
            assert_eq!(
                other,
                StatusCode::TOO_MANY_REQUESTS,
                "a claimed address is ignored"
            );
        }
        let (status, _) = server
            .api()
            .send_as(As::Nobody, Method::GET, "/healthz", None)
            .await;
        assert_eq!(status, StatusCode::OK, "health checks are never limited");
        server.stop().await;
    }
}

const PARTIAL: &[u8] = b"GET /healthz HTTP/1.1\r\nHost: stalled\r\nX-Slow: ";

/// Sends one request on `stream` and reads its response (headers and a
/// content-length body).
async fn exchange(stream: &mut TcpStream, path: &str) -> String {
    send_raw(stream, &format!("GET {path} HTTP/1.1\r\nHost: t\r\n\r\n")).await
}

/// Sends `request` on `stream` and reads its response (headers and a content-length
/// body).
async fn send_raw(stream: &mut TcpStream, request: &str) -> String {
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut response = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        let n = stream.read(&mut buf).await.unwrap();
        assert!(
            n > 0,
            "closed mid-response: {}",
            String::from_utf8_lossy(&response)
        );
        response.extend_from_slice(&buf[..n]);
        let text = String::from_utf8_lossy(&response).to_string();
        if let Some(end) = text.find("\r\n\r\n") {
            let length = text[..end]
                .lines()
                .find_map(|l| {
                    l.to_ascii_lowercase()
                        .strip_prefix("content-length: ")
                        .map(str::to_owned)
                })
                .and_then(|v| v.trim().parse::<usize>().ok())
                .unwrap_or(0);
            if response.len() >= end + 4 + length {
                return text;
            }
        }
    }
}

/// Waits (bounded) until the server closes `stream`; returns what it sent first.
async fn closed_by_server(mut stream: TcpStream) -> String {
    let mut seen = Vec::new();
    let mut buf = [0u8; 1024];
    // Well past the 1 s header timeout used here, and short of hyper's own 30 s default.
    let read = tokio::time::timeout(Duration::from_secs(20), async {
        loop {
            match stream.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(n) => seen.extend_from_slice(&buf[..n]),
            }
        }
    })
    .await;
    assert!(read.is_ok(), "the server never closed a stalled connection");
    String::from_utf8_lossy(&seen).into_owned()
}

/// 500 clients that send part of a header and stall are all closed after the header
/// timeout, while a normal client is served throughout.
#[tokio::test]
async fn stalled_clients_are_cut_off_and_others_served() {
    let mut test = fresh_config(common::Kind::Embedded);
    test.config.server.header_timeout = socialite::config::HumanDuration(Duration::from_secs(1));
    let server = TestServer::start(test).await;
    let api = server.api();
    api.user("steady").await;
    let addr = server.server.addr;
    let mut stalled = Vec::new();
    for _ in 0..500 {
        let mut stream = TcpStream::connect(addr).await.unwrap();
        stream.write_all(PARTIAL).await.unwrap();
        stalled.push(stream);
    }
    // A normal client, on one kept-alive connection and on fresh ones, meanwhile.
    let mut steady = TcpStream::connect(addr).await.unwrap();
    for _ in 0..10 {
        assert!(
            exchange(&mut steady, "/healthz")
                .await
                .starts_with("HTTP/1.1 200")
        );
        let (status, _) = api.get("/v1/users/steady/timeline").await;
        assert_eq!(status, StatusCode::OK);
    }
    let closing: Vec<_> = stalled.into_iter().map(closed_by_server).collect();
    for answer in futures::future::join_all(closing).await {
        assert!(
            !answer.contains(" 200 "),
            "a stalled request was served: {answer}"
        );
    }
    let (status, _) = api.get("/v1/users/steady/timeline").await;
    assert_eq!(status, StatusCode::OK, "still serving after the cut-off");
    server.stop().await;
}

/// Past `server.max_connections` a new connection gets a 503 and is closed at once;
/// the connections already open keep being served, and a freed slot is reused.
#[tokio::test]
async fn connections_past_the_cap_are_refused_and_the_others_served() {
    let mut test = fresh_config(common::Kind::Embedded);
    test.config.server.max_connections = 4;
    let server = TestServer::start(test).await;
    let addr = server.server.addr;
    let mut kept = TcpStream::connect(addr).await.unwrap();
    assert!(
        exchange(&mut kept, "/healthz")
            .await
            .starts_with("HTTP/1.1 200")
    );
    let mut stalled = Vec::new();
    for _ in 0..3 {
        let mut stream = TcpStream::connect(addr).await.unwrap();
        stream.write_all(PARTIAL).await.unwrap();
        stalled.push(stream);
    }
    // Accepted in order: by the time this one is, the four before it hold every slot.
    let refused = TcpStream::connect(addr).await.unwrap();
    let answer = closed_by_server(refused).await;
    assert!(answer.starts_with("HTTP/1.1 503"), "{answer:?}");
    assert!(
        answer.to_ascii_lowercase().contains("retry-after: 1"),
        "{answer}"
    );
    assert!(
        exchange(&mut kept, "/healthz")
            .await
            .starts_with("HTTP/1.1 200"),
        "kept served"
    );

    drop(stalled);
    // The server frees the slots as it sees the clients go; wait for that (bounded).
    let served = tokio::time::timeout(Duration::from_secs(30), async {
        loop {
            let mut fresh = TcpStream::connect(addr).await.unwrap();
            fresh
                .write_all(b"GET /healthz HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
                .await
                .unwrap();
            let mut answer = String::new();
            let _ = fresh.read_to_string(&mut answer).await;
            if answer.starts_with("HTTP/1.1 200") {
                return;
            }
            tokio::task::yield_now().await;
        }
    })
    .await;
    assert!(served.is_ok(), "a freed slot serves a new connection");
    server.stop().await;
}

/// A `GET /healthz` carrying `count` header fields, `Host` included.
fn with_header_fields(count: usize) -> String {
    let mut request = "GET /healthz HTTP/1.1\r\nHost: t\r\n".to_owned();
    for i in 1..count {
        request.push_str(&format!("X-Field-{i}: {i}\r\n"));
    }
    request + "\r\n"
}

/// Past 100 header fields a request gets 431 as problem+json (hyper's own 431 had an
/// empty body); at 100 it is served, and the connection goes on serving.
#[tokio::test]
async fn too_many_header_fields_get_431_as_problem_json() {
    for kind in kinds("too_many_header_fields_get_431_as_problem_json") {
        let server = TestServer::start(fresh_config(kind)).await;
        let mut stream = TcpStream::connect(server.base.trim_start_matches("http://"))
            .await
            .unwrap();
        for (count, status) in [(100, "200"), (101, "431"), (200, "431"), (100, "200")] {
            let response = send_raw(&mut stream, &with_header_fields(count)).await;
            let (head, body) = response.split_once("\r\n\r\n").unwrap();
            assert!(
                head.starts_with(&format!("HTTP/1.1 {status} ")),
                "{kind:?} {count}: {head}"
            );
            if status == "200" {
                continue;
            }
            let head = head.to_ascii_lowercase();
            assert!(
                head.contains("content-type: application/problem+json"),
                "{kind:?} {count}: {head}"
            );
            let problem: serde_json::Value = serde_json::from_str(body).unwrap();
            assert_eq!(problem["status"], 431, "{problem}");
            assert_eq!(problem["type"], "/problems/too-many-headers");
            assert_eq!(problem["title"], "Request Header Fields Too Large");
            let detail = problem["detail"].as_str().unwrap();
            assert!(detail.contains(&format!("at most 100 header fields; this one has {count}")));
        }
        server.stop().await;
    }
}
