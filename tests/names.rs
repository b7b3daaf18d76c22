//! Author names embedded in timeline entries, on every backend: a stamp is replaced only
//! by a newer one; concurrent renames and posts end with every entry carrying the final
//! name once the timelines worker caught up; a warm cache read needs nothing but the
//! timeline store, and still serves no entry of an unfollowed author or a deleted post.
//! Renames kept pending on the embedded store: `names/pending.rs`.

mod common;
#[path = "names/pending.rs"]
mod pending;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use common::faults::{FailingContent, FailingUsers};
use common::{Kind, create_user, fresh_store, kinds};
use socialite::domain::{BucketKind, FeedStrategy, NameStamp, PostId, TimelineEntry, TimelineKind};
use socialite::feed::FeedSettings;
use socialite::service::Social;
use socialite::store::Store;
use socialite::workers::timelines::TimelinesWorker;
use socialite::workers::{ManualClock, Runner, RunnerSettings, Step};

const KINDS: [TimelineKind; 3] = [
    TimelineKind::Cache,
    TimelineKind::Buckets(BucketKind::Timed),
    TimelineKind::Buckets(BucketKind::Sized),
];

fn stamp(name: &str, version: u64) -> NameStamp {
    NameStamp {
        display_name: name.to_owned(),
        version,
    }
}

fn entry(id: PostId, author: &str, name: Option<NameStamp>) -> TimelineEntry {
    TimelineEntry {
        id,
        author: author.to_owned(),
        text: Some(format!("post {id}")),
        name,
        reply_to_author: None,
        repost_of: None,
    }
}

/// Every entry of `user`'s timeline of `kind`, newest first.
async fn stored(store: &Store, kind: TimelineKind, user: &str) -> Vec<TimelineEntry> {
    match kind {
        TimelineKind::Cache => store.timelines.cache(user).await.unwrap().unwrap().entries,
        TimelineKind::Buckets(bucket) => {
            let buckets = store
                .timelines
                .buckets(bucket, user, None, 0, 100, 1000)
                .await
                .unwrap();
            let mut entries: Vec<TimelineEntry> =
                buckets.into_iter().flat_map(|b| b.entries).collect();
            entries.sort_unstable_by_key(|e| std::cmp::Reverse(e.id));
            entries
        }
    }
}

async fn push(store: &Store, kind: TimelineKind, user: &str, entries: &[TimelineEntry]) {
    let users = [user.to_owned()];
    let timelines = &store.timelines;
    match kind {
        TimelineKind::Cache => {
            timelines.cache_start(user, 0).await.unwrap();
            timelines.cache_fill(user, entries, 50).await.unwrap();
        }
        TimelineKind::Buckets(BucketKind::Timed) => {
            timelines.timed_push(&users, 1, entries, 100).await.unwrap()
        }
        TimelineKind::Buckets(BucketKind::Sized) => {
            timelines.sized_push(&users, entries, 100).await.unwrap()
        }
    }
}

#[tokio::test]
async fn a_name_stamp_is_only_ever_replaced_by_a_newer_one() {
    for backend in kinds("a_name_stamp_is_only_ever_replaced_by_a_newer_one") {
        for kind in KINDS {
            let t = fresh_store(backend).await;
            let ids: Vec<PostId> = (0..4).map(|i| PostId::at(1_000 + i, 1)).collect();
            let mut linked = entry(ids[3], "ann", None);
            linked.text = None;
            let entries = [
                entry(ids[0], "ann", Some(stamp("Ann v2", 2))),
                entry(ids[1], "ann", None),
                entry(ids[2], "bob", Some(stamp("Bob v1", 1))),
                linked,
            ];
            push(&t.store, kind, "reader", &entries).await;
            let reader = ["reader".to_owned()];
            let rename = |name, version| {
                let store = t.store.clone();
                let reader = reader.clone();
                async move {
                    let name = stamp(name, version);
                    store
                        .timelines
                        .rename_author(kind, &reader, "ann", &name)
                        .await
                        .unwrap();
                }
            };
            let names = |entries: Vec<TimelineEntry>| -> Vec<Option<NameStamp>> {
                entries.into_iter().map(|e| e.name).collect()
            };
            // An older rename, applied late, changes only the entry without a stamp.
            rename("Ann v1", 1).await;
            let after_old = names(stored(&t.store, kind, "reader").await);
            assert_eq!(
                after_old,
                vec![
                    None,
                    Some(stamp("Bob v1", 1)),
                    Some(stamp("Ann v1", 1)),
                    Some(stamp("Ann v2", 2)),
                ],
                "{backend:?} {kind:?}: an older rename overwrote a newer stamp"
            );
            // A newer one replaces every embedded stamp of the author, and no other.
            rename("Ann v3", 3).await;
            rename("Ann v3", 3).await;
            let after_new = names(stored(&t.store, kind, "reader").await);
            assert_eq!(
                after_new,
                vec![
                    None,
                    Some(stamp("Bob v1", 1)),
                    Some(stamp("Ann v3", 3)),
                    Some(stamp("Ann v3", 3)),
                ],
                "{backend:?} {kind:?}"
            );
        }
        let t = fresh_store(backend).await;
        let timelines = &t.store.timelines;
        timelines.mark_renamed("ann", 5).await.unwrap();
        timelines.mark_renamed("ann", 3).await.unwrap();
        let names = ["ann".to_owned(), "bob".to_owned()];
        assert_eq!(
            timelines.renamed(&names).await.unwrap(),
            vec![("ann".to_owned(), 5)],
            "{backend:?}: the propagated version went back"
        );
    }
}

