//! The event log, on every backend that can keep one: one event per change in feed
//! order across a crash and replay, bounded size, `PositionLost` behind the trim and
//! past the newest event, and batched tail readers that block at the head.

mod common;

use std::sync::Arc;

use common::faults::{CRASH, CrashOnce};
use common::{event_log_kinds, fresh_store};
use futures::FutureExt;
use serde_json::json;
use socialite::domain::{ChangeOp, Event, EventId, EventType, Fence, now_ms};
use socialite::events::EventReader;
use socialite::store::{LogBounds, Store, StoreError};
use socialite::workers::events::{EventsWorker, NAME};
use socialite::workers::{Hooks, ManualClock, Point, Runner, RunnerSettings, Step};

const SETTINGS: RunnerSettings = RunnerSettings {
    lease_ttl_ms: 10_000,
    batch_size: 4,
    refresh_ms: 1_000,
};
const POLL: std::time::Duration = std::time::Duration::from_millis(100);

fn bounds(max_count: u64) -> LogBounds {
    LogBounds {
        max_count,
        max_bytes: 1 << 20,
    }
}

fn runner(store: &Store, holder: &str, hooks: Arc<dyn Hooks>) -> Runner {
    let worker = Arc::new(EventsWorker::new(store.events.clone(), bounds(1000), None));
    Runner::new(
        worker,
        store.leases.clone(),
        store.change_feed.clone(),
        Arc::new(ManualClock::at(now_ms())),
        holder,
        SETTINGS,
    )
    .with_hooks(hooks)
}

async fn drain(runner: &mut Runner) {
    for _ in 0..1000 {
        match runner.step().await {
            Ok(Step::Idle) => return,
            Ok(_) => {}
            Err(error) if error.to_string().contains(CRASH) => {}
            Err(error) => panic!("step failed: {error}"),
        }
    }
    panic!("the worker never caught up");
}

async fn all_events(store: &Store) -> Vec<Event> {
    store.events.events_after(None, 10_000).await.unwrap()
}

/// A lease held by `holder`, as a fence for direct appends.
async fn fence(store: &Store, holder: &str) -> Fence {
    let lease = store
        .leases
        .acquire(NAME, holder, now_ms(), 60_000)
        .await
        .unwrap();
    Fence {
        lease: NAME.to_owned(),
        holder: holder.to_owned(),
        version: lease.version,
    }
}

fn synthetic(ids: std::ops::RangeInclusive<u64>) -> Vec<Event> {
    ids.map(|id| Event {
        id: EventId(id),
        kind: EventType::PostLiked,
        at_ms: now_ms(),
        payload: json!({ "user": "u", "post": id.to_string() }),
    })
    .collect()
}

#[tokio::test]
async fn every_change_becomes_exactly_one_event_in_feed_order_across_crashes() {
    for kind in event_log_kinds("every_change_becomes_exactly_one_event").await {
        for point in [Point::Applied, Point::Read] {
            let t = fresh_store(kind).await;
            let store = &t.store;
            store.events.prepare_log(bounds(1000)).await.unwrap();
            for user in ["ann", "bob"] {
                common::create_user(store, user).await;
            }
            store.graph.follow("ann", "bob", now_ms()).await.unwrap();
            let first = store
                .content
                .insert_post("bob", "hello #Rust #rust #go", None, now_ms())
                .await
                .unwrap()
                .post;
            store
                .activity
                .like("ann", first.id, now_ms())
                .await
                .unwrap();
            store.users.rename_user("bob", "Robert").await.unwrap();
            store.graph.unfollow("ann", "bob").await.unwrap();
            store.content.delete_post(first.id).await.unwrap();

            // Crash once (after the append, or before it), then carry on.
            let hooks = Arc::new(CrashOnce::at(point));
            let mut worker = runner(store, "w1", hooks);
            drain(&mut worker).await;
            let events = all_events(store).await;

            let kinds: Vec<EventType> = events.iter().map(|e| e.kind).collect();
            assert_eq!(
                kinds,
                [
                    EventType::UserFollowed,
                    EventType::PostCreated,
                    EventType::PostLiked,
                    EventType::UserRenamed,
                    EventType::UserUnfollowed,
                    EventType::PostDeleted,
                ],
                "{kind:?} crash at {point:?}: one event per change, in feed order"
            );
            assert!(events.windows(2).all(|w| w[0].id < w[1].id), "ids increase");
            // Each id is its change's seq.
            let changes = store.change_feed.changes(None, 1000).await.unwrap();
            for event in &events {
                assert!(
                    changes.iter().any(|c| c.seq == event.id.0),
                    "{kind:?}: event {} has a change of the same seq",
                    event.id
                );
            }
            let created = &events[1];
            assert_eq!(created.payload["tags"], json!(["rust", "go"]));
            let deleted = &events[5];
            assert_eq!(
                deleted.payload["author"], "bob",
                "a deletion names its author"
            );
            assert_eq!(deleted.payload["tags"], json!(["rust", "go"]));
            assert_eq!(events[3].payload["display_name"], "Robert");
            assert!(
                changes
                    .iter()
                    .filter(|c| c.collection == "users" && c.op == ChangeOp::Update)
                    .count()
                    == 1,
                "{kind:?}: counter updates are not renames"
            );
        }
    }
}

