//! A cache merge (a fill or a backfill) reads the cache, decides which entries it lacks,
//! and writes them under a guard. On MongoDB these are two round trips; a removal and a
//! push landing between them used to keep the cache's length and oldest entry, pass the
//! guard, and leave out an entry the merge had read as held: gone for good, although
//! its author was still followed. A fault point between the read and the write holds
//! the merge open while they land, so the race runs the same way every time.
//!
//! Its own test binary: fault injection is process-wide, and stalls every point.

mod common;

use std::collections::BTreeSet;
use std::time::Duration;

use common::{create_user, fresh_store, kinds};
use socialite::config::{FaultsConfig, HumanDuration};
use socialite::domain::{Post, PostId, TimelineEntry, TimelineKind, now_ms};
use socialite::store::Store;

const SIZE: u32 = 50;

async fn post(store: &Store, author: &str) -> Post {
    store
        .content
        .insert_post(author, author, None, now_ms())
        .await
        .unwrap()
        .post
}

fn entry(post: &Post) -> TimelineEntry {
    post.entry(false, None)
}

async fn held(store: &Store, user: &str) -> BTreeSet<PostId> {
    let cache = store.timelines.cache(user).await.unwrap().unwrap();
    cache.entries.iter().map(|e| e.id).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_removal_and_a_push_inside_a_merge_leave_a_serial_outcome() {
    socialite::faults::install(&FaultsConfig {
        stall_probability: 1.0,
        stall_for: HumanDuration(Duration::from_millis(400)),
        ..FaultsConfig::default()
    });
    for kind in kinds("a_removal_and_a_push_inside_a_merge_leave_a_serial_outcome") {
        let t = fresh_store(kind).await;
        let store = &t.store;
        for id in ["reader", "ann", "bob"] {
            create_user(store, id).await;
        }
        for followee in ["ann", "bob"] {
            store
                .graph
                .follow("reader", followee, now_ms())
                .await
                .unwrap();
        }
        let b1 = post(store, "bob").await;
        let a1 = post(store, "ann").await;
        let a2 = post(store, "ann").await;
        let b2 = post(store, "bob").await;
        let b3 = post(store, "bob").await;
        assert!(
            store
                .timelines
                .cache_start("reader", now_ms())
                .await
                .unwrap()
        );
        let filled = [entry(&b2), entry(&a1), entry(&b1)];
        store
            .timelines
            .cache_fill("reader", &filled, SIZE)
            .await
            .unwrap();
        assert_eq!(
            held(store, "reader").await,
            BTreeSet::from([b1.id, a1.id, b2.id]),
            "{kind:?}: filled"
        );

        // The backfill of ann reads a1 as held and stops at the fault point; meanwhile
        // ann's entries are removed (an unfollow's upkeep replayed late) and b3 pushed,
        // which leaves the length and the oldest entry as they were.
        let backfill = {
            let store = store.clone();
            let entries = [entry(&a2), entry(&a1)];
            tokio::spawn(async move {
                store
                    .timelines
                    .cache_backfill("reader", &entries, SIZE, false)
                    .await
            })
        };
        tokio::time::sleep(Duration::from_millis(100)).await;
        store
            .timelines
            .remove_author_entries(TimelineKind::Cache, "reader", "ann")
            .await
            .unwrap();
        store
            .timelines
            .cache_push(&["reader".to_owned()], &[entry(&b3)], SIZE)
            .await
            .unwrap();
        backfill.await.unwrap().unwrap();

        // Either order of the backfill and the removal is a right answer; ann's posts
        // half there is not.
        let removal_last = BTreeSet::from([b1.id, b2.id, b3.id]);
        let backfill_last = BTreeSet::from([b1.id, a1.id, a2.id, b2.id, b3.id]);
        let got = held(store, "reader").await;
        assert!(
            got == removal_last || got == backfill_last,
            "{kind:?}: {got:?} is neither {removal_last:?} nor {backfill_last:?}"
        );
    }
}
