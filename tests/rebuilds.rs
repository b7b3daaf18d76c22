//! History lost, for every worker on every backend: writes the feed no longer holds (the
//! embedded feed trimmed past a stopped worker; on the MongoDB stand-in, whose oplog never
//! rolls over, a dropped watched collection, which the feed reports as history lost
//! too) are restored by the worker's rebuild, whose result equals a computation from
//! scratch; the worker then goes on from the head it took before the rebuild. The
//! timelines worker's rebuilds are in `rebuilds/timelines.rs`.

mod common;
#[path = "rebuilds/timelines.rs"]
mod timelines;

use std::sync::Arc;

use common::{Kind, kinds};
use mongodb::bson::{Document, Timestamp, doc, oid::ObjectId};
use socialite::domain::{ActivityLimits, now_ms};
use socialite::store::Store;
use socialite::workers::activity::ActivityWorker;
use socialite::workers::counters::CountersWorker;
use socialite::workers::{ManualClock, Runner, RunnerSettings, Step, Worker};

use common::raw::{RawStore as Fixture, raw_store};

async fn fixture(kind: Kind) -> Fixture {
    raw_store(kind, "rebuild").await
}

impl Fixture {
    /// Runs `writes` so that a worker stopped before them can no longer read them from
    /// the feed. Embedded: the writes, then a trim past them. MongoDB: a dropped `likes`
    /// collection first, so the feed ends its history before the writes.
    async fn lose_history<F: std::future::Future<Output = ()>>(&self, writes: F) {
        match self.raw.mongo() {
            Some(db) => {
                let likes = db.collection::<Document>("likes");
                let like = doc! { "_id": { "u": "nobody", "p": ObjectId::new() } };
                likes.insert_one(like).await.unwrap();
                likes.drop().await.unwrap();
                writes.await;
            }
            None => {
                writes.await;
                let later = now_ms() + 60_000;
                let dropped = self
                    .store
                    .change_feed
                    .trim_changes(later, later)
                    .await
                    .unwrap();
                assert!(dropped > 0);
            }
        }
    }
}

fn runner(store: &Store, worker: Arc<dyn Worker>) -> Runner {
    let settings = RunnerSettings {
        lease_ttl_ms: 60_000,
        batch_size: 100,
        refresh_ms: 1_000,
    };
    let clock = Arc::new(ManualClock::at(now_ms()));
    Runner::new(
        worker,
        store.leases.clone(),
        store.change_feed.clone(),
        clock,
        "W",
        settings,
    )
}

/// Steps until a step finds nothing to apply (a rebuild counts as finding nothing).
async fn catch_up(runner: &mut Runner) {
    for _ in 0..100 {
        if !matches!(runner.step().await.unwrap(), Step::Applied(_)) {
            return;
        }
    }
    panic!("the worker never ran out of changes");
}

/// Steps until the worker reports its rebuild (on MongoDB the drop surfaces once every
/// stream is known complete past it, which may take a read or two).
async fn until_rebuilt(runner: &mut Runner, kind: Kind) {
    for _ in 0..50 {
        if runner.step().await.unwrap() == Step::Rebuilt {
            assert_eq!(runner.status().lock().unwrap().rebuilds, 1, "{kind:?}");
            return;
        }
    }
    panic!("{kind:?}: history lost never surfaced");
}

fn rebuilds(runner: &Runner) -> u64 {
    runner.status().lock().unwrap().rebuilds
}

async fn counts(store: &Store, user: &str) -> [(u64, u64, u64); 2] {
    let u = store.users.user(user).await.unwrap().unwrap();
    let posts = store.content.posts_by_author(user, None, 10_000).await;
    let following = store.graph.following(user, None, 10_000).await;
    let followers = store.graph.followers(user, None, 10_000).await;
    [
        (u.posts_count, u.following_count, u.followers_count),
        (
            posts.unwrap().len() as u64,
            following.unwrap().len() as u64,
            followers.unwrap().len() as u64,
        ),
    ]
}