#[tokio::test]
async fn a_replayed_append_adds_nothing() {
    for kind in event_log_kinds("a_replayed_append_adds_nothing").await {
        let t = fresh_store(kind).await;
        let store = &t.store;
        store.events.prepare_log(bounds(1000)).await.unwrap();
        let fence = fence(store, "w").await;
        assert_eq!(
            store
                .events
                .append(&fence, &synthetic(1..=5), bounds(1000))
                .await
                .unwrap(),
            5
        );
        assert_eq!(
            store
                .events
                .append(&fence, &synthetic(3..=8), bounds(1000))
                .await
                .unwrap(),
            3
        );
        let ids: Vec<u64> = all_events(store).await.iter().map(|e| e.id.0).collect();
        assert_eq!(ids, (1..=8).collect::<Vec<_>>());
        // A holder that lost the lease appends nothing.
        let stale = Fence {
            version: fence.version + 7,
            ..fence
        };
        let refused = store
            .events
            .append(&stale, &synthetic(9..=9), bounds(1000))
            .await;
        assert!(matches!(refused, Err(StoreError::Fenced(_))), "{refused:?}");
    }
}

/// A position past the newest event: to `events_after` (a worker's watermark may be a
/// change ahead of the log) simply the end, even above `i64::MAX` (it wrapped to -1
/// once); to `events_after_issued` (a client's position) an id never issued, lost.
#[tokio::test]
async fn a_position_past_the_newest_event_was_never_issued() {
    for kind in event_log_kinds("a_position_past_the_newest_event_was_never_issued").await {
        let t = fresh_store(kind).await;
        let events = &t.store.events;
        events.prepare_log(bounds(100)).await.unwrap();
        let beyond_i64 = i64::MAX as u64 + 1;
        let issued = |after: u64| events.events_after_issued(Some(EventId(after)), 100);
        assert!(
            issued(0).await.unwrap().is_empty(),
            "{kind:?}: 0 is the start"
        );
        let lost = issued(1).await;
        assert!(
            matches!(&lost, Err(StoreError::PositionLost(why)) if why.contains("never issued")),
            "{kind:?}: {lost:?}"
        );
        let fence = fence(&t.store, "w").await;
        events
            .append(&fence, &synthetic(1..=8), bounds(100))
            .await
            .unwrap();
        for after in [9, beyond_i64, u64::MAX] {
            let read = events.events_after(Some(EventId(after)), 100).await;
            assert!(
                read.as_ref().is_ok_and(Vec::is_empty),
                "{kind:?} {after}: {read:?}"
            );
            let lost = issued(after).await;
            assert!(
                matches!(&lost, Err(StoreError::PositionLost(why)) if why.contains("never issued")),
                "{kind:?} {after}: {lost:?}"
            );
        }
        assert!(issued(8).await.unwrap().is_empty(), "{kind:?}: the head");
        assert_eq!(issued(3).await.unwrap().len(), 5, "{kind:?}");
    }
}

#[tokio::test]
async fn trimming_bounds_the_log_and_a_reader_behind_it_gets_position_lost() {
    // Bounded by count: the embedded store (MongoDB's bound is in bytes, by the server).
    let t = fresh_store(common::Kind::Embedded).await;
    let store = &t.store;
    let fence = fence(store, "w").await;
    for chunk in 0..10 {
        let from = chunk * 10 + 1;
        store
            .events
            .append(&fence, &synthetic(from..=from + 9), bounds(25))
            .await
            .unwrap();
        assert!(
            all_events(store).await.len() <= 25,
            "never more than max_count"
        );
    }
    let kept = all_events(store).await;
    assert_eq!(kept.len(), 25);
    assert_eq!(kept[0].id, EventId(76), "the oldest went first");
    // Reading from the oldest kept event's predecessor is fine; from further back is not.
    assert_eq!(
        store
            .events
            .events_after(Some(EventId(75)), 100)
            .await
            .unwrap()
            .len(),
        25
    );
    let lost = store.events.events_after(Some(EventId(10)), 100).await;
    assert!(matches!(lost, Err(StoreError::PositionLost(_))), "{lost:?}");
    let mut reader = EventReader::open(store.events.clone(), Some(EventId(74)), 10, POLL);
    let lost = reader.next_batch().await;
    assert!(matches!(lost, Err(StoreError::PositionLost(_))), "{lost:?}");
    // A replay of trimmed events does not bring them back.
    store
        .events
        .append(&fence, &synthetic(1..=5), bounds(25))
        .await
        .unwrap();
    assert_eq!(all_events(store).await[0].id, EventId(76));
}

