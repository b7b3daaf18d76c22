//! Idle caches (`feed.cache_idle`, `workers::timelines` upkeep): a cache its owner has
//! not read for `cache_idle` is dropped by the timelines worker, kept while read (from
//! the store or as a kept page), never while being built; fan-out skips it, and the
//! owner's next read builds the timeline `derived.rs` says. Time is a manual clock,
//! shared by the service and the worker.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use socialite::derived::{FollowSource, PostSource, Sources, TimelineRules, Window};
use socialite::domain::{FeedStrategy, PostId, TimelineEntry};
use socialite::feed::FeedSettings;
use socialite::service::Social;
use socialite::store::Store;
use socialite::workers::timelines::TimelinesWorker;
use socialite::workers::{Clock, ManualClock, Runner, RunnerSettings, Step};

use crate::common::faults::{FaultyTimelines, Hold};
use crate::common::{Kind, fresh_store, kinds};

const HOUR: i64 = 3_600_000;
const MINUTE: i64 = 60_000;

fn idle_settings(strategy: FeedStrategy, idle_ms: i64) -> FeedSettings {
    FeedSettings {
        cache_idle_ms: idle_ms,
        ..crate::settings(strategy, true)
    }
}

struct World {
    store: Store,
    clock: Arc<ManualClock>,
    social: Arc<Social>,
    runner: Runner,
}

impl World {
    fn new(store: Store, settings: &FeedSettings) -> World {
        let clock = Arc::new(ManualClock::at(socialite::domain::now_ms()));
        let social = crate::common::social(store.clone(), settings).with_clock(clock.clone());
        let runner = Runner::new(
            Arc::new(TimelinesWorker::new(store.clone(), settings)),
            store.leases.clone(),
            store.change_feed.clone(),
            clock.clone(),
            "test",
            RunnerSettings {
                lease_ttl_ms: 24 * HOUR,
                batch_size: 50,
                refresh_ms: 1_000,
            },
        );
        World {
            store,
            clock,
            social: Arc::new(social),
            runner,
        }
    }

    /// Steps the timelines worker until it has nothing left: its upkeep sweeps.
    async fn sweep(&mut self) {
        while let Step::Applied(_) = self.runner.step().await.unwrap() {}
    }

    async fn has_cache(&self, user: &str) -> bool {
        self.store.timelines.cache(user).await.unwrap().is_some()
    }

    async fn page(&self, user: &str) -> Vec<PostId> {
        let page = self.social.timeline(user, None, 50).await.unwrap();
        page.items.iter().map(|i| i.id).collect()
    }
}

/// `readers` following `ann`, who posted three times.
async fn following_ann(social: &Social, readers: &[&str]) -> Vec<PostId> {
    social.create_user("ann", "ann").await.unwrap();
    for reader in readers {
        social.create_user(reader, reader).await.unwrap();
        social.follow(reader, "ann").await.unwrap();
    }
    let mut posts = Vec::new();
    for i in 0..3 {
        posts.push(social.post("ann", &format!("a{i}")).await.unwrap().id);
    }
    posts
}

/// An unread cache goes once `cache_idle` passes; one read meanwhile (past the stamp
/// granularity) is kept, on both cache strategies.
#[tokio::test]
async fn an_idle_cache_is_dropped_and_an_active_one_kept() {
    for kind in kinds("an_idle_cache_is_dropped_and_an_active_one_kept") {
        for strategy in [FeedStrategy::Cache, FeedStrategy::Hybrid] {
            let t = fresh_store(kind).await;
            let settings = idle_settings(strategy, HOUR);
            let mut w = World::new(t.store.clone(), &settings);
            following_ann(&w.social, &["idle", "active"]).await;
            w.page("idle").await;
            w.page("active").await;
            w.sweep().await;
            assert!(w.has_cache("idle").await && w.has_cache("active").await);

            w.clock.advance(40 * MINUTE);
            w.page("active").await;
            w.clock.advance(40 * MINUTE);
            w.sweep().await;
            assert!(
                !w.has_cache("idle").await,
                "{kind:?} {strategy:?}: idle kept"
            );
            assert!(
                w.has_cache("active").await,
                "{kind:?} {strategy:?}: read, dropped"
            );
            // Its read 40 minutes ago keeps it until an hour after that, not longer.
            w.clock.advance(21 * MINUTE);
            w.sweep().await;
            assert!(!w.has_cache("active").await, "{kind:?} {strategy:?}");
        }
    }
}

/// `cache_idle = 0` keeps caches for ever.
#[tokio::test]
async fn zero_keeps_caches_for_ever() {
    for kind in kinds("zero_keeps_caches_for_ever") {
        let t = fresh_store(kind).await;
        let mut w = World::new(t.store.clone(), &idle_settings(FeedStrategy::Cache, 0));
        following_ann(&w.social, &["reader"]).await;
        w.page("reader").await;
        w.clock.advance(3650 * 24 * HOUR);
        w.sweep().await;
        assert!(w.has_cache("reader").await, "{kind:?}");
    }
}