#[tokio::test]
async fn the_counters_rebuild_recounts_every_user() {
    for kind in kinds("the_counters_rebuild_recounts_every_user") {
        let f = fixture(kind).await;
        let store = &f.store;
        let users = ["ada", "bob", "cal"];
        for user in users {
            common::create_user(store, user).await;
        }
        store
            .content
            .insert_post("ada", "one", None, now_ms())
            .await
            .unwrap();
        let mut worker = runner(
            store,
            Arc::new(CountersWorker::new(
                store.users.clone(),
                store.claims.clone(),
            )),
        );
        catch_up(&mut worker).await;

        f.lose_history(async {
            store.graph.follow("bob", "ada", now_ms()).await.unwrap();
            store
                .content
                .insert_post("cal", "two", None, now_ms())
                .await
                .unwrap();
        })
        .await;
        // Counters gone wrong with no change to tell: only a full recount finds them.
        f.raw.set_counts(None, 7).await;
        until_rebuilt(&mut worker, kind).await;
        for user in users {
            let [shown, counted] = counts(store, user).await;
            assert_eq!(shown, counted, "{kind:?} {user}");
        }
        assert_eq!(counts(store, "ada").await[0], (1, 0, 1), "{kind:?}");
        // And on from the head taken before the rebuild.
        store
            .content
            .insert_post("bob", "three", None, now_ms())
            .await
            .unwrap();
        f.raw.set_counts(None, 7).await;
        catch_up(&mut worker).await;
        assert_eq!(counts(store, "bob").await[0], (1, 1, 0), "{kind:?}");
        assert_eq!(rebuilds(&worker), 1, "{kind:?}: no second rebuild");
    }
}

#[tokio::test]
async fn the_activity_rebuild_equals_logs_from_scratch() {
    for kind in kinds("the_activity_rebuild_equals_logs_from_scratch") {
        let f = fixture(kind).await;
        let store = &f.store;
        let users = ["fay", "gus"];
        for user in users {
            common::create_user(store, user).await;
        }
        let early = store
            .content
            .insert_post("fay", "one", None, now_ms())
            .await
            .unwrap();
        let limits = ActivityLimits {
            primary_limit: 2,
            page_size: 2,
        };
        let mut worker = runner(
            store,
            Arc::new(ActivityWorker::new(store.activity.clone(), limits)),
        );
        catch_up(&mut worker).await;

        f.lose_history(async {
            store.graph.follow("gus", "fay", now_ms()).await.unwrap();
            for i in 0..4 {
                store
                    .content
                    .insert_post("fay", &format!("p{i}"), None, now_ms())
                    .await
                    .unwrap();
            }
            store.content.delete_post(early.post.id).await.unwrap();
        })
        .await;
        until_rebuilt(&mut worker, kind).await;
        assert_eq!(
            common::activity_logged(store, &users).await,
            common::activity_from_scratch(store, &users).await,
            "{kind:?}"
        );
        // Past the primary limit of 2, the rest is on pages.
        let layout = store.activity.activity_layout("fay").await.unwrap();
        assert_eq!((layout.primary, layout.pages.len()), (2, 1), "{kind:?}");

        store
            .content
            .insert_post("gus", "after", None, now_ms())
            .await
            .unwrap();
        catch_up(&mut worker).await;
        assert_eq!(
            common::activity_logged(store, &users).await,
            common::activity_from_scratch(store, &users).await,
            "{kind:?}"
        );
        assert_eq!(rebuilds(&worker), 1, "{kind:?}: no second rebuild");
    }
}

/// A worker whose lease never committed a position reads from the oldest change kept.
/// Once history before it is gone (embedded: a forced trim; MongoDB: an oplog that no
/// longer reaches back to the database's birth), that is not the start of the history:
/// it must rebuild (counted as history lost), not skip what is gone.
#[tokio::test]
async fn a_worker_that_never_committed_rebuilds_after_a_trim() {
    for kind in kinds("a_worker_that_never_committed_rebuilds_after_a_trim") {
        let f = fixture(kind).await;
        let store = &f.store;
        let users = ["fay", "gus"];
        for user in users {
            common::create_user(store, user).await;
        }
        let limits = ActivityLimits::default();
        let worker = Arc::new(ActivityWorker::new(store.activity.clone(), limits));
        let mut worker = runner(store, worker);
        // Taken (as a first step does) and never committed: the holder stalled at once.
        let lease = store
            .leases
            .acquire("activity", "W", now_ms(), 60_000)
            .await;
        assert_eq!(lease.unwrap().position, None);
        let writes = async {
            store.graph.follow("gus", "fay", now_ms()).await.unwrap();
            store
                .content
                .insert_post("fay", "one", None, now_ms())
                .await
                .unwrap();
        };
        match f.raw.mongo() {
            None => f.lose_history(writes).await,
            Some(db) => {
                writes.await;
                // What an oplog rolled past the birth leaves: its oldest entry newer.
                let born = doc! { "$set": { "at": Timestamp { time: 1, increment: 0 } } };
                db.collection::<Document>("meta")
                    .update_one(doc! { "_id": "born" }, born)
                    .await
                    .unwrap();
            }
        }
        store
            .content
            .insert_post("gus", "two", None, now_ms())
            .await
            .unwrap();
        until_rebuilt(&mut worker, kind).await;
        assert_eq!(worker.status().lock().unwrap().history_lost, 1, "{kind:?}");
        catch_up(&mut worker).await;
        assert_eq!(
            common::activity_logged(store, &users).await,
            common::activity_from_scratch(store, &users).await,
            "{kind:?}"
        );
    }
}
