//! Timeline correctness under races, replays, faults and size bounds, on every backend
//! (issue 13): build races and replays here, size bounds in `timelines/bounds.rs`,
//! injected failures in `timelines/failures.rs`, fanout on read and real-MongoDB plans
//! in `timelines/reads.rs`, pushes racing with retractions in `timelines/retractions.rs`,
//! kept pages in `timelines/pages.rs` (read below the cache, hybrid merges, renames,
//! reposts: `timelines/kept_*.rs`), idle caches dropped in `timelines/idle.rs`.
//! Faults and pauses come from port decorators (`common/faults.rs`).

#[path = "timelines/bounds.rs"]
mod bounds;
mod common;
#[path = "timelines/failures.rs"]
mod failures;
#[path = "timelines/hybrid.rs"]
mod hybrid;
#[path = "timelines/idle.rs"]
mod idle;
#[path = "timelines/kept_below.rs"]
mod kept_below;
#[path = "timelines/kept_merged.rs"]
mod kept_merged;
#[path = "timelines/kept_renames.rs"]
mod kept_renames;
#[path = "timelines/kept_reposts.rs"]
mod kept_reposts;
#[path = "timelines/pages.rs"]
mod pages;
#[path = "timelines/races.rs"]
mod races;
#[path = "timelines/reads.rs"]
mod reads;
#[path = "timelines/retractions.rs"]
mod retractions;

use std::sync::Arc;

use common::faults::PausingContent;
use common::{fresh_store, kinds};
use futures::{StreamExt, TryStreamExt};
use socialite::domain::{BucketKind, FeedStrategy, NewUser, PostId, TimelineEntry};
use socialite::feed::FeedSettings;
use socialite::service::Social;
use socialite::store::Store;

fn settings(strategy: FeedStrategy, embed_content: bool) -> FeedSettings {
    FeedSettings {
        strategy,
        embed_content,
        // These tests exercise the request's own fan-out, whatever the audience size.
        inline_fanout_max: u64::MAX,
        ..FeedSettings::default()
    }
}

fn social(store: &Store, settings: &FeedSettings) -> Social {
    crate::common::social(store.clone(), settings)
}

/// Creates `ids` and makes each follow `followee`, straight through the ports.
async fn users_following(store: &Store, ids: &[String], followee: Option<&str>) {
    futures::stream::iter(ids)
        .map(|id| async move {
            let user = NewUser {
                id: id.clone(),
                display_name: id.clone(),
                created_at_ms: 0,
            };
            store.users.create_user(&user).await?;
            if let Some(followee) = followee {
                store.graph.follow(id, followee, 0).await?;
            }
            Ok::<_, socialite::store::StoreError>(())
        })
        .buffer_unordered(16)
        .try_collect::<Vec<()>>()
        .await
        .unwrap();
}

fn names(prefix: &str, n: usize) -> Vec<String> {
    (0..n).map(|i| format!("{prefix}{i:04}")).collect()
}

/// Every page of `user`'s timeline: full pages, consistent cursors; the ids in order.
async fn walk(social: &Social, user: &str, limit: usize) -> Vec<PostId> {
    let (mut ids, mut before) = (Vec::new(), None);
    loop {
        let page = social.timeline(user, before, limit).await.unwrap();
        ids.extend(page.items.iter().map(|i| i.id));
        match page.next_cursor {
            Some(cursor) => {
                assert_eq!(page.items.len(), limit, "a non-final page is full");
                assert_eq!(Some(cursor), page.items.last().map(|i| i.id));
                before = Some(cursor);
            }
            None => return ids,
        }
    }
}

/// Runs the timelines worker over everything in the change feed.
async fn catch_up(store: &Store, settings: &FeedSettings) {
    use socialite::workers::timelines::TimelinesWorker;
    use socialite::workers::{ManualClock, Runner, RunnerSettings, Step};
    let worker = Arc::new(TimelinesWorker::new(store.clone(), settings));
    let clock = Arc::new(ManualClock::at(socialite::domain::now_ms()));
    let runner_settings = RunnerSettings {
        lease_ttl_ms: 60_000,
        batch_size: 50,
        refresh_ms: 1_000,
    };
    let (leases, feed) = (store.leases.clone(), store.change_feed.clone());
    let mut runner = Runner::new(worker, leases, feed, clock, "test", runner_settings);
    while let Step::Applied(_) = runner.step().await.unwrap() {}
}

