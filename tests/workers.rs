//! The worker runtime, driven one `step()` at a time with a manual clock and fault points,
//! on every backend: lease races, take-over and fencing (the design's Fig. 3), commit
//! discipline across crashes, and bootstrap from the oldest change.

mod common;

use std::sync::Arc;

use async_trait::async_trait;
use common::{create_user, fresh_store, kinds};
use socialite::domain::{ActivityLimits, ActivityType, now_ms};
use socialite::store::{Store, StoreError, StoreResult};
use socialite::workers::activity::{ActivityWorker, NAME};
use socialite::workers::{Clock, Hooks, ManualClock, Point, Runner, RunnerSettings, Step};
use tokio::sync::Notify;

const TTL: i64 = 10_000;
const SETTINGS: RunnerSettings = RunnerSettings {
    lease_ttl_ms: TTL,
    batch_size: 100,
    refresh_ms: 1_000,
};

async fn post(store: &Store, author: &str, text: &str) -> String {
    store
        .content
        .insert_post(author, text, now_ms())
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

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn exactly_one_of_two_racing_listeners_gets_a_fresh_lease() {
    for kind in kinds("exactly_one_of_two_racing_listeners_gets_a_fresh_lease") {
        let t = fresh_store(kind).await;
        for round in 0..100 {
            let name = format!("race{round}");
            let barrier = Arc::new(tokio::sync::Barrier::new(2));
            let tasks: Vec<_> = ["a", "b"]
                .into_iter()
                .map(|holder| {
                    let (leases, barrier, name) =
                        (t.store.leases.clone(), barrier.clone(), name.clone());
                    tokio::spawn(async move {
                        barrier.wait().await;
                        leases.acquire(&name, holder, 1_000, TTL).await.unwrap()
                    })
                })
                .collect();
            let mut winners = Vec::new();
            for (task, holder) in tasks.into_iter().zip(["a", "b"]) {
                let lease = task.await.unwrap();
                if lease.held_by(holder) {
                    winners.push(holder);
                }
            }
            assert_eq!(winners.len(), 1, "{kind:?} round {round}: {winners:?}");
        }
    }
}

#[tokio::test]
async fn leases_refresh_take_over_and_refuse_the_old_holder() {
    for kind in kinds("leases_refresh_take_over_and_refuse_the_old_holder") {
        let t = fresh_store(kind).await;
        let leases = &t.store.leases;
        let first = leases.acquire("w", "a", 1_000, TTL).await.unwrap();
        assert!(first.held_by("a"), "{kind:?}");
        // The owner refreshes and keeps it, at the same version.
        let again = leases.acquire("w", "a", 5_000, TTL).await.unwrap();
        assert!(
            again.held_by("a") && again.version == first.version,
            "{kind:?}"
        );
        assert!(
            leases
                .refresh("w", "a", first.version, 6_000, TTL)
                .await
                .unwrap()
        );
        // A rival cannot take it before it expires...
        assert!(
            !leases
                .acquire("w", "b", 10_000, TTL)
                .await
                .unwrap()
                .held_by("b")
        );
        // ...and takes it over, at a higher version, once it has.
        let taken = leases.acquire("w", "b", 16_001, TTL).await.unwrap();
        assert!(
            taken.held_by("b") && taken.version > first.version,
            "{kind:?}"
        );
        // The old owner's refresh and commit are refused from then on.
        assert!(
            !leases
                .refresh("w", "a", first.version, 16_002, TTL)
                .await
                .unwrap()
        );
        let position = socialite::domain::ChangePosition("1".into());
        assert!(
            !leases
                .commit("w", "a", first.version, &position, 16_003, TTL)
                .await
                .unwrap()
        );
        // Release keeps the version; the next holder gets a higher one at once.
        leases.release("w", "b", taken.version).await.unwrap();
        let next = leases.acquire("w", "a", 16_004, TTL).await.unwrap();
        assert!(
            next.held_by("a") && next.version > taken.version,
            "{kind:?}"
        );
        assert!(
            !leases
                .commit("w", "b", taken.version, &position, 16_005, TTL)
                .await
                .unwrap()
        );
    }
}

/// Pauses a step at `Read` until released.
struct PauseAtRead {
    paused: Notify,
    resume: Notify,
}

#[async_trait]
impl Hooks for PauseAtRead {
    async fn at(&self, _worker: &str, point: Point) -> StoreResult<()> {
        if point == Point::Read {
            self.paused.notify_one();
            self.resume.notified().await;
        }
        Ok(())
    }
}

/// Fig. 3: A reads a change and pauses; its lease expires; B takes over and applies that
/// change and a newer one; A resumes, its write is refused, it stops, and the data holds
/// B's state.
#[tokio::test]
async fn a_paused_holder_is_fenced_off_after_a_take_over() {
    for kind in kinds("a_paused_holder_is_fenced_off_after_a_take_over") {
        let t = fresh_store(kind).await;
        let store = &t.store;
        let clock = Arc::new(ManualClock::at(now_ms()));
        common::create_user(store, "ann").await;
        let first = post(store, "ann", "first").await;

        let hooks = Arc::new(PauseAtRead {
            paused: Notify::new(),
            resume: Notify::new(),
        });
        let mut a = runner(store, &clock, "A").with_hooks(hooks.clone());
        let paused_a = tokio::spawn(async move {
            let step = a.step().await;
            (a, step)
        });
        hooks.paused.notified().await;

        clock.advance(TTL + 1);
        let second = post(store, "ann", "second").await;
        let mut b = runner(store, &clock, "B");
        let mut applied = 0;
        while let Step::Applied(n) = b.step().await.unwrap() {
            applied += n;
        }
        assert!(applied >= 2, "{kind:?}: B applied both posts");

        hooks.resume.notify_one();
        let (mut a, step) = paused_a.await.unwrap();
        assert_eq!(step.unwrap(), Step::LostLease, "{kind:?}: A stops");
        assert_eq!(
            log(store, "ann").await,
            vec![
                (ActivityType::Post, second.clone()),
                (ActivityType::Post, first.clone())
            ],
            "{kind:?}: B's state, each post once"
        );
        let lease = &store.leases.leases().await.unwrap()[0];
        assert!(lease.held_by("B"), "{kind:?}");
        // A, back to acquiring, stands by while B holds the lease.
        assert_eq!(a.step().await.unwrap(), Step::Standby, "{kind:?}");
    }
}

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
        match kind {
            common::Kind::Embedded => assert_eq!(lags, vec![6, 2, 0], "{kind:?}"),
            common::Kind::Mongo => {
                let (last, behind) = lags.split_last().unwrap();
                assert_eq!(*last, 0, "{kind:?}: {lags:?}");
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

/// What every log must hold when computed from scratch: (user, type, reference).
async fn from_scratch(store: &Store, users: &[&str]) -> Vec<(String, ActivityType, String)> {
    let mut all = Vec::new();
    for user in users {
        for post in store
            .content
            .posts_by_author(user, None, 1000)
            .await
            .unwrap()
        {
            all.push((user.to_string(), ActivityType::Post, post.id.to_string()));
        }
        for followee in store.graph.following(user, None, 1000).await.unwrap() {
            all.push((user.to_string(), ActivityType::Follow, followee));
        }
    }
    all.sort();
    all
}

async fn logged(store: &Store, users: &[&str]) -> Vec<(String, ActivityType, String)> {
    let mut all = Vec::new();
    for user in users {
        let page = store.activity.activities(user, 0, 1000).await.unwrap();
        let times: Vec<i64> = page.items.iter().map(|a| a.ts_ms).collect();
        assert!(
            times.windows(2).all(|w| w[0] >= w[1]),
            "{user}: newest first"
        );
        for a in page.items {
            all.push((user.to_string(), a.kind, a.reference));
        }
    }
    all.sort();
    all
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
        logged(store, &users).await,
        from_scratch(store, &users).await
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
        logged(store, &users).await,
        from_scratch(store, &users).await
    );
    // And it goes on from the head it took before the rebuild.
    post(store, "gus", "after").await;
    assert_eq!(worker.step().await.unwrap(), Step::Applied(1));
    assert_eq!(
        logged(store, &users).await,
        from_scratch(store, &users).await
    );
}

/// A worker whose batch hangs until released.
struct Hanging {
    inner: ActivityWorker,
    entered: Notify,
    release: Notify,
}

#[async_trait]
impl socialite::workers::Worker for Hanging {
    fn name(&self) -> &'static str {
        NAME
    }
    async fn apply(
        &self,
        changes: &[socialite::domain::Change],
        fence: &socialite::domain::Fence,
    ) -> StoreResult<()> {
        self.entered.notify_one();
        self.release.notified().await;
        self.inner.apply(changes, fence).await
    }
    async fn rebuild(&self, fence: &socialite::domain::Fence) -> StoreResult<()> {
        self.inner.rebuild(fence).await
    }
}

/// Scenario 9: while a batch is still being applied, the lease is refreshed on a timer;
/// once a refresh is refused (a rival took over), the batch stops at once, unapplied and
/// uncommitted.
#[tokio::test]
async fn a_batch_stands_down_when_its_lease_refresh_is_refused() {
    for kind in kinds("a_batch_stands_down_when_its_lease_refresh_is_refused") {
        let t = fresh_store(kind).await;
        let store = &t.store;
        let clock = Arc::new(ManualClock::at(now_ms()));
        common::create_user(store, "hal").await;
        post(store, "hal", "slow").await;
        let worker = Arc::new(Hanging {
            inner: ActivityWorker::new(store.activity.clone(), ActivityLimits::default()),
            entered: Notify::new(),
            release: Notify::new(),
        });
        let settings = RunnerSettings {
            refresh_ms: 5,
            ..SETTINGS
        };
        let mut a = Runner::new(
            worker.clone(),
            store.leases.clone(),
            store.change_feed.clone(),
            clock.clone(),
            "A",
            settings,
        );
        let stepping = tokio::spawn(async move { a.step().await });
        worker.entered.notified().await;
        // A's lease is taken from it while its batch hangs (released at its version, as
        // an operator would; a clock-driven expiry would race A's own refresh timer).
        let held = store.leases.leases().await.unwrap()[0].clone();
        assert!(held.held_by("A"), "{kind:?}");
        store.leases.release(NAME, "A", held.version).await.unwrap();
        let rival = store
            .leases
            .acquire(NAME, "B", clock.now_ms(), TTL)
            .await
            .unwrap();
        assert!(rival.held_by("B"), "{kind:?}");
        assert_eq!(
            stepping.await.unwrap().unwrap(),
            Step::LostLease,
            "{kind:?}"
        );
        assert!(
            log(store, "hal").await.is_empty(),
            "{kind:?}: nothing applied"
        );
        let lease = &store.leases.leases().await.unwrap()[0];
        assert_eq!(lease.position, None, "{kind:?}: nothing committed");
        worker.release.notify_one();
    }
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