/// Fan-out skips a dropped cache (it takes no entry and none is created), and the
/// owner's next read builds the timeline the sources imply, posts made meanwhile too.
#[tokio::test]
async fn fan_out_skips_a_dropped_cache_and_a_read_rebuilds_it() {
    for kind in kinds("fan_out_skips_a_dropped_cache_and_a_read_rebuilds_it") {
        let t = fresh_store(kind).await;
        let settings = idle_settings(FeedStrategy::Cache, HOUR);
        let mut w = World::new(t.store.clone(), &settings);
        let mut posts = following_ann(&w.social, &["idle", "active"]).await;
        for reader in ["idle", "active", "ann"] {
            w.page(reader).await;
        }
        let entry = |id: PostId| TimelineEntry {
            id,
            author: "ann".to_owned(),
            text: Some("probe".to_owned()),
            name: None,
            reply_to_author: None,
            repost_of: None,
        };
        // Idempotent by id: a replay of an existing post writes nothing anywhere.
        let timelines = w.store.timelines.clone();
        let before = timelines
            .cache_push_to_audience("ann", &[entry(PostId::at(w.clock.now_ms(), 1))], 50)
            .await
            .unwrap();
        assert_eq!(before, 3, "{kind:?}: ann, idle and active took the probe");

        w.clock.advance(50 * MINUTE);
        w.page("active").await;
        w.page("ann").await;
        w.clock.advance(20 * MINUTE);
        w.sweep().await;
        assert!(!w.has_cache("idle").await, "{kind:?}");
        let after = timelines
            .cache_push_to_audience("ann", &[entry(PostId::at(w.clock.now_ms(), 2))], 50)
            .await
            .unwrap();
        assert_eq!(after, 2, "{kind:?}: only the two caches left took it");
        assert!(!w.has_cache("idle").await, "{kind:?}: a push made a cache");

        posts.push(w.social.post("ann", "while away").await.unwrap().id);
        w.sweep().await;
        let page = w.page("idle").await;
        assert!(w.has_cache("idle").await, "{kind:?}: the read built it");
        let mut sources = Sources {
            users: BTreeMap::new(),
            follows: BTreeMap::new(),
            posts: BTreeMap::new(),
            likes: Default::default(),
            versions: Default::default(),
            ..Default::default()
        };
        for user in ["ann", "idle", "active"] {
            sources.users.insert(user.to_owned(), user.to_owned());
        }
        sources.follows.insert(
            ("idle".to_owned(), "ann".to_owned()),
            FollowSource {
                created: Window::at(0),
            },
        );
        let probe = |id: PostId, text: &str| PostSource {
            author: "ann".to_owned(),
            text: text.to_owned(),
            created: Window::at(id.timestamp_ms()),
            deleted: None,
            reply_to: None,
        };
        for id in &posts {
            sources.posts.insert(*id, probe(*id, "post"));
        }
        let rules = TimelineRules {
            strategy: FeedStrategy::Cache,
            backfill_on_follow: settings.backfill_on_follow,
        };
        let expected = sources.timeline("idle", rules);
        // The probes were pushed past the store's posts: only the sources count.
        assert_eq!(page, expected.lower, "{kind:?}");
        assert_eq!(expected.lower, expected.upper);
        // And the rebuilt cache serves it again, from the cache.
        assert_eq!(w.page("idle").await, expected.lower, "{kind:?}");
    }
}

/// A sweep that runs while the owner's first read is building their cache (between
/// `cache_start` and the fill) leaves the cache alone, however old the clock says it
/// is: it is not ready, and the read that built it counts.
#[tokio::test]
async fn a_sweep_during_a_build_keeps_the_cache_being_built() {
    for kind in kinds("a_sweep_during_a_build_keeps_the_cache_being_built") {
        let t = fresh_store(kind).await;
        let faulty = FaultyTimelines::new(t.store.timelines.clone());
        let hold = Hold::for_user("cache_fill", "reader");
        *faulty.hold.lock().unwrap() = Some(hold.clone());
        let mut store = t.store.clone();
        store.timelines = faulty;
        let settings = idle_settings(FeedStrategy::Cache, HOUR);
        let mut w = World::new(store, &settings);
        let posts = following_ann(&w.social, &["reader"]).await;

        hold.armed.store(true, Ordering::SeqCst);
        let read = {
            let social = w.social.clone();
            tokio::spawn(async move { social.timeline("reader", None, 50).await })
        };
        hold.reached.notified().await;
        w.clock.advance(2 * HOUR);
        w.sweep().await;
        assert!(w.has_cache("reader").await, "{kind:?}: dropped mid-build");
        hold.release.notify_one();
        let page = read.await.unwrap().unwrap();
        let ids: Vec<PostId> = page.items.iter().map(|i| i.id).collect();
        let mut newest_first = posts.clone();
        newest_first.reverse();
        assert_eq!(ids, newest_first, "{kind:?}");
        let cache = w.store.timelines.cache("reader").await.unwrap();
        assert!(
            cache.is_some_and(|c| c.ready),
            "{kind:?}: the build did not finish"
        );
    }
}

