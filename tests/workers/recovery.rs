//! Recovery: a crash before the commit replays without doubling, a first worker processes
//! everything written before it started, a worker whose history was trimmed away
//! rebuilds (and, fenced mid-way, is rebuilt by the next holder), and a poison change is
//! quarantined.

use std::sync::Arc;

use async_trait::async_trait;
use socialite::domain::{ActivityType, now_ms};
use socialite::store::{StoreError, StoreResult};
use socialite::workers::activity::NAME;
use socialite::workers::{Hooks, ManualClock, Point, Step};

use super::{log, post, runner};
use crate::common::{self, fresh_store, kinds};

/// Fails a step at one point, once.
struct CrashAt(Point, std::sync::atomic::AtomicBool);

#[async_trait]
impl Hooks for CrashAt {
    async fn at(&self, _worker: &str, point: Point) -> StoreResult<()> {
        if point == self.0 && self.1.swap(false, std::sync::atomic::Ordering::SeqCst) {
            return Err(StoreError::Backend(anyhow::anyhow!("crash at {point:?}")));
        }
        Ok(())
    }
}

#[tokio::test]
async fn a_crash_before_the_commit_replays_without_doubling_and_one_before_the_effect_loses_nothing()
 {
    for kind in kinds("a_crash_before_the_commit_replays_without_doubling") {
        for point in [Point::Applied, Point::Read] {
            let t = fresh_store(kind).await;
            let store = &t.store;
            let clock = Arc::new(ManualClock::at(now_ms()));
            common::create_user(store, "bo").await;
            let one = post(store, "bo", "one").await;
            let two = post(store, "bo", "two").await;
            let crash = Arc::new(CrashAt(point, true.into()));
            let mut worker = runner(store, &clock, "W").with_hooks(crash);
            assert!(
                worker.step().await.is_err(),
                "{kind:?} {point:?}: the crash"
            );
            let lease = &store.leases.leases().await.unwrap()[0];
            assert_eq!(
                lease.position, None,
                "{kind:?} {point:?}: nothing committed"
            );
            let expected_now = match point {
                Point::Applied => 2,
                Point::Read => 0,
            };
            assert_eq!(
                log(store, "bo").await.len(),
                expected_now,
                "{kind:?} {point:?}"
            );
            // The restarted step replays the batch: each post ends up in the log once.
            let mut restarted = runner(store, &clock, "W");
            while let Step::Applied(_) = restarted.step().await.unwrap() {}
            assert_eq!(
                log(store, "bo").await,
                vec![
                    (ActivityType::Post, two.clone()),
                    (ActivityType::Post, one.clone())
                ],
                "{kind:?} {point:?}"
            );
            assert!(store.leases.leases().await.unwrap()[0].position.is_some());
        }
    }
}

/// Figs. 4a/4b: writes made before any worker ever ran are all processed.
#[tokio::test]
async fn a_first_worker_processes_everything_written_before_it_started() {
    for kind in kinds("a_first_worker_processes_everything_written_before_it_started") {
        let t = fresh_store(kind).await;
        let store = &t.store;
        common::create_user(store, "cy").await;
        common::create_user(store, "di").await;
        let mut posts = Vec::new();
        for i in 0..30 {
            posts.push(post(store, "cy", &format!("early {i}")).await);
        }
        store.graph.follow("di", "cy", now_ms()).await.unwrap();
        let clock = Arc::new(ManualClock::at(now_ms()));
        let mut worker = runner(store, &clock, "W");
        let mut steps = 0;
        while let Step::Applied(_) = worker.step().await.unwrap() {
            steps += 1;
        }
        assert!(steps >= 1, "{kind:?}");
        let logged: Vec<String> = log(store, "cy").await.into_iter().map(|(_, r)| r).collect();
        posts.reverse();
        assert_eq!(logged, posts, "{kind:?}: every early post, newest first");
        assert_eq!(
            log(store, "di").await,
            vec![(ActivityType::Follow, "cy".to_owned())]
        );
        let _ = NAME;
    }
}

/// The embedded trimmer keeps what a lagging worker still needs, up to the hard cutoff;
/// past it the worker finds its history lost, rebuilds, and its data equals a
/// from-scratch computation. (MongoDB's retention is the oplog's.)
#[tokio::test]
async fn trimming_waits_for_lagging_workers_and_history_lost_rebuilds() {
    let t = fresh_store(common::Kind::Embedded).await;
    let store = &t.store;
    let users = ["fay", "gus"];
    for u in users {
        common::create_user(store, u).await;
    }
    let clock = Arc::new(ManualClock::at(now_ms()));
    let mut worker = runner(store, &clock, "W");
    post(store, "fay", "one").await;
    while let Step::Applied(_) = worker.step().await.unwrap() {}

    // Newer changes the worker has not applied yet survive an age-based trim.
    store.graph.follow("gus", "fay", now_ms()).await.unwrap();
    post(store, "fay", "two").await;
    let far_future = now_ms() + 60_000;
    store.change_feed.trim_changes(far_future, 0).await.unwrap();
    assert!(matches!(worker.step().await.unwrap(), Step::Applied(2)));
    assert_eq!(
        common::activity_logged(store, &users).await,
        common::activity_from_scratch(store, &users).await
    );

    // Past the hard cutoff they go anyway: the worker rebuilds from the sources.
    post(store, "fay", "three").await;
    store.graph.follow("fay", "gus", now_ms()).await.unwrap();
    let dropped = store
        .change_feed
        .trim_changes(far_future, far_future)
        .await
        .unwrap();
    assert!(dropped >= 2);
    assert_eq!(worker.step().await.unwrap(), Step::Rebuilt);
    let status = worker.status().lock().unwrap().clone();
    assert_eq!(
        (status.rebuilds, status.history_lost),
        (1, 1),
        "a loss, counted"
    );
    assert_eq!(
        common::activity_logged(store, &users).await,
        common::activity_from_scratch(store, &users).await
    );
    // And it goes on from the head it took before the rebuild.
    post(store, "gus", "after").await;
    assert_eq!(worker.step().await.unwrap(), Step::Applied(1));
    assert_eq!(
        common::activity_logged(store, &users).await,
        common::activity_from_scratch(store, &users).await
    );
}

