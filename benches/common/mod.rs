//! What the event-log benches share: a tagged data set written through the store's own
//! operations (so every post is a change the events worker turns into an event),
//! workers driven to idle by hand, and percentiles.

use std::sync::Arc;

use socialite::config::EventsConfig;
use socialite::domain::NewUser;
use socialite::store::Store;
use socialite::workers::aggregates::{AggregatesWorker, EventFeed};
use socialite::workers::events::EventsWorker;
use socialite::workers::{Runner, RunnerSettings, Step, SystemClock, Worker};

pub const SETTINGS: RunnerSettings = RunnerSettings {
    lease_ttl_ms: 60_000,
    batch_size: 500,
    refresh_ms: 5_000,
};

pub fn env(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// xorshift64*: a fixed, dependency-free sequence, so every run builds the same data.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed.max(1))
    }

    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// Uniform in `[0, 1)`.
    pub fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }

    pub fn below(&mut self, n: usize) -> usize {
        (self.unit() * n as f64) as usize
    }
}

/// Tags by Zipf (θ = 0.99) over `n` tags: a few hot tags and a long tail, as trends are.
pub struct Tags {
    cumulative: Vec<f64>,
}

impl Tags {
    pub fn new(n: usize) -> Tags {
        let mut sum = 0.0;
        let cumulative = (1..=n)
            .map(|k| {
                sum += 1.0 / (k as f64).powf(0.99);
                sum
            })
            .collect();
        Tags { cumulative }
    }

    pub fn pick(&self, rng: &mut Rng) -> usize {
        let total = *self.cumulative.last().expect("at least one tag");
        let at = rng.unit() * total;
        self.cumulative.partition_point(|c| *c < at)
    }

    /// A post text with one to three tags among words.
    pub fn text(&self, rng: &mut Rng) -> String {
        let mut text = String::from("post");
        for _ in 0..1 + rng.below(3) {
            text.push_str(&format!(" about #t{} and", self.pick(rng)));
        }
        text.push_str(" more");
        text
    }
}

/// Writes `posts` tagged posts by `authors` users, created at evenly spaced times over
/// the `span_ms` before `now_ms` (oldest first: post ids only grow).
pub async fn tagged_posts(store: &Store, posts: usize, span_ms: i64, now_ms: i64) {
    let authors = 100;
    for a in 0..authors {
        store
            .users
            .create_user(&NewUser {
                id: format!("a{a}"),
                display_name: format!("a{a}"),
                created_at_ms: now_ms - span_ms - 1,
            })
            .await
            .unwrap();
    }
    let (tags, mut rng) = (Tags::new(1_000), Rng::new(42));
    for i in 0..posts {
        let at = now_ms - span_ms + (span_ms as i128 * i as i128 / posts as i128) as i64;
        let author = format!("a{}", rng.below(authors));
        store
            .content
            .insert_post(&author, &tags.text(&mut rng), None, at)
            .await
            .unwrap();
    }
}

/// Steps `worker` until it has nothing left to apply, then gives its lease up so a
/// server on the same file takes over at once. Returns the changes applied.
pub async fn run_to_idle(
    store: &Store,
    worker: Arc<dyn Worker>,
    feed: Arc<dyn socialite::store::ChangeFeed>,
) -> usize {
    let mut runner = Runner::new(
        worker,
        store.leases.clone(),
        feed,
        Arc::new(SystemClock),
        "bench",
        SETTINGS,
    );
    let mut applied = 0;
    loop {
        match runner.step().await.unwrap() {
            Step::Applied(n) => applied += n,
            Step::Rebuilt => {}
            Step::Idle => break,
            other => panic!("the bench's worker did not run: {other:?}"),
        }
    }
    runner.release().await.unwrap();
    applied
}

/// Runs `worker` on the event log (the aggregates' feed) until it is caught up.
pub async fn run_on_events(store: &Store, worker: Arc<dyn Worker>) -> usize {
    run_to_idle(
        store,
        worker,
        Arc::new(EventFeed::new(store.events.clone())),
    )
    .await
}

/// Counts the event log's tags with the product's aggregates worker, up to its end.
pub async fn aggregate(store: &Store) -> usize {
    let worker = AggregatesWorker::new(store.trends.clone(), Arc::new(SystemClock));
    run_on_events(store, Arc::new(worker)).await
}

/// Turns every change so far into the event log, as the server's events worker would.
pub async fn build_event_log(store: &Store) -> usize {
    let worker = Arc::new(EventsWorker::new(
        store.events.clone(),
        EventsConfig::default().bounds(),
        None,
    ));
    run_to_idle(store, worker, store.change_feed.clone()).await
}

pub fn percentile(sorted: &[f64], p: f64) -> f64 {
    let at = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[at.min(sorted.len() - 1)]
}

/// (p50, p99) of `samples`.
pub fn summary(mut samples: Vec<f64>) -> (f64, f64) {
    samples.sort_by(f64::total_cmp);
    (percentile(&samples, 0.5), percentile(&samples, 0.99))
}

/// A consistent copy of a closed or open SQLite file, as a fresh start for one arm.
pub fn copy_db(from: &std::path::Path, to: &std::path::Path) {
    let _ = std::fs::remove_file(to);
    let conn = rusqlite::Connection::open(from).unwrap();
    conn.execute("VACUUM INTO ?1", [to.to_str().unwrap()])
        .unwrap();
}