/// A reader served nothing but kept pages still counts as reading: their cache is kept
/// past `cache_idle`. Once dropped, the kept page is not served for the cache built
/// again: a post made meanwhile shows at once.
#[tokio::test]
async fn kept_pages_count_as_reads_and_are_not_served_past_a_drop() {
    for kind in kinds("kept_pages_count_as_reads_and_are_not_served_past_a_drop") {
        let t = fresh_store(kind).await;
        let settings = idle_settings(FeedStrategy::Cache, HOUR);
        let mut w = World::new(t.store.clone(), &settings);
        following_ann(&w.social, &["reader"]).await;
        let rendered = AtomicUsize::new(0);
        let read = |w: &World| {
            let social = w.social.clone();
            let rendered = &rendered;
            async move {
                social
                    .rendered_timeline("reader", None, 2, |page| {
                        rendered.fetch_add(1, Ordering::SeqCst);
                        let ids: Vec<String> =
                            page.items.iter().map(|i| i.id.to_string()).collect();
                        Ok(serde_json::to_vec(&ids)?.into())
                    })
                    .await
                    .unwrap()
            }
        };
        read(&w).await; // builds
        let kept = read(&w).await; // read from the cache, kept
        let renders = rendered.load(Ordering::SeqCst);
        for _ in 0..6 {
            w.clock.advance(20 * MINUTE);
            assert_eq!(read(&w).await, kept);
            w.sweep().await;
            assert!(
                w.has_cache("reader").await,
                "{kind:?}: a reader of kept pages lost it"
            );
        }
        if kind == Kind::Embedded {
            assert_eq!(rendered.load(Ordering::SeqCst), renders, "served as kept");
        }

        w.clock.advance(2 * HOUR);
        w.sweep().await;
        assert!(!w.has_cache("reader").await, "{kind:?}");
        let fresh = w.social.post("ann", "while away").await.unwrap().id;
        let page = read(&w).await;
        assert_ne!(page, kept, "{kind:?}: the kept page outlived its cache");
        let ids: Vec<String> = serde_json::from_slice(&page).unwrap();
        assert_eq!(ids.first(), Some(&fresh.to_string()), "{kind:?}");
    }
}

/// A file from before caches recorded their last read (format 4) is upgraded in place:
/// each existing cache counts as read at the upgrade, so none is dropped as idle for a
/// whole `cache_idle` after it, and the format says 6.
#[tokio::test]
async fn an_upgraded_file_counts_its_caches_as_read_at_the_upgrade() {
    let t = fresh_store(Kind::Embedded).await;
    let file = t.embedded_file().unwrap();
    let settings = idle_settings(FeedStrategy::Cache, HOUR);
    let w = World::new(t.store.clone(), &settings);
    following_ann(&w.social, &["reader"]).await;
    w.page("reader").await;
    let conn = rusqlite::Connection::open(&file).unwrap();
    conn.execute_batch(
        "DROP INDEX caches_by_last_read;
         ALTER TABLE caches DROP COLUMN last_read;
         DELETE FROM meta WHERE key = 'cache_last_read';
         PRAGMA user_version = 4;",
    )
    .unwrap();
    let upgraded_at = socialite::domain::now_ms();
    let reopened = socialite::store::embedded::EmbeddedStore::open(
        &file,
        socialite::store::embedded::Synchronous::Normal,
    )
    .unwrap();
    let version: i64 = conn
        .query_row("PRAGMA user_version", [], |row| row.get(0))
        .unwrap();
    assert_eq!(version, 12, "the current format");
    let store = Store::new(Arc::new(reopened));
    let view = store
        .timelines
        .cache_current("reader", None, 1)
        .await
        .unwrap();
    let read_ms = view.expect("the cache survived the upgrade").read_ms;
    // SQLite's clock, read through a Julian day: within a second of ours.
    assert!(
        read_ms >= upgraded_at - 1_000,
        "stamped {read_ms}, upgraded at {upgraded_at}"
    );
    let dropped = store
        .timelines
        .drop_idle_caches(upgraded_at + HOUR - 2_000, HOUR, 10)
        .await
        .unwrap();
    assert_eq!(dropped, 0);
}
