//! The worker runtime, driven one `step()` at a time with a manual clock and fault points,
//! on every backend: lease races, take-over and fencing (the design's Fig. 3), commit
//! discipline across crashes, and bootstrap from the oldest change.
//!
//! This file holds the shared runner settings and helpers, the lag a worker reports and
//! the server's `/v1/workers`; leases, take-over and fencing are in `workers/lease.rs`,
//! and recovery (crashes, bootstrap, lost history, poison changes) in
//! `workers/recovery.rs`.

mod common;
#[path = "workers/lease.rs"]
mod lease;
#[path = "workers/recovery.rs"]
mod recovery;

use std::sync::Arc;

use common::{create_user, fresh_store, kinds};
use socialite::domain::{ActivityLimits, ActivityType, now_ms};
use socialite::store::Store;
use socialite::workers::activity::{ActivityWorker, NAME};
use socialite::workers::{ManualClock, Runner, RunnerSettings, Step};

const TTL: i64 = 10_000;
const SETTINGS: RunnerSettings = RunnerSettings {
    lease_ttl_ms: TTL,
    batch_size: 100,
    refresh_ms: 1_000,
};

async fn post(store: &Store, author: &str, text: &str) -> String {
    store
        .content
        .insert_post(author, text, None, now_ms())
        .await
        .unwrap()
        .post
        .id
        .to_string()
}

fn runner(store: &Store, clock: &Arc<ManualClock>, holder: &str) -> Runner {
    let worker = Arc::new(ActivityWorker::new(
        store.activity.clone(),
        ActivityLimits::default(),
    ));
    Runner::new(
        worker,
        store.leases.clone(),
        store.change_feed.clone(),
        clock.clone(),
        holder,
        SETTINGS,
    )
}

/// The references of `user`'s activity log, newest first.
async fn log(store: &Store, user: &str) -> Vec<(ActivityType, String)> {
    store
        .activity
        .activities(user, 0, 100)
        .await
        .unwrap()
        .items
        .into_iter()
        .map(|a| (a.kind, a.reference))
        .collect()
}

/// The lag in changes after each step: exact where the feed can count what waits (the
/// embedded store), at least one behind a full batch otherwise, and 0 once caught up;
/// and the delay from a change's write to its application.
#[tokio::test]
async fn the_lag_in_changes_counts_what_waits() {
    for kind in kinds("the_lag_in_changes_counts_what_waits") {
        let t = fresh_store(kind).await;
        let store = &t.store;
        create_user(store, "lee").await;
        for i in 0..9 {
            post(store, "lee", &format!("post {i}")).await;
        }
        // Applied 5 s after they were written, as the delay reports.
        let clock = Arc::new(ManualClock::at(now_ms() + 5_000));
        let worker = Arc::new(ActivityWorker::new(
            store.activity.clone(),
            ActivityLimits::default(),
        ));
        let settings = RunnerSettings {
            batch_size: 4,
            ..SETTINGS
        };
        let feed = store.change_feed.clone();
        let mut runner = Runner::new(worker, store.leases.clone(), feed, clock, "a", settings);
        let mut lags = Vec::new();
        while let Step::Applied(_) = runner.step().await.unwrap() {
            let status = runner.status().lock().unwrap().clone();
            assert!(status.delay_seconds >= 5.0, "{kind:?}: {status:?}");
            lags.push(status.lag_changes);
        }
        // The step that found nothing left.
        let idle = runner.status().lock().unwrap().lag_changes;
        assert_eq!(idle, 0, "{kind:?}: {lags:?}");
        match kind {
            common::Kind::Embedded => assert_eq!(lags, vec![6, 2, 0], "{kind:?}"),
            // A full batch cannot tell whether more waits; the last one may be full
            // (posts, their counter updates and their settled claims: 28 changes).
            common::Kind::Mongo => {
                let (_, behind) = lags.split_last().unwrap();
                assert!(behind.iter().all(|l| *l >= 1), "{kind:?}: {lags:?}");
            }
        }
    }
}

/// The server runs its workers: a post reaches the activity log through the feed, and
/// `/v1/workers` shows the lease, its position and what was applied.
#[tokio::test]
async fn the_server_reports_its_workers() {
    for kind in kinds("the_server_reports_its_workers") {
        let server = common::TestServer::start(common::fresh_config(kind)).await;
        let api = server.api();
        api.user("eve").await;
        api.say("eve", "hello").await;
        server.settle().await;
        let (status, body) = api.get("/v1/workers").await;
        assert_eq!(status, reqwest::StatusCode::OK);
        let activity = body["workers"]
            .as_array()
            .unwrap()
            .iter()
            .find(|w| w["name"] == NAME)
            .cloned()
            .unwrap_or_else(|| panic!("{kind:?}: no activity worker in {body}"));
        assert_eq!(activity["held_here"], true, "{kind:?}: {activity}");
        assert!(activity["holder"].is_string() && activity["version"].as_u64().unwrap() > 0);
        assert!(activity["position"].is_string(), "{kind:?}: {activity}");
        assert!(
            activity["processed"].as_u64().unwrap() >= 2,
            "{kind:?}: the user and the post"
        );
        assert_eq!(activity["lag_seconds"], 0.0);
        assert_eq!(activity["lag_changes"], 0);
        server.stop().await;
        // Stopping released the lease for the next process.
    }
}