fn newest_first(mut ids: Vec<PostId>) -> Vec<PostId> {
    ids.sort_by_key(|id| std::cmp::Reverse(*id));
    ids
}

async fn all_bucket_ids(store: &Store, kind: BucketKind, user: &str) -> Vec<PostId> {
    let buckets = store
        .timelines
        .buckets(kind, user, None, 0, 10_000, usize::MAX)
        .await;
    buckets
        .unwrap()
        .iter()
        .flat_map(|b| b.entries.iter().map(|e| e.id))
        .collect()
}

#[tokio::test]
async fn a_follow_and_a_delete_during_a_cache_build_leave_no_trace() {
    for kind in kinds("a_follow_and_a_delete_during_a_cache_build_leave_no_trace") {
        for embed in [true, false] {
            let t = fresh_store(kind).await;
            let (content, reached, resume) = PausingContent::new(t.store.content.clone(), "reader");
            let store = Store {
                content,
                ..t.store.clone()
            };
            let social = Arc::new(social(&store, &settings(FeedStrategy::Cache, embed)));
            for id in ["reader", "old", "new"] {
                social.create_user(id, id).await.unwrap();
            }
            social.follow("reader", "old").await.unwrap();
            let mut live = Vec::new();
            for i in 0..3 {
                live.push(social.post("old", &format!("old {i}")).await.unwrap().id);
            }
            let newer: Vec<PostId> = vec![
                social.post("new", "new 0").await.unwrap().id,
                social.post("new", "new 1").await.unwrap().id,
            ];
            // The first read builds the cache; hold the build once it has its snapshot.
            let reader = social.clone();
            let read = tokio::spawn(async move { reader.timeline("reader", None, 10).await });
            reached.await.unwrap();
            social.follow("reader", "new").await.unwrap();
            let deleted = live.remove(1);
            social.delete_post(deleted).await.unwrap().unwrap();
            resume.send(()).unwrap();
            read.await.unwrap().unwrap();

            let label = format!("{kind:?}/embed={embed}");
            let expected = newest_first([live, newer].concat());
            let cache = t.store.timelines.cache("reader").await.unwrap().unwrap();
            assert!(cache.ready, "{label}");
            let cached: Vec<PostId> = cache.entries.iter().map(|e| e.id).collect();
            assert_eq!(
                cached, expected,
                "{label}: backfilled, deleted post gone, once each"
            );
            assert_eq!(walk(&social, "reader", 2).await, expected, "{label}");
        }
    }
}

fn entries(base: i64, n: i64) -> Vec<TimelineEntry> {
    let entry = |i| TimelineEntry {
        id: PostId::at(base + i, 7),
        author: "a".into(),
        text: Some(format!("text {i}")),
        name: None,
        reply_to_author: None,
        repost_of: None,
    };
    (0..n).map(entry).collect()
}

/// More cache holders than the embedded store writes in one transaction (250): every
/// one takes the post and is counted once, a follower without a cache and a cache of a
/// non-follower are left alone, and a replay writes nothing.
#[tokio::test]
async fn an_audience_push_past_one_chunk_reaches_every_cache_once() {
    for kind in kinds("an_audience_push_past_one_chunk_reaches_every_cache_once") {
        let t = fresh_store(kind).await;
        let (users, graph, timelines) = (&t.store.users, &t.store.graph, &t.store.timelines);
        let ids: Vec<String> = ["a", "stranger"]
            .into_iter()
            .map(String::from)
            .chain((0..601).map(|i| format!("f{i:03}")))
            .collect();
        for id in &ids {
            let user = NewUser {
                id: id.clone(),
                display_name: id.clone(),
                created_at_ms: 0,
            };
            users.create_user(&user).await.unwrap();
            if id.starts_with('f') {
                graph.follow(id, "a", 0).await.unwrap();
            }
            if id != "f600" {
                assert!(timelines.cache_start(id, 0).await.unwrap());
            }
        }
        let e = entries(1_700_000_000_000, 1);
        let pushed = timelines.cache_push_to_audience("a", &e, 10).await.unwrap();
        assert_eq!(pushed, 601, "{kind:?}: the author and 600 cached followers");
        let again = timelines.cache_push_to_audience("a", &e, 10).await.unwrap();
        assert_eq!(again, 0, "{kind:?}: replayed");
        for id in &ids {
            let cache = timelines.cache(id).await.unwrap();
            let held = cache.map(|c| c.entries.iter().map(|e| e.id).collect::<Vec<_>>());
            let expected = match id.as_str() {
                "f600" => None,
                "stranger" => Some(vec![]),
                _ => Some(vec![e[0].id]),
            };
            assert_eq!(held, expected, "{kind:?}: {id}");
        }
    }
}