#[tokio::test]
async fn a_reader_falling_behind_the_trim_while_following_gets_position_lost() {
    let t = fresh_store(common::Kind::Embedded).await;
    let store = &t.store;
    let fence = fence(store, "w").await;
    store
        .events
        .append(&fence, &synthetic(1..=3), bounds(5))
        .await
        .unwrap();
    let mut reader = EventReader::open(store.events.clone(), None, 2, POLL);
    let first = reader.next_batch().await.unwrap();
    assert_eq!(first.len(), 2, "two of three, the third still unread");
    // Before the reader reads on, the log moves well past what it has read.
    store
        .events
        .append(&fence, &synthetic(4..=20), bounds(5))
        .await
        .unwrap();
    let mut seen: Vec<u64> = first.iter().map(|e| e.id.0).collect();
    let lost = loop {
        match reader.next_batch().await {
            Ok(batch) => seen.extend(batch.iter().map(|e| e.id.0)),
            Err(error) => break error,
        }
    };
    assert!(matches!(lost, StoreError::PositionLost(_)), "{lost:?}");
    assert!(
        seen.windows(2).all(|w| w[1] == w[0] + 1),
        "no silent skip before the error: {seen:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reader_at_the_head_blocks_then_takes_a_burst_as_one_batch() {
    for kind in event_log_kinds("a_reader_at_the_head_blocks").await {
        let t = fresh_store(kind).await;
        let store = &t.store;
        store.events.prepare_log(bounds(1000)).await.unwrap();
        let fence = fence(store, "w").await;
        store
            .events
            .append(&fence, &synthetic(1..=3), bounds(1000))
            .await
            .unwrap();
        let head = store.events.newest_event().await.unwrap();
        let mut reader = EventReader::open(store.events.clone(), head, 500, POLL);
        {
            let mut waiting = Box::pin(reader.next_batch());
            for _ in 0..20 {
                tokio::task::yield_now().await;
                assert!(
                    (&mut waiting).now_or_never().is_none(),
                    "{kind:?}: a reader at the head waits"
                );
            }
        }
        store
            .events
            .append(&fence, &synthetic(4..=53), bounds(1000))
            .await
            .unwrap();
        let mut got = reader.next_batch().await.unwrap();
        if kind == common::Kind::Embedded {
            assert_eq!(got.len(), 50, "the burst is one batch");
        }
        while got.len() < 50 {
            got.extend(reader.next_batch().await.unwrap());
        }
        let ids: Vec<u64> = got.iter().map(|e| e.id.0).collect();
        assert_eq!(ids, (4..=53).collect::<Vec<_>>(), "{kind:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn batches_stay_within_batch_max_and_in_order() {
    for kind in event_log_kinds("batches_stay_within_batch_max").await {
        let t = fresh_store(kind).await;
        let store = &t.store;
        store.events.prepare_log(bounds(5000)).await.unwrap();
        let fence = fence(store, "w").await;
        store
            .events
            .append(&fence, &synthetic(1..=1000), bounds(5000))
            .await
            .unwrap();
        let mut reader = EventReader::open(store.events.clone(), None, 64, POLL);
        let mut ids = Vec::new();
        let mut largest = 0;
        while ids.len() < 1000 {
            let batch = reader.next_batch().await.unwrap();
            assert!(
                !batch.is_empty() && batch.len() <= 64,
                "{kind:?}: {}",
                batch.len()
            );
            largest = largest.max(batch.len());
            ids.extend(batch.iter().map(|e| e.id.0));
        }
        assert_eq!(ids, (1..=1000).collect::<Vec<_>>(), "{kind:?}");
        if kind == common::Kind::Embedded {
            assert_eq!(largest, 64, "a backlog fills whole batches");
        }
    }
}