/// A holder that finds its history lost and loses its lease before its rebuild commits
/// counts the loss but not the rebuild; the next holder finds the same lost position
/// (nothing moved it), rebuilds and counts both. So summed over processes,
/// `history_lost` may exceed the history-lost rebuilds (the soak of 2026-11-28: 14
/// against 13) while no loss goes without a rebuild.
#[tokio::test]
async fn a_rebuild_for_lost_history_fenced_mid_way_is_done_by_the_next_holder() {
    let t = fresh_store(common::Kind::Embedded).await;
    let store = &t.store;
    let users = ["hal", "ida"];
    for u in users {
        common::create_user(store, u).await;
    }
    let clock = Arc::new(ManualClock::at(now_ms()));
    let mut first = runner(store, &clock, "fenced-rebuilder");
    post(store, "hal", "one").await;
    while let Step::Applied(_) = first.step().await.unwrap() {}
    store.graph.follow("ida", "hal", now_ms()).await.unwrap();
    post(store, "hal", "two").await;
    let far_future = now_ms() + 60_000;
    let dropped = store.change_feed.trim_changes(far_future, far_future);
    assert!(dropped.await.unwrap() >= 2);

    // The first holder finds its history lost and is held before it rebuilds.
    let gate = socialite::faults::hold("worker.history_lost", "fenced-rebuilder");
    let held = tokio::spawn(async move {
        let step = first.step().await;
        (first, step)
    });
    tokio::time::timeout(std::time::Duration::from_secs(10), gate.reached.notified())
        .await
        .expect("the first holder reaches the rebuild");
    // Its lease runs out; the next holder takes it over, from the same lost position.
    clock.advance(super::TTL + 1);
    let mut next = runner(store, &clock, "next-rebuilder");
    assert_eq!(next.step().await.unwrap(), Step::Rebuilt);
    gate.release.notify_one();
    let (first, step) = held.await.unwrap();
    assert_eq!(
        step.unwrap(),
        Step::LostLease,
        "the fenced rebuild commits nothing"
    );
    let counted = |r: &socialite::workers::Runner| {
        let status = r.status().lock().unwrap().clone();
        (status.history_lost, status.rebuilds)
    };
    assert_eq!(counted(&first), (1, 0), "the loss, without its rebuild");
    assert_eq!(counted(&next), (1, 1), "the loss, rebuilt");
    assert_eq!(
        common::activity_logged(store, &users).await,
        common::activity_from_scratch(store, &users).await
    );
    // The next holder goes on from the head it rebuilt to.
    post(store, "ida", "after").await;
    assert_eq!(next.step().await.unwrap(), Step::Applied(1));
}

/// Scenario 16: a change that can never be applied (here a malformed post document,
/// written past the ports) is quarantined with an alert; the changes around it apply and
/// the feed moves on, instead of retrying it for ever.
#[tokio::test]
async fn a_poison_change_is_quarantined_and_the_feed_moves_on() {
    let t = fresh_store(common::Kind::Embedded).await;
    let store = &t.store;
    common::create_user(store, "ivy").await;
    let before = post(store, "ivy", "before").await;
    let file = t.embedded_file().unwrap();
    let raw = rusqlite::Connection::open(&file).unwrap();
    raw.execute(
        "INSERT INTO changes (ts, coll, op, key, doc) VALUES (?1, 'posts', 'insert', 'junk', '{\"not\": \"a post\"}')",
        [now_ms()],
    )
    .unwrap();
    drop(raw);
    let after = post(store, "ivy", "after").await;

    let clock = Arc::new(ManualClock::at(now_ms()));
    let mut worker = runner(store, &clock, "W");
    while let Step::Applied(_) = worker.step().await.unwrap() {}
    assert_eq!(
        log(store, "ivy").await,
        vec![(ActivityType::Post, after), (ActivityType::Post, before)],
        "the changes around the poison apply"
    );
    let status = worker.status().lock().unwrap().clone();
    assert_eq!(status.quarantined, 1);
    assert!(status.position.is_some());
    // Nothing left: the poison is not retried.
    assert_eq!(worker.step().await.unwrap(), Step::Idle);
}
