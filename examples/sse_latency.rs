//! Post-to-SSE delivery latency: opens one live timeline stream per seeded user (each
//! with its owner's token), has every owner follow a few new authors, then has the
//! authors post at a steady interval and records, per stream, when each post's `item`
//! event arrives. Latency is from just before the POST is sent to the arrival of the
//! chunk completing that item's event, both on this process's monotonic clock.
//! Every stream must receive every post: a lost or repeated delivery is reported.
//! `loadtest/sse_latency.sh` runs it against a release server under `mixed.js`.
//!
//! Env: SSE_BASE_URL, TOKENS_FILE (the seeder's `--tokens-out`), SSE_FIRST (first owner
//! index, 9000), SSE_STREAMS (1000), SSE_AUTHORS (2), SSE_POSTS (120), SSE_INTERVAL_MS
//! (500), SSE_WARMUP_MS (5000: after "READY", before the first post), SSE_DRAIN_MS (3000).

use std::collections::{HashMap, HashSet};
use std::io::Write;
use std::time::{Duration, Instant};

use futures::StreamExt;
use serde_json::{Value, json};
use tokio::sync::watch;

fn env(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// (post id, arrival) for each `item` event by one of the authors, and whether the
/// stream ended before it was told to stop.
type Arrivals = (Vec<(String, Instant)>, Option<String>);

async fn stream(
    client: reqwest::Client,
    url: String,
    token: String,
    opened: tokio::sync::mpsc::Sender<Result<(), String>>,
    mut done: watch::Receiver<bool>,
) -> Arrivals {
    let response = client.get(&url).bearer_auth(&token).send().await;
    let response = match response {
        Ok(r) if r.status().is_success() => r,
        Ok(r) => {
            let _ = opened.send(Err(format!("{url}: {}", r.status()))).await;
            return (Vec::new(), Some(format!("status {}", r.status())));
        }
        Err(e) => {
            let _ = opened.send(Err(format!("{url}: {e}"))).await;
            return (Vec::new(), Some(e.to_string()));
        }
    };
    let _ = opened.send(Ok(())).await;
    drop(opened);
    let mut body = response.bytes_stream();
    let (mut buffer, mut arrivals) = (String::new(), Vec::new());
    loop {
        let chunk = tokio::select! {
            chunk = body.next() => chunk,
            _ = done.wait_for(|d| *d) => return (arrivals, None),
        };
        let at = Instant::now();
        let chunk = match chunk {
            Some(Ok(chunk)) => chunk,
            Some(Err(e)) => return (arrivals, Some(e.to_string())),
            None => return (arrivals, Some("the server ended the stream".to_owned())),
        };
        buffer.push_str(&String::from_utf8_lossy(&chunk));
        while let Some(end) = buffer.find("\n\n") {
            let block: String = buffer.drain(..end + 2).collect();
            let mut item = false;
            let mut data = None;
            for line in block.lines() {
                if line == "event: item" {
                    item = true;
                } else if let Some(rest) = line.strip_prefix("data: ") {
                    data = Some(rest.to_owned());
                }
            }
            let Some(data) = data.filter(|_| item) else {
                continue;
            };
            let value: Value = serde_json::from_str(&data).unwrap_or_default();
            let author = value["author"].as_str().unwrap_or_default();
            if author.starts_with("sseauthor")
                && let Some(id) = value["id"].as_str()
            {
                arrivals.push((id.to_owned(), at));
            }
        }
    }
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    let at = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[at.min(sorted.len() - 1)]
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let base = std::env::var("SSE_BASE_URL")?;
    let tokens: Vec<String> =
        serde_json::from_str(&std::fs::read_to_string(std::env::var("TOKENS_FILE")?)?)?;
    let first = env("SSE_FIRST", 9000);
    let streams = env("SSE_STREAMS", 1000);
    let authors = env("SSE_AUTHORS", 2);
    let posts = env("SSE_POSTS", 120);
    let interval = Duration::from_millis(env("SSE_INTERVAL_MS", 500) as u64);
    let client = reqwest::Client::new();

    let mut author_tokens = Vec::new();
    for a in 0..authors {
        let created: Value = client
            .post(format!("{base}/v1/users"))
            .json(&json!({ "id": format!("sseauthor{a}") }))
            .send()
            .await?
            .error_for_status()?
            .json()
            .await?;
        author_tokens.push(created["token"].as_str().unwrap_or_default().to_owned());
    }
    let owners: Vec<usize> = (first..first + streams).collect();
    let follows = futures::stream::iter(
        owners
            .iter()
            .flat_map(|o| (0..authors).map(move |a| (*o, a))),
    )
    .map(|(owner, a)| {
        let request = client
            .put(format!("{base}/v1/users/u{owner}/following/sseauthor{a}"))
            .bearer_auth(&tokens[owner]);
        async move { request.send().await.map(|r| r.status().as_u16()) }
    })
    .buffer_unordered(16)
    .collect::<Vec<_>>()
    .await;
    let bad = follows.iter().filter(|s| !matches!(s, Ok(204))).count();
    anyhow::ensure!(
        bad == 0,
        "{bad} follows failed: {:?}",
        follows.iter().find(|s| !matches!(s, Ok(204)))
    );

    let (done_tx, done) = watch::channel(false);
    let (opened_tx, mut opened) = tokio::sync::mpsc::channel(streams);
    let tasks: Vec<_> = owners
        .iter()
        .map(|&owner| {
            tokio::spawn(stream(
                client.clone(),
                format!("{base}/v1/users/u{owner}/timeline/stream"),
                tokens[owner].clone(),
                opened_tx.clone(),
                done.clone(),
            ))
        })
        .collect();
    drop(opened_tx);
    let mut failed = Vec::new();
    for _ in 0..streams {
        if let Some(Err(e)) = opened.recv().await {
            failed.push(e);
        }
    }
    anyhow::ensure!(
        failed.is_empty(),
        "{} streams failed to open, e.g. {}",
        failed.len(),
        failed[0]
    );
    println!("READY {streams} streams open, each following {authors} authors");
    std::io::stdout().flush()?;
    tokio::time::sleep(Duration::from_millis(env("SSE_WARMUP_MS", 5000) as u64)).await;

    let mut sent: HashMap<String, Instant> = HashMap::new();
    let mut post_ms = Vec::new();
    let mut ticker = tokio::time::interval(interval);
    for i in 0..posts {
        ticker.tick().await;
        let a = i % authors;
        let started = Instant::now();
        let created: Value = client
            .post(format!("{base}/v1/users/sseauthor{a}/posts"))
            .bearer_auth(&author_tokens[a])
            .json(&json!({ "text": format!("latency probe {i}") }))
            .send()
            .await?
            .error_for_status()?
            .json()
            .await?;
        post_ms.push(started.elapsed().as_secs_f64() * 1e3);
        sent.insert(
            created["id"].as_str().unwrap_or_default().to_owned(),
            started,
        );
    }
    tokio::time::sleep(Duration::from_millis(env("SSE_DRAIN_MS", 3000) as u64)).await;
    done_tx.send_replace(true);

    let (mut latencies, mut lost, mut repeated, mut ended) = (Vec::new(), 0, 0, Vec::new());
    // Per post: its first and its last delivery over all streams.
    let mut spread: HashMap<String, (f64, f64)> = HashMap::new();
    for task in tasks {
        let (arrivals, end) = task.await?;
        if let Some(end) = end {
            ended.push(end);
        }
        let mut seen = HashSet::new();
        for (id, at) in arrivals {
            let Some(start) = sent.get(&id) else { continue };
            if !seen.insert(id.clone()) {
                repeated += 1;
                continue;
            }
            let ms = at.saturating_duration_since(*start).as_secs_f64() * 1e3;
            let range = spread.entry(id).or_insert((ms, ms));
            *range = (range.0.min(ms), range.1.max(ms));
            latencies.push(ms);
        }
        lost += sent.len() - seen.len();
    }
    latencies.sort_by(f64::total_cmp);
    post_ms.sort_by(f64::total_cmp);
    let expected = sent.len() * streams;
    println!(
        "posts: {}, POST p50 {:.1} ms, p99 {:.1} ms",
        sent.len(),
        percentile(&post_ms, 0.5),
        percentile(&post_ms, 0.99)
    );
    println!("streams ended early: {} {:?}", ended.len(), ended.first());
    if latencies.is_empty() {
        anyhow::bail!("no delivery at all ({expected} expected)");
    }
    println!(
        "deliveries {} of {expected} (lost {lost}, repeated {repeated}); post-to-SSE p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms",
        latencies.len(),
        percentile(&latencies, 0.5),
        percentile(&latencies, 0.99),
        latencies[latencies.len() - 1]
    );
    let (mut firsts, mut lasts): (Vec<f64>, Vec<f64>) = spread.into_values().unzip();
    firsts.sort_by(f64::total_cmp);
    lasts.sort_by(f64::total_cmp);
    println!(
        "per post, first stream served: p50 {:.1} ms, p99 {:.1} ms; last stream served: p50 {:.1} ms, p99 {:.1} ms",
        percentile(&firsts, 0.5),
        percentile(&firsts, 0.99),
        percentile(&lasts, 0.5),
        percentile(&lasts, 0.99)
    );
    if lost > 0 || repeated > 0 || !ended.is_empty() {
        anyhow::bail!(
            "FAILED: {lost} deliveries lost, {repeated} repeated, {} streams ended early",
            ended.len()
        );
    }
    Ok(())
}
