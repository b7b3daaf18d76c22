//! The counters worker, through `step()` on every backend: a post whose counter write
//! never happened is counted once the worker catches up; a stale holder's recount is
//! refused by the per-user `counted_seq`; a recount held between its read and its write
//! never writes over a follow acknowledged meanwhile; after a random mix of writes the
//! counts equal a count from scratch; and after history is lost the rebuild recounts
//! everyone.

mod common;
#[path = "counters/fixture.rs"]
mod fixture;

use std::sync::Arc;

use common::faults::{PauseAtRead, PausingUsers};
use common::kinds;
use fixture::{Raw, fixture};
use mongodb::bson::{Document, doc};
use socialite::domain::{PostId, now_ms};
use socialite::store::{Store, UserStore};
use socialite::workers::counters::CountersWorker;
use socialite::workers::{ManualClock, Runner, RunnerSettings, Step};

const TTL: i64 = 10_000;
const SETTINGS: RunnerSettings = RunnerSettings {
    lease_ttl_ms: TTL,
    batch_size: 100,
    refresh_ms: 1_000,
};

fn runner(store: &Store, clock: &Arc<ManualClock>, holder: &str) -> Runner {
    runner_over(store.users.clone(), store, clock, holder)
}

/// A runner whose worker reaches the users through `users` (a decorator).
fn runner_over(
    users: Arc<dyn UserStore>,
    store: &Store,
    clock: &Arc<ManualClock>,
    holder: &str,
) -> Runner {
    Runner::new(
        Arc::new(CountersWorker::new(users, store.claims.clone())),
        store.leases.clone(),
        store.change_feed.clone(),
        clock.clone(),
        holder,
        SETTINGS,
    )
}

/// Steps until a step finds nothing to apply; a worker that keeps finding work (its own
/// writes feeding it) fails instead of spinning.
async fn catch_up(runner: &mut Runner) {
    for _ in 0..100 {
        if !matches!(runner.step().await.unwrap(), Step::Applied(_)) {
            return;
        }
    }
    panic!("the worker never ran out of changes");
}

/// (posts, following, followers) as the profile shows them.
async fn shown(store: &Store, user: &str) -> (u64, u64, u64) {
    let u = store.users.user(user).await.unwrap().unwrap();
    (u.posts_count, u.following_count, u.followers_count)
}

/// (posts, following, followers) counted from the sources.
async fn counted(store: &Store, user: &str) -> (u64, u64, u64) {
    let posts = store.content.posts_by_author(user, None, 10_000).await;
    let following = store.graph.following(user, None, 10_000).await;
    let followers = store.graph.followers(user, None, 10_000).await;
    (
        posts.unwrap().len() as u64,
        following.unwrap().len() as u64,
        followers.unwrap().len() as u64,
    )
}

#[tokio::test]
async fn a_post_whose_counter_write_never_happened_is_counted_once_the_worker_catches_up() {
    for kind in kinds("a_post_whose_counter_write_never_happened_is_counted") {
        let f = fixture(kind).await;
        let store = &f.store;
        common::create_user(store, "ann").await;
        store
            .content
            .insert_post("ann", "counted", None, now_ms())
            .await
            .unwrap();
        f.raw.post_without_counter("ann", "cut short").await;
        assert_eq!(
            shown(store, "ann").await.0,
            1,
            "{kind:?}: wrong until the worker runs"
        );
        let clock = Arc::new(ManualClock::at(now_ms()));
        let mut worker = runner(store, &clock, "W");
        catch_up(&mut worker).await;
        assert_eq!(shown(store, "ann").await, (2, 0, 0), "{kind:?}: exact");
        assert_eq!(shown(store, "ann").await, counted(store, "ann").await);
        if let Raw::Mongo(db) = &f.raw {
            // A request's `$inc` that lands after the recount had already counted its
            // post: its user update is recounted too, and the worker's own correction
            // settles after one more round instead of feeding itself.
            db.collection::<Document>("users")
                .update_one(doc! { "_id": "ann" }, doc! { "$inc": { "posts_count": 1 } })
                .await
                .unwrap();
            assert_eq!(shown(store, "ann").await.0, 3);
            let mut steps = 0;
            while let Step::Applied(_) = worker.step().await.unwrap() {
                steps += 1;
                assert!(steps <= 3, "the worker keeps feeding itself");
            }
            assert_eq!(shown(store, "ann").await, (2, 0, 0), "after a late $inc");
        }
    }
}

/// A reads the first post and pauses; its lease expires; B takes over and recounts for
/// a newer post. A marker planted afterwards shows whether A's recount, for older
/// changes, writes anything when A resumes: it must not.
#[tokio::test]
async fn a_stale_holders_recount_is_refused() {
    for kind in kinds("a_stale_holders_recount_is_refused") {
        let f = fixture(kind).await;
        let store = &f.store;
        let clock = Arc::new(ManualClock::at(now_ms()));
        common::create_user(store, "bea").await;
        store
            .content
            .insert_post("bea", "one", None, now_ms())
            .await
            .unwrap();

        let hooks = Arc::new(PauseAtRead::default());
        let mut a = runner(store, &clock, "A").with_hooks(hooks.clone());
        let paused_a = tokio::spawn(async move {
            let step = a.step().await;
            (a, step)
        });
        hooks.paused.notified().await;

        clock.advance(TTL + 1);
        store
            .content
            .insert_post("bea", "two", None, now_ms())
            .await
            .unwrap();
        let mut b = runner(store, &clock, "B");
        catch_up(&mut b).await;
        assert_eq!(shown(store, "bea").await.0, 2, "{kind:?}");
        f.raw.set_counts(Some("bea"), 42).await;

        hooks.resume.notify_one();
        let (_, step) = paused_a.await.unwrap();
        assert_eq!(step.unwrap(), Step::LostLease, "{kind:?}: A stops");
        assert_eq!(
            shown(store, "bea").await,
            (42, 42, 42),
            "{kind:?}: A's recount wrote nothing"
        );
        // The holder's next recount sets it right.
        store
            .content
            .insert_post("bea", "three", None, now_ms())
            .await
            .unwrap();
        catch_up(&mut b).await;
        assert_eq!(shown(store, "bea").await, (3, 0, 0), "{kind:?}");
    }
}