#[tokio::test]
async fn replayed_pushes_leave_each_post_once() {
    for kind in kinds("replayed_pushes_leave_each_post_once") {
        let t = fresh_store(kind).await;
        let (timelines, u) = (&t.store.timelines, vec!["u".to_owned()]);
        let e = entries(1_700_000_000_000, 5);
        let expected = newest_first(e.iter().map(|e| e.id).collect());

        assert!(timelines.cache_start("u", 0).await.unwrap());
        timelines.cache_fill("u", &e[..3], 10).await.unwrap();
        timelines.cache_fill("u", &e, 10).await.unwrap();
        for _ in 0..2 {
            timelines.cache_push(&u, &e[4..], 10).await.unwrap();
            timelines.cache_push(&u, &e[2..], 10).await.unwrap();
            timelines
                .cache_push_to_audience("u", &e[3..4], 10)
                .await
                .unwrap();
        }
        assert_eq!(
            timelines.cache_push(&u, &e[4..], 10).await.unwrap(),
            0,
            "{kind:?}"
        );
        let cache = timelines.cache("u").await.unwrap().unwrap();
        let cached: Vec<PostId> = cache.entries.iter().map(|e| e.id).collect();
        assert_eq!(cached, expected, "{kind:?}: cache");

        for bucket_kind in [BucketKind::Sized, BucketKind::Timed] {
            for _ in 0..2 {
                for chunk in [&e[..3], &e[..], &e[4..], &e[1..2]] {
                    match bucket_kind {
                        BucketKind::Sized => timelines.sized_push(&u, chunk, 2).await,
                        BucketKind::Timed => timelines.timed_push(&u, 9, chunk, 2).await,
                    }
                    .unwrap();
                }
            }
            let buckets = timelines
                .buckets(bucket_kind, "u", None, 0, 100, 100)
                .await
                .unwrap();
            let pushes: u64 = buckets.iter().map(|b| b.pushes).sum();
            assert_eq!(
                pushes, 5,
                "{kind:?}/{bucket_kind:?}: only new entries count"
            );
            assert!(
                buckets.iter().all(|b| b.pushes <= 2),
                "{kind:?}/{bucket_kind:?}"
            );
            let held = newest_first(all_bucket_ids(&t.store, bucket_kind, "u").await);
            assert_eq!(held, expected, "{kind:?}/{bucket_kind:?}: each post once");
        }
    }
}

#[tokio::test]
async fn concurrent_overlapping_pushes_store_each_entry_once() {
    for kind in kinds("concurrent_overlapping_pushes_store_each_entry_once") {
        let t = fresh_store(kind).await;
        let e = entries(1_700_000_000_000, 48);
        let mut tasks = Vec::new();
        // 16 writers whose windows of 6 overlap their neighbours' by 3.
        for i in 0..16 {
            let (store, window) = (t.store.clone(), e[3 * i..(3 * i + 6).min(48)].to_vec());
            tasks.push(tokio::spawn(async move {
                let u = ["u".to_owned()];
                store.timelines.sized_push(&u, &window, 3).await.unwrap();
                store.timelines.timed_push(&u, 5, &window, 3).await.unwrap();
            }));
        }
        for task in tasks {
            task.await.unwrap();
        }
        let expected = newest_first(e.iter().map(|e| e.id).collect());
        for bucket_kind in [BucketKind::Sized, BucketKind::Timed] {
            let label = format!("{kind:?}/{bucket_kind:?}");
            let buckets = t
                .store
                .timelines
                .buckets(bucket_kind, "u", None, 0, 100, 100);
            let buckets = buckets.await.unwrap();
            assert!(
                buckets
                    .iter()
                    .all(|b| b.pushes == 3 && b.entries.len() == 3),
                "{label}"
            );
            assert_eq!(buckets.len(), 16, "{label}: full buckets only, in order");
            let held = newest_first(all_bucket_ids(&t.store, bucket_kind, "u").await);
            assert_eq!(held, expected, "{label}: each entry once");
        }
    }
}