/// A service over `store` on `strategy` with content embedded, where `reader` follows
/// `ann`.
async fn ann_and_reader(store: &Store, strategy: FeedStrategy) -> (FeedSettings, Social) {
    let feed = FeedSettings {
        strategy,
        embed_content: true,
        ..FeedSettings::default()
    };
    let social = crate::common::social(store.clone(), &feed);
    social.create_user("ann", "Ann").await.unwrap();
    social.create_user("reader", "Reader").await.unwrap();
    social.follow("reader", "ann").await.unwrap();
    (feed, social)
}

async fn catch_up(store: &Store, feed: &FeedSettings) {
    let clock = Arc::new(ManualClock::at(socialite::domain::now_ms()));
    let settings = RunnerSettings {
        lease_ttl_ms: 60_000,
        batch_size: 7,
        refresh_ms: 1_000,
    };
    let worker = Arc::new(TimelinesWorker::new(store.clone(), feed));
    let feed = store.change_feed.clone();
    let mut runner = Runner::new(worker, store.leases.clone(), feed, clock, "t", settings);
    while let Step::Applied(_) = runner.step().await.unwrap() {}
}

#[tokio::test]
async fn concurrent_renames_and_posts_end_with_the_final_name_everywhere() {
    for backend in kinds("concurrent_renames_and_posts_end_with_the_final_name_everywhere") {
        for strategy in [
            FeedStrategy::Cache,
            FeedStrategy::TimedBuckets,
            FeedStrategy::SizedBuckets,
        ] {
            let t = fresh_store(backend).await;
            let feed = FeedSettings {
                strategy,
                ..FeedSettings::default()
            };
            let social = Arc::new(crate::common::social(t.store.clone(), &feed));
            social.create_user("star", "Star").await.unwrap();
            social.timeline("star", None, 5).await.unwrap();
            let mut readers = vec!["star".to_owned()];
            for i in 0..4 {
                let fan = format!("fan{i}");
                social.create_user(&fan, &fan).await.unwrap();
                social.follow(&fan, "star").await.unwrap();
                social.timeline(&fan, None, 5).await.unwrap();
                readers.push(fan);
            }
            social.post("star", "before the renames").await.unwrap();
            let mut tasks = Vec::new();
            for i in 0..24 {
                let social = social.clone();
                tasks.push(tokio::spawn(async move {
                    if i % 3 == 0 {
                        social.rename("star", &format!("Star {i}")).await.unwrap();
                    } else {
                        social.post("star", &format!("post {i}")).await.unwrap();
                    }
                }));
            }
            for task in tasks {
                task.await.unwrap();
            }
            // A last rename, after every post: only the worker can bring it to them.
            social.rename("star", "Final Star").await.unwrap();
            catch_up(&t.store, &feed).await;
            let last = t.store.users.user("star").await.unwrap().unwrap();
            assert_eq!(last.display_name, "Final Star");
            let kind = match strategy {
                FeedStrategy::Cache => TimelineKind::Cache,
                FeedStrategy::TimedBuckets => TimelineKind::Buckets(BucketKind::Timed),
                _ => TimelineKind::Buckets(BucketKind::Sized),
            };
            for reader in &readers {
                let entries = stored(&t.store, kind, reader).await;
                assert_eq!(entries.len(), 17, "{backend:?} {strategy} {reader}");
                for entry in entries {
                    assert_eq!(
                        entry.name,
                        Some(last.name_stamp()),
                        "{backend:?} {strategy} {reader}: {entry:?}"
                    );
                }
                let page = social.timeline(reader, None, 50).await.unwrap();
                assert!(
                    page.items
                        .iter()
                        .all(|i| i.author_display_name == last.display_name),
                    "{backend:?} {strategy} {reader}"
                );
            }
        }
    }
}

