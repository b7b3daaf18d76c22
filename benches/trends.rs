//! `GET /v1/trends` at 100,000 tagged posts against a scan-on-read query, over HTTP in
//! the same run.
//!
//! The data set: 100,000 posts (one to three tags each, Zipf over 1,000 tags) spread
//! evenly over the last 23 hours, so `window=24h` covers all of them; written through the
//! store, turned into the event log and counted by the aggregates worker before timing.
//! - **aggregate**: the real server (`app::spawn`, port 0), reading the kept counts;
//! - **scan on read**: a bench-only server on port 0 in the same process that answers the
//!   same question from the posts: reads every post of the window (a range of the post
//!   id index, ids being time-ordered) and counts tags with the product's own parser.
//!
//! Both answer `?window=24h&limit=10`; one client times request to last byte, one request
//! at a time, arms alternating in rounds; the answers are checked to be equal. The
//! machine is shared and noisy: compare the two columns of one run, not across runs.
//!
//! `cargo bench --bench trends` (`TRENDS_POSTS` 100000, `TRENDS_REQUESTS` 50 per arm and
//! round, `TRENDS_ROUNDS` 4).

#[allow(dead_code)]
mod common;

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use axum::Router;
use axum::extract::State;
use axum::routing::get;
use rusqlite::Connection;
use serde_json::{Value, json};
use socialite::config::Config;
use socialite::domain::{PostId, hashtags, now_ms};
use socialite::store::Store;
use socialite::store::embedded::{EmbeddedStore, Synchronous};
use socialite::store::trends::HOUR_MS;

use common::{aggregate, build_event_log, env, summary, tagged_posts};

const WINDOW_MS: i64 = 24 * HOUR_MS;
const LIMIT: usize = 10;

async fn build(path: &Path, posts: usize) {
    let store = Store::new(Arc::new(
        EmbeddedStore::open(path, Synchronous::Normal).unwrap(),
    ));
    let started = Instant::now();
    tagged_posts(&store, posts, 23 * HOUR_MS, now_ms()).await;
    build_event_log(&store).await;
    aggregate(&store).await;
    eprintln!(
        "set-up: {posts} tagged posts, event log and counts in {:.1} s",
        started.elapsed().as_secs_f64()
    );
}

/// The scan-on-read answer: every post created since the window's first hour, its tags
/// counted; most posts first, ties by tag, as `/v1/trends` orders them.
fn scan(conn: &Connection) -> Value {
    let from_hour = (now_ms() - WINDOW_MS).div_euclid(HOUR_MS);
    let from = PostId::at(from_hour * HOUR_MS, 0).bytes();
    let mut counts: HashMap<String, u64> = HashMap::new();
    let mut stmt = conn
        .prepare_cached("SELECT text FROM posts WHERE id >= ?1")
        .unwrap();
    let mut rows = stmt.query([&from[..]]).unwrap();
    while let Some(row) = rows.next().unwrap() {
        let text: String = row.get(0).unwrap();
        for tag in hashtags(&text) {
            *counts.entry(tag).or_default() += 1;
        }
    }
    let mut top: Vec<(String, u64)> = counts.into_iter().collect();
    top.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    top.truncate(LIMIT);
    let tags: Vec<Value> = top
        .into_iter()
        .map(|(tag, posts)| json!({ "tag": tag, "posts": posts }))
        .collect();
    json!({ "window": "24h", "tags": tags })
}

async fn scan_server(path: &Path) -> String {
    let conn = Connection::open(path).unwrap();
    // The page cache the product's reader connections get, so neither arm reads disk.
    conn.execute_batch("PRAGMA cache_size=-16384;").unwrap();
    let conn = Arc::new(Mutex::new(conn));
    let app = Router::new()
        .route(
            "/scan",
            get(|State(conn): State<Arc<Mutex<Connection>>>| async move {
                // In place, as the product's embedded reads run.
                let body = tokio::task::block_in_place(|| scan(&conn.lock().unwrap()));
                axum::Json(body)
            }),
        )
        .with_state(conn);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    format!("http://{addr}/scan")
}

/// Milliseconds per request, and the last answer.
async fn time(client: &reqwest::Client, url: &str, n: usize) -> (Vec<f64>, Value) {
    let mut samples = Vec::with_capacity(n);
    let mut last = Value::Null;
    for _ in 0..n {
        let started = Instant::now();
        let response = client.get(url).send().await.unwrap();
        assert!(
            response.status().is_success(),
            "{url}: {}",
            response.status()
        );
        let body = response.bytes().await.unwrap();
        samples.push(started.elapsed().as_secs_f64() * 1e3);
        last = serde_json::from_slice(&body).unwrap();
    }
    (samples, last)
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let posts = env("TRENDS_POSTS", 100_000);
    let requests = env("TRENDS_REQUESTS", 50);
    let rounds = env("TRENDS_ROUNDS", 4);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("trends.db");
    build(&path, posts).await;

    let mut config = Config::default();
    config.server.listen = "127.0.0.1:0".parse().unwrap();
    config.storage.path = path.clone();
    config.rate.ip_per_min = 100_000_000;
    let server = socialite::app::spawn(&config).await.unwrap();
    let trends = format!("http://{}/v1/trends?window=24h&limit={LIMIT}", server.addr);
    let scan = scan_server(&path).await;
    let client = reqwest::Client::new();
    // Warm both: connections, statement caches, the page cache.
    time(&client, &trends, 5).await;
    time(&client, &scan, 2).await;

    let (mut kept, mut scanned) = (Vec::new(), Vec::new());
    for round in 0..rounds {
        let (a, b) = if round % 2 == 0 {
            let a = time(&client, &trends, requests).await;
            (a, time(&client, &scan, requests).await)
        } else {
            let b = time(&client, &scan, requests).await;
            (time(&client, &trends, requests).await, b)
        };
        assert_eq!(
            a.1, b.1,
            "the aggregate and the scan must give the same answer"
        );
        kept.extend(a.0);
        scanned.extend(b.0);
    }
    server.stop().await.unwrap();
    let n = kept.len();
    let (k50, k99) = summary(kept);
    let (s50, s99) = summary(scanned);
    println!(
        "`GET /v1/trends?window=24h&limit={LIMIT}` at {posts} tagged posts, {n} requests per arm"
    );
    println!("| arm | p50 (ms) | p99 (ms) |");
    println!("|---|---:|---:|");
    println!("| aggregate (`/v1/trends`, real server) | {k50:.2} | {k99:.2} |");
    println!("| scan on read (posts of the window, product parser) | {s50:.2} | {s99:.2} |");
    println!();
    println!(
        "scan on read / aggregate: p50 {:.0}x, p99 {:.0}x",
        s50 / k50,
        s99 / k99
    );
}
