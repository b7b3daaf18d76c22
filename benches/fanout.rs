//! Fan-out with the timelines worker, on the embedded store, figures as ratios from one
//! run (this machine is noisy):
//! - post latency for an author with 10,000 followers, every one with a cache, against an
//!   author with 10 (the request fans out 10 inline; 10,000 is above
//!   `feed.inline_fanout_max`, so the request writes only the author's own timeline);
//! - fan-out lag: from the post's start until the worker has delivered it to the last
//!   follower (the post is marked delivered after its last batch);
//! - worker throughput: changes applied per second by the activity and timelines workers
//!   catching up on a backlog.
//!
//! `cargo bench --bench fanout` (release build; `FANOUT_FOLLOWERS` and `FANOUT_POSTS` change
//! the sizes).

use std::sync::Arc;
use std::time::{Duration, Instant};

use socialite::domain::{ActivityLimits, FeedStrategy, PostId};
use socialite::feed::FeedSettings;
use socialite::service::Social;
use socialite::store::Store;
use socialite::store::embedded::{EmbeddedStore, Synchronous};
use socialite::workers::activity::ActivityWorker;
use socialite::workers::timelines::TimelinesWorker;
use socialite::workers::{Runner, RunnerSettings, SystemClock, Wakers, Worker, Workers};

fn env(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    let at = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[at.min(sorted.len() - 1)]
}

fn summary(mut samples: Vec<f64>) -> (f64, f64) {
    samples.sort_by(f64::total_cmp);
    (percentile(&samples, 0.5), percentile(&samples, 0.99))
}

fn workers(store: &Store, feed: &FeedSettings, wakers: Arc<Wakers>) -> Workers {
    let settings = RunnerSettings {
        lease_ttl_ms: 30_000,
        batch_size: 500,
        refresh_ms: 5_000,
    };
    let activity: Arc<dyn Worker> = Arc::new(ActivityWorker::new(
        store.activity.clone(),
        ActivityLimits::default(),
    ));
    let timelines: Arc<dyn Worker> = Arc::new(TimelinesWorker::new(store.clone(), feed));
    let runners = [activity, timelines]
        .into_iter()
        .map(|w| {
            Runner::new(
                w,
                store.leases.clone(),
                store.change_feed.clone(),
                Arc::new(SystemClock),
                "bench",
                settings,
            )
        })
        .collect();
    Workers::start(
        runners,
        store.leases.clone(),
        wakers,
        Duration::from_millis(500),
    )
}

async fn audience(social: &Social, author: &str, n: usize) {
    social.create_user(author, author).await.unwrap();
    for i in 0..n {
        let id = format!("{author}{i}");
        social.create_user(&id, &id).await.unwrap();
        social.follow(&id, author).await.unwrap();
        social.timeline(&id, None, 10).await.unwrap();
    }
}

#[tokio::main]
async fn main() {
    let followers = env("FANOUT_FOLLOWERS", 10_000);
    let posts = env("FANOUT_POSTS", 100);
    let dir = tempfile::tempdir().unwrap();
    let store = Store::new(Arc::new(
        EmbeddedStore::open(&dir.path().join("fanout.db"), Synchronous::Full).unwrap(),
    ));
    let feed = FeedSettings {
        strategy: FeedStrategy::Cache,
        ..FeedSettings::default()
    };
    let wakers = Arc::new(Wakers::default());
    let social = Social::new(
        store.clone(),
        &feed,
        ActivityLimits::default(),
        wakers.clone(),
    );
    let started = Instant::now();
    audience(&social, "small", 10).await;
    audience(&social, "big", followers).await;
    eprintln!(
        "set-up: {followers} cached followers in {:.1} s",
        started.elapsed().as_secs_f64()
    );

    // Worker throughput: the set-up's backlog (users, follows) with no worker running yet.
    let backlog = store
        .change_feed
        .changes(None, usize::MAX >> 1)
        .await
        .unwrap()
        .len();
    let pool = workers(&store, &feed, wakers);
    let caught_up = Instant::now();
    pool.settle(Duration::from_secs(3600))
        .await
        .expect("caught up");
    let per_second = (2 * backlog) as f64 / caught_up.elapsed().as_secs_f64();

    let (mut small, mut big, mut lag) = (Vec::new(), Vec::new(), Vec::new());
    for i in 0..posts {
        let t = Instant::now();
        social.post("small", &format!("small {i}")).await.unwrap();
        small.push(t.elapsed().as_secs_f64() * 1e3);

        let t = Instant::now();
        let post = social.post("big", &format!("big {i}")).await.unwrap();
        big.push(t.elapsed().as_secs_f64() * 1e3);
        lag.push(delivered_after(&store, post.id, t).await);
    }
    pool.stop().await;
    let (small_p50, small_p99) = summary(small);
    let (big_p50, big_p99) = summary(big);
    let (lag_p50, lag_p99) = summary(lag);
    println!("| measure | p50 (ms) | p99 (ms) |");
    println!("|---|---:|---:|");
    println!("| post, 10 followers (inline fan-out) | {small_p50:.2} | {small_p99:.2} |");
    let how = if followers as u64 > feed.inline_fanout_max {
        "worker fan-out"
    } else {
        "inline fan-out"
    };
    println!("| post, {followers} followers ({how}) | {big_p50:.2} | {big_p99:.2} |");
    println!("| fan-out lag to the last of {followers} followers | {lag_p50:.1} | {lag_p99:.1} |");
    println!();
    println!(
        "post p99 ratio {followers} / 10 followers: {:.2}x (target: within 3x)",
        big_p99 / small_p99
    );
    println!(
        "worker throughput catching up on {backlog} changes with 2 workers: {per_second:.0} changes applied/s"
    );
}

/// Milliseconds from `start` until `post` is marked delivered, polling every millisecond.
async fn delivered_after(store: &Store, post: PostId, start: Instant) -> f64 {
    loop {
        if !store
            .deliveries
            .delivered(&[post])
            .await
            .unwrap()
            .is_empty()
        {
            return start.elapsed().as_secs_f64() * 1e3;
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
}