#[tokio::test]
async fn a_warm_cache_read_needs_only_the_timeline_store_and_serves_nothing_stale() {
    for backend in kinds("a_warm_cache_read_needs_only_the_timeline_store") {
        let t = fresh_store(backend).await;
        let users = Arc::new(FailingUsers {
            inner: t.store.users.clone(),
            failing: AtomicBool::new(false),
        });
        let content = Arc::new(FailingContent {
            inner: t.store.content.clone(),
            failing: AtomicBool::new(false),
        });
        let mut store = t.store.clone();
        store.users = users.clone();
        store.content = content.clone();
        let social = crate::common::social(store.clone(), &FeedSettings::default());
        for id in ["reader", "kept", "dropped"] {
            create_user(&store, id).await;
        }
        social.rename("kept", "Kept Name").await.unwrap();
        social.follow("reader", "kept").await.unwrap();
        social.follow("reader", "dropped").await.unwrap();
        social.timeline("reader", None, 10).await.unwrap();
        let mut kept = Vec::new();
        for i in 0..3 {
            kept.push(social.post("kept", &format!("stays {i}")).await.unwrap().id);
        }
        let gone = social.post("kept", "deleted").await.unwrap();
        let unfollowed = social.post("dropped", "unfollowed").await.unwrap();
        // The removals that the delete and the unfollow make never ran (as when they
        // race with the fan-out): the store's own read must leave the entries out.
        t.store.content.delete_post(gone.id).await.unwrap();
        t.store.graph.unfollow("reader", "dropped").await.unwrap();
        let cached: Vec<PostId> = stored(&t.store, TimelineKind::Cache, "reader")
            .await
            .iter()
            .map(|e| e.id)
            .collect();
        assert_eq!(
            cached,
            vec![unfollowed.id, gone.id, kept[2], kept[1], kept[0]]
        );

        users.failing.store(true, Ordering::SeqCst);
        content.failing.store(true, Ordering::SeqCst);
        let page = social.timeline("reader", None, 2).await.unwrap();
        let served: Vec<(PostId, &str)> = page
            .items
            .iter()
            .map(|i| (i.id, i.author_display_name.as_str()))
            .collect();
        let expected = vec![(kept[2], "Kept Name"), (kept[1], "Kept Name")];
        assert_eq!(served, expected, "{backend:?}");
        assert_eq!(page.next_cursor, Some(kept[1]), "{backend:?}");
    }
}

/// A writer that read a name, then stalled or crashed, may land entries stamped with it
/// after the rename's propagation, and die before its own re-check: nothing restamps
/// them. A cache read serves the profile's name instead of a stamp older than it. (The
/// embedded store stamps entries from the profile as they land, since its pages check
/// names only while a rename is pending; MongoDB stores the stale stamp and its page
/// reads check every name.)
#[tokio::test]
async fn a_stamp_left_behind_a_rename_is_never_served() {
    for backend in kinds("a_stamp_left_behind_a_rename_is_never_served") {
        for strategy in [FeedStrategy::Cache, FeedStrategy::Hybrid] {
            let t = fresh_store(backend).await;
            let (feed, social) = ann_and_reader(&t.store, strategy).await;
            social.timeline("reader", None, 5).await.unwrap();
            social.timeline("ann", None, 5).await.unwrap();
            let old = t.store.users.user("ann").await.unwrap().unwrap();
            let post = social.post("ann", "late").await.unwrap();
            let renamed = social.rename("ann", "Ann Renamed").await.unwrap();
            catch_up(&t.store, &feed).await;
            // The late writer's entries, stamped with the name it read before the rename.
            let timelines = &t.store.timelines;
            timelines
                .remove_post_entries(TimelineKind::Cache, post.id)
                .await
                .unwrap();
            let stale = post.entry(true, Some(&old.name_stamp()));
            for user in ["reader", "ann"] {
                let owner = [user.to_owned()];
                timelines
                    .cache_push(&owner, std::slice::from_ref(&stale), feed.cache_size)
                    .await
                    .unwrap();
                let stored = stored(&t.store, TimelineKind::Cache, user).await;
                let landed = match backend {
                    Kind::Embedded => &renamed,
                    Kind::Mongo => &old,
                };
                assert_eq!(
                    stored[0].name,
                    Some(landed.name_stamp()),
                    "{backend:?} {user}"
                );
                let page = social.timeline(user, None, 5).await.unwrap();
                let served: Vec<(PostId, &str)> = page
                    .items
                    .iter()
                    .map(|i| (i.id, i.author_display_name.as_str()))
                    .collect();
                assert_eq!(
                    served,
                    vec![(post.id, "Ann Renamed")],
                    "{backend:?} {strategy} {user}"
                );
            }
        }
    }
}
