//! Hashtag aggregates driven one step at a time: incremental counts equal a count from
//! scratch after a random mix of posts and deletes; a rebuild holds the lock (type
//! `rebuild`) while posts keep arriving and the incremental worker stands by; a rebuild
//! killed mid-way is taken over once its lease expires, never by hand.

mod common;

use std::collections::BTreeMap;
use std::sync::Arc;

use common::faults::{CrashOnce, PauseAtRead};
use common::{event_log_kinds, fresh_store};
use rand::{RngExt, SeedableRng};
use socialite::domain::{Post, PostId, hashtags, now_ms};
use socialite::store::trends::{HOUR_MS, HOURS_KEPT};
use socialite::store::{LogBounds, Store};
use socialite::workers::aggregates::{
    AggregatesWorker, EventFeed, NAME, REBUILD_PREFIX, lock_type,
};
use socialite::workers::events::EventsWorker;
use socialite::workers::{ManualClock, Point, Runner, RunnerSettings, Step};

const TTL: i64 = 10_000;
const SETTINGS: RunnerSettings = RunnerSettings {
    lease_ttl_ms: TTL,
    batch_size: 50,
    refresh_ms: 1_000,
};
const BOUNDS: LogBounds = LogBounds {
    max_count: 100_000,
    max_bytes: 1 << 24,
};
const TAGS: [&str; 6] = ["rust", "go", "zig", "café", "日本", "x_1"];

fn events_runner(store: &Store, clock: &Arc<ManualClock>, bounds: LogBounds) -> Runner {
    let worker = Arc::new(EventsWorker::new(store.events.clone(), bounds, None));
    Runner::new(
        worker,
        store.leases.clone(),
        store.change_feed.clone(),
        clock.clone(),
        "p1",
        SETTINGS,
    )
}

fn aggregates_runner(store: &Store, clock: &Arc<ManualClock>, holder: &str) -> Runner {
    let worker = Arc::new(AggregatesWorker::new(store.trends.clone(), clock.clone()));
    let feed = Arc::new(EventFeed::new(store.events.clone()));
    Runner::new(
        worker,
        store.leases.clone(),
        feed,
        clock.clone(),
        holder,
        SETTINGS,
    )
}

/// Steps until the runner finds nothing to do; the steps it took, Standby excluded.
async fn drain(runner: &mut Runner) -> Vec<Step> {
    let mut steps = Vec::new();
    for _ in 0..10_000 {
        match runner.step().await.unwrap() {
            Step::Idle => return steps,
            Step::Standby => return vec![Step::Standby],
            step => steps.push(step),
        }
    }
    panic!("never idle");
}

/// Live posts by id, so the truth can be counted from scratch.
type Live = BTreeMap<PostId, Post>;

async fn random_posts(store: &Store, live: &mut Live, rng: &mut rand::rngs::StdRng, n: usize) {
    for _ in 0..n {
        if !live.is_empty() && rng.random_range(0..4) == 0 {
            let index = rng.random_range(0..live.len());
            let id = *live.keys().nth(index).unwrap();
            store.content.delete_post(id).await.unwrap();
            live.remove(&id);
            continue;
        }
        let mut text = String::from("post");
        for _ in 0..rng.random_range(0..4) {
            let tag = TAGS[rng.random_range(0..TAGS.len())];
            let case = if rng.random_range(0..2) == 0 {
                tag.to_uppercase()
            } else {
                tag.to_owned()
            };
            text.push_str(&format!(" #{case},"));
        }
        let post = store
            .content
            .insert_post("ann", &text, None, now_ms())
            .await
            .unwrap()
            .post;
        live.insert(post.id, post);
    }
}

/// Total and per-hour counts per tag, from the live posts.
fn truth(live: &Live) -> BTreeMap<String, (u64, BTreeMap<i64, u64>)> {
    let mut counts: BTreeMap<String, (u64, BTreeMap<i64, u64>)> = BTreeMap::new();
    for post in live.values() {
        for tag in hashtags(&post.text) {
            let entry = counts.entry(tag).or_default();
            entry.0 += 1;
            *entry
                .1
                .entry(post.created_at_ms().div_euclid(HOUR_MS))
                .or_default() += 1;
        }
    }
    counts
}

async fn assert_counts(store: &Store, live: &Live, context: &str) {
    let from_hour = now_ms().div_euclid(HOUR_MS) - (HOURS_KEPT - 1);
    let expected = truth(live);
    for tag in TAGS.map(|t| t.to_lowercase()) {
        let counts = store.trends.tag_counts(&tag, from_hour).await.unwrap();
        let (total, hours) = expected.get(&tag).cloned().unwrap_or_default();
        assert_eq!(counts.total, total, "{context}: total of #{tag}");
        let got: BTreeMap<i64, u64> = counts.hours.into_iter().collect();
        assert_eq!(got, hours, "{context}: hours of #{tag}");
    }
    let mut top: Vec<(String, u64)> = expected
        .iter()
        .map(|(tag, (_, hours))| (tag.clone(), hours.values().sum()))
        .collect();
    top.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    assert_eq!(
        store.trends.top_tags(from_hour, 10).await.unwrap(),
        top,
        "{context}: top tags"
    );
}