/// The worker counts ann's followers for a first follow (one) and is held before it
/// writes; a second follow is acknowledged meanwhile, its counter already moved to two.
/// When the worker goes on, its count of one must not replace the acknowledged two.
#[tokio::test]
async fn a_recount_read_before_a_follow_never_writes_over_its_counter() {
    for kind in kinds("a_recount_read_before_a_follow_never_writes_over_its_counter") {
        let f = fixture(kind).await;
        let store = &f.store;
        for user in ["ann", "bob", "cy"] {
            common::create_user(store, user).await;
        }
        let clock = Arc::new(ManualClock::at(now_ms()));
        let (users, held, resume) = PausingUsers::new(store.users.clone(), "ann");
        let mut worker = runner_over(users, store, &clock, "W");
        // Past the users' creation, which recounts no one.
        catch_up(&mut worker).await;
        assert!(store.graph.follow("bob", "ann", now_ms()).await.unwrap());

        let step = tokio::spawn(async move {
            let step = worker.step().await;
            (worker, step)
        });
        held.await.unwrap();
        assert!(store.graph.follow("cy", "ann", now_ms()).await.unwrap());
        assert_eq!(
            shown(store, "ann").await.2,
            2,
            "{kind:?}: the second follow"
        );
        resume.send(()).unwrap();
        let (mut worker, step) = step.await.unwrap();
        assert!(matches!(step.unwrap(), Step::Applied(_)), "{kind:?}");
        assert_eq!(
            shown(store, "ann").await.2,
            2,
            "{kind:?}: a count read before the second follow wrote over its counter"
        );
        catch_up(&mut worker).await;
        assert_eq!(shown(store, "ann").await, (0, 0, 2), "{kind:?}");
        assert_eq!(shown(store, "ann").await, counted(store, "ann").await);
    }
}

/// A MongoDB profile written before counters had a version (no `counter_version`) is
/// recounted like any other: its missing version reads as 0, and the write that
/// expects 0 matches it.
#[tokio::test]
async fn a_profile_from_before_counter_versions_is_recounted() {
    for kind in kinds("a_profile_from_before_counter_versions_is_recounted") {
        let f = fixture(kind).await;
        let Raw::Mongo(db) = &f.raw else { continue };
        let store = &f.store;
        common::create_user(store, "dee").await;
        let users = db.collection::<Document>("users");
        let unset = doc! { "$unset": { "counter_version": "" } };
        users
            .update_one(doc! { "_id": "dee" }, unset)
            .await
            .unwrap();
        f.raw.post_without_counter("dee", "uncounted").await;
        let clock = Arc::new(ManualClock::at(now_ms()));
        catch_up(&mut runner(store, &clock, "W")).await;
        assert_eq!(shown(store, "dee").await, (1, 0, 0));
        let dee = users
            .find_one(doc! { "_id": "dee" })
            .await
            .unwrap()
            .unwrap();
        assert_eq!(dee.get_i64("counter_version").unwrap(), 1, "{dee}");
    }
}

/// A small deterministic generator (xorshift), so a failure replays.
struct Mix(u64);

impl Mix {
    fn next(&mut self, below: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % below as u64) as usize
    }
}

#[tokio::test]
async fn after_a_random_mix_of_writes_the_counts_equal_a_count_from_scratch() {
    for kind in kinds("after_a_random_mix_of_writes_the_counts_equal_a_count_from_scratch") {
        let f = fixture(kind).await;
        let store = &f.store;
        let users: Vec<String> = (0..6).map(|i| format!("u{i}")).collect();
        for user in &users {
            common::create_user(store, user).await;
        }
        // Drift everywhere first, as crashes between writes and counters leave it; the
        // counters of the mix then move from wrong values.
        f.raw.set_counts(None, 999).await;
        let clock = Arc::new(ManualClock::at(now_ms()));
        let mut worker = runner(store, &clock, "W");
        let mut mix = Mix(0x9e37_79b9_7f4a_7c15);
        let mut posts: Vec<PostId> = Vec::new();
        for round in 0..240 {
            let (a, b) = (&users[mix.next(6)], &users[mix.next(6)]);
            match mix.next(4) {
                0 => posts.push(
                    store
                        .content
                        .insert_post(a, "p", None, now_ms())
                        .await
                        .unwrap()
                        .post
                        .id,
                ),
                1 if !posts.is_empty() => {
                    let id = posts.swap_remove(mix.next(posts.len()));
                    store.content.delete_post(id).await.unwrap();
                }
                2 if a != b => {
                    store.graph.follow(a, b, now_ms()).await.unwrap();
                }
                _ => {
                    store.graph.unfollow(a, b).await.unwrap();
                }
            }
            // The worker runs now and then, part-way through the mix.
            if round % 50 == 25 {
                worker.step().await.unwrap();
            }
        }
        catch_up(&mut worker).await;
        for user in &users {
            assert_eq!(
                shown(store, user).await,
                counted(store, user).await,
                "{kind:?} {user}"
            );
        }
    }
}
