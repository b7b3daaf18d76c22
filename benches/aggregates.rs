//! Aggregate worker throughput on the embedded store: events applied per second while
//! catching up on a backlog of tagged `post.created` events, with
//! - **batched**: the real `AggregatesWorker`, one update per touched tag per batch (one
//!   transaction per batch), against
//! - **per event**: the same runner, feed, batches of events and `TrendStore::apply_tags`,
//!   but called once per event (one transaction per event, writing that event's tags):
//!   what the worker would do without batching the tag updates.
//!
//! Both arms read the same batches through the same `Runner` (lease, read, commit per
//! batch) on fresh copies of one backlog, with the server's durability
//! (`synchronous = full`), so the only difference is how the counts are written. Arms
//! alternate (A B, then B A, ...) and every round checks both arms end with the same
//! counts. Figures are ratios from one run: the machine is shared and noisy.
//!
//! `cargo bench --bench aggregates` (`AGG_EVENTS`, default 5000; `AGG_ROUNDS`, default 5).

#[allow(dead_code)]
mod common;

use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use async_trait::async_trait;
use socialite::domain::{Change, Event, EventId, Fence, now_ms};
use socialite::store::embedded::{EmbeddedStore, Synchronous};
use socialite::store::trends::{HOUR_MS, HOURS_KEPT};
use socialite::store::{Store, StoreError, StoreResult, TrendStore};
use socialite::workers::aggregates::{AggregatesWorker, NAME, tag_changes};
use socialite::workers::{SystemClock, Worker};

use common::{aggregate, build_event_log, copy_db, env, run_on_events, tagged_posts};

fn first_hour() -> i64 {
    now_ms().div_euclid(HOUR_MS) - (HOURS_KEPT - 1)
}

/// The comparison arm: one `apply_tags` (one transaction) per event.
struct PerEvent {
    trends: Arc<dyn TrendStore>,
}

#[async_trait]
impl Worker for PerEvent {
    fn name(&self) -> &'static str {
        NAME
    }

    async fn apply(&self, changes: &[Change], fence: &Fence) -> StoreResult<()> {
        let from_hour = first_hour();
        for change in changes {
            let doc = change.document.clone().unwrap_or_default();
            let event: Event =
                serde_json::from_value(doc).map_err(|e| StoreError::Poison(e.to_string()))?;
            self.trends
                .apply_tags(
                    fence,
                    EventId(change.seq),
                    &tag_changes(&event).unwrap(),
                    from_hour,
                )
                .await?;
        }
        Ok(())
    }

    async fn rebuild(&self, _fence: &Fence) -> StoreResult<()> {
        panic!("the backlog starts after a watermark: no rebuild expected")
    }
}

fn open(path: &Path, synchronous: Synchronous) -> Store {
    Store::new(Arc::new(EmbeddedStore::open(path, synchronous).unwrap()))
}

/// Seconds for one arm to apply the backlog on a fresh copy, and its top tags.
async fn arm(backlog: &Path, copy: &Path, batched: bool) -> (f64, Vec<(String, u64)>) {
    copy_db(backlog, copy);
    let store = open(copy, Synchronous::Full);
    let worker: Arc<dyn Worker> = if batched {
        Arc::new(AggregatesWorker::new(
            store.trends.clone(),
            Arc::new(SystemClock),
        ))
    } else {
        Arc::new(PerEvent {
            trends: store.trends.clone(),
        })
    };
    let started = Instant::now();
    run_on_events(&store, worker).await;
    let seconds = started.elapsed().as_secs_f64();
    let top = store.trends.top_tags(first_hour(), 100).await.unwrap();
    (seconds, top)
}

#[tokio::main]
async fn main() {
    let events = env("AGG_EVENTS", 5_000);
    let rounds = env("AGG_ROUNDS", 5);
    let dir = tempfile::tempdir().unwrap();
    let backlog = dir.path().join("backlog.db");
    {
        let store = open(&backlog, Synchronous::Normal);
        // The watermark first (a rebuild of nothing), so every post below is a backlog
        // event for the worker rather than part of a first-start rebuild.
        aggregate(&store).await;
        // Spread over the 7 days kept, so batches touch many (tag, hour) rows.
        tagged_posts(&store, events, (HOURS_KEPT - 1) * HOUR_MS, now_ms()).await;
        let logged = build_event_log(&store).await;
        eprintln!("backlog: {events} tagged posts, {logged} changes turned into events");
    }
    let (mut batched, mut single) = (Vec::new(), Vec::new());
    for round in 0..rounds {
        let order = if round % 2 == 0 {
            [true, false]
        } else {
            [false, true]
        };
        let mut tops = Vec::new();
        for is_batched in order {
            let copy = dir.path().join(format!("arm-{round}-{is_batched}.db"));
            let (seconds, top) = arm(&backlog, &copy, is_batched).await;
            let _ = std::fs::remove_file(&copy);
            println!(
                "round {} {:<9} {:>9.0} events/s",
                round + 1,
                if is_batched { "batched" } else { "per-event" },
                events as f64 / seconds
            );
            if is_batched {
                &mut batched
            } else {
                &mut single
            }
            .push(seconds);
            tops.push(top);
        }
        assert_eq!(tops[0], tops[1], "both arms must count the same");
        assert!(!tops[0].is_empty(), "the backlog made counts");
        println!(
            "round {} speed-up {:.1}x",
            round + 1,
            single[round] / batched[round]
        );
    }
    // Every event of every round over the arm's total time: a slow round weighs in full.
    let rate = |v: &[f64]| (events * v.len()) as f64 / v.iter().sum::<f64>();
    let (b, s) = (rate(&batched), rate(&single));
    println!();
    println!("| arm ({events} events, batches of 500, synchronous = full) | events/s |");
    println!("|---|---:|");
    println!("| batched: one update per touched tag per batch | {b:.0} |");
    println!("| per event: one update per event | {s:.0} |");
    println!();
    println!(
        "speed-up of batched tag updates: {:.1}x (total time over {rounds} alternating rounds)",
        b / s
    );
}