#[tokio::test]
async fn incremental_counts_equal_a_count_from_scratch() {
    for kind in event_log_kinds("incremental_counts_equal_a_count_from_scratch").await {
        let t = fresh_store(kind).await;
        let store = &t.store;
        store.events.prepare_log(BOUNDS).await.unwrap();
        common::create_user(store, "ann").await;
        let clock = Arc::new(ManualClock::at(now_ms()));
        let mut events = events_runner(store, &clock, BOUNDS);
        let mut aggregates = aggregates_runner(store, &clock, "p1");
        let mut rng = rand::rngs::StdRng::seed_from_u64(7);
        let mut live = Live::new();
        // First start: no watermark, so the worker counts from the posts once.
        random_posts(store, &mut live, &mut rng, 40).await;
        drain(&mut events).await;
        assert_eq!(drain(&mut aggregates).await.first(), Some(&Step::Rebuilt));
        let status = aggregates.status().lock().unwrap().clone();
        assert_eq!(
            (status.rebuilds, status.history_lost),
            (1, 0),
            "{kind:?}: a first start rebuilds but loses no history"
        );
        assert_counts(store, &live, &format!("{kind:?} after the first rebuild")).await;
        for round in 0..5 {
            random_posts(store, &mut live, &mut rng, 60).await;
            drain(&mut events).await;
            let steps = drain(&mut aggregates).await;
            assert!(
                steps.iter().all(|s| matches!(s, Step::Applied(_))),
                "{kind:?}: incremental, not rebuilt: {steps:?}"
            );
            assert_counts(store, &live, &format!("{kind:?} round {round}")).await;
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rebuild_while_posts_arrive_ends_at_the_truth_and_the_worker_stands_by() {
    for kind in event_log_kinds("a_rebuild_while_posts_arrive").await {
        let t = fresh_store(kind).await;
        let store = t.store.clone();
        store.events.prepare_log(BOUNDS).await.unwrap();
        common::create_user(&store, "ann").await;
        let clock = Arc::new(ManualClock::at(now_ms()));
        let mut events = events_runner(&store, &clock, BOUNDS);
        let mut aggregates = aggregates_runner(&store, &clock, "p1");
        let mut rng = rand::rngs::StdRng::seed_from_u64(11);
        let mut live = Live::new();
        random_posts(&store, &mut live, &mut rng, 50).await;
        drain(&mut events).await;
        drain(&mut aggregates).await;
        // The incremental worker hands the lock back (as on shutdown).
        aggregates.release().await.unwrap();

        let hooks = Arc::new(PauseAtRead::default());
        let holder = format!("{REBUILD_PREFIX}cli");
        let mut rebuild = aggregates_runner(&store, &clock, &holder).with_hooks(hooks.clone());
        let task = tokio::spawn(async move { rebuild.rebuild_once().await });
        hooks.paused.notified().await;

        // While the rebuild holds the lock, posts keep arriving, some logged as events
        // before its snapshot, some after it...
        random_posts(&store, &mut live, &mut rng, 25).await;
        drain(&mut events).await;
        random_posts(&store, &mut live, &mut rng, 25).await;
        // ...but the incremental worker does not run: the lock says rebuild.
        let processed = aggregates.status().lock().unwrap().processed;
        assert_eq!(aggregates.step().await.unwrap(), Step::Standby, "{kind:?}");
        let lease = store
            .leases
            .leases()
            .await
            .unwrap()
            .into_iter()
            .find(|l| l.name == NAME)
            .unwrap();
        assert_eq!(
            lock_type(lease.holder.as_deref().unwrap()),
            "rebuild",
            "{kind:?}: {lease:?}"
        );
        assert_eq!(aggregates.status().lock().unwrap().processed, processed);

        hooks.resume.notify_one();
        assert_eq!(task.await.unwrap().unwrap(), Step::Rebuilt, "{kind:?}");
        let lease = store
            .leases
            .leases()
            .await
            .unwrap()
            .into_iter()
            .find(|l| l.name == NAME)
            .unwrap();
        assert_eq!(
            lease.holder, None,
            "{kind:?}: the rebuild releases the lock"
        );
        let watermark = lease.position.clone().expect("the rebuild's watermark");

        // The worker continues from the rebuild's watermark (past events the snapshot
        // already counted, logged only now), through more posts.
        drain(&mut events).await;
        random_posts(&store, &mut live, &mut rng, 50).await;
        drain(&mut events).await;
        let steps = drain(&mut aggregates).await;
        assert!(
            steps.iter().all(|s| matches!(s, Step::Applied(_))),
            "{kind:?}: {steps:?}"
        );
        assert!(
            aggregates
                .status()
                .lock()
                .unwrap()
                .position
                .as_ref()
                .unwrap()
                .parse::<u64>()
                .unwrap()
                > watermark.0.parse::<u64>().unwrap()
        );
        assert_counts(
            &store,
            &live,
            &format!("{kind:?} after a rebuild under load"),
        )
        .await;
    }
}

#[tokio::test]
async fn a_rebuild_killed_mid_way_is_taken_over_after_its_lease_expires() {
    for kind in event_log_kinds("a_rebuild_killed_mid_way").await {
        for point in [Point::Read, Point::Applied] {
            let t = fresh_store(kind).await;
            let store = &t.store;
            store.events.prepare_log(BOUNDS).await.unwrap();
            common::create_user(store, "ann").await;
            let clock = Arc::new(ManualClock::at(now_ms()));
            let mut events = events_runner(store, &clock, BOUNDS);
            let mut aggregates = aggregates_runner(store, &clock, "p1");
            let mut rng = rand::rngs::StdRng::seed_from_u64(3);
            let mut live = Live::new();
            random_posts(store, &mut live, &mut rng, 30).await;
            drain(&mut events).await;
            drain(&mut aggregates).await;
            aggregates.release().await.unwrap();

            let hooks = Arc::new(CrashOnce::at(point));
            let holder = format!("{REBUILD_PREFIX}cli");
            let mut rebuild = aggregates_runner(store, &clock, &holder).with_hooks(hooks);
            let killed = rebuild.rebuild_once().await;
            assert!(killed.is_err(), "{kind:?} {point:?}: {killed:?}");
            drop(rebuild);

            random_posts(store, &mut live, &mut rng, 30).await;
            drain(&mut events).await;
            assert_eq!(
                aggregates.step().await.unwrap(),
                Step::Standby,
                "the dead rebuild still holds the lock"
            );
            clock.advance(TTL + 1);
            let steps = drain(&mut aggregates).await;
            assert!(
                steps.iter().all(|s| matches!(s, Step::Applied(_))) && !steps.is_empty(),
                "{kind:?} {point:?}: taken over by lease expiry: {steps:?}"
            );
            let lease = store
                .leases
                .leases()
                .await
                .unwrap()
                .into_iter()
                .find(|l| l.name == NAME)
                .unwrap();
            assert_eq!(lease.holder.as_deref(), Some("p1"));
            assert_counts(
                store,
                &live,
                &format!("{kind:?} after a rebuild killed at {point:?}"),
            )
            .await;
        }
    }
}

/// A deletion logged after its post's creation left the event log carries no tags: the
/// counts cannot follow it, so the worker rebuilds them (counted as history lost)
/// instead of leaving them above the truth for good.
#[tokio::test]
async fn a_deletion_whose_tags_left_the_log_makes_a_counted_rebuild() {
    for kind in event_log_kinds("a_deletion_whose_tags_left_the_log_makes_a_counted_rebuild").await
    {
        let t = fresh_store(kind).await;
        let store = &t.store;
        let bounds = LogBounds {
            max_count: 3,
            max_bytes: 4096,
        };
        store.events.prepare_log(bounds).await.unwrap();
        common::create_user(store, "ann").await;
        let clock = Arc::new(ManualClock::at(now_ms()));
        let mut events = events_runner(store, &clock, bounds);
        let mut aggregates = aggregates_runner(store, &clock, "p1");
        let mut live = Live::new();
        let first = store
            .content
            .insert_post("ann", "#rust first", None, now_ms())
            .await
            .unwrap()
            .post;
        live.insert(first.id, first.clone());
        // One post at a time, each counted at once, until the first one's creation is
        // trimmed from the log.
        for n in 0..1_000 {
            drain(&mut events).await;
            drain(&mut aggregates).await;
            if store
                .events
                .post_created_event(first.id)
                .await
                .unwrap()
                .is_none()
            {
                break;
            }
            assert!(n < 999, "{kind:?}: the log never trimmed");
            let post = store
                .content
                .insert_post("ann", &format!("#go {n}"), None, now_ms())
                .await;
            let post = post.unwrap().post;
            live.insert(post.id, post);
        }
        assert_counts(store, &live, &format!("{kind:?} before the deletion")).await;
        store.content.delete_post(first.id).await.unwrap();
        live.remove(&first.id);
        drain(&mut events).await;
        let steps = drain(&mut aggregates).await;
        assert!(steps.contains(&Step::Rebuilt), "{kind:?}: {steps:?}");
        let status = aggregates.status().lock().unwrap().clone();
        assert_eq!(status.history_lost, 1, "{kind:?}: the loss is counted");
        assert_counts(store, &live, &format!("{kind:?} after the deletion")).await;
    }
}
