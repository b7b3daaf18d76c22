//! Leases: two racing listeners, refresh, take-over and the old holder refused, a paused
//! holder fenced off after a take-over (the design's Fig. 3), a batch that stands down
//! when its lease refresh is refused, and one that outlives its lease retried smaller.

use std::sync::Arc;

use async_trait::async_trait;
use socialite::domain::{ActivityLimits, ActivityType, Change, Fence, now_ms};
use socialite::store::StoreResult;
use socialite::workers::activity::{ActivityWorker, NAME};
use socialite::workers::{Clock, ManualClock, Runner, RunnerSettings, Step};
use tokio::sync::Notify;

use super::{SETTINGS, TTL, log, post, runner};
use crate::common::faults::PauseAtRead;
use crate::common::{self, fresh_store, kinds};

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

        let hooks = Arc::new(PauseAtRead::default());
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

/// What a [`Gated`] activity worker does before it applies a batch.
#[async_trait]
trait Gate: Send + Sync + 'static {
    async fn pass(&self, changes: &[Change], fence: &Fence) -> StoreResult<()>;
}

/// The activity worker, held at a [`Gate`] before each batch.
struct Gated<G> {
    inner: ActivityWorker,
    gate: G,
}

#[async_trait]
impl<G: Gate> socialite::workers::Worker for Gated<G> {
    fn name(&self) -> &'static str {
        NAME
    }
    async fn apply(&self, changes: &[Change], fence: &Fence) -> StoreResult<()> {
        self.gate.pass(changes, fence).await?;
        self.inner.apply(changes, fence).await
    }
    async fn rebuild(&self, fence: &Fence) -> StoreResult<()> {
        self.inner.rebuild(fence).await
    }
}

/// A batch hangs until released.
struct Hanging {
    entered: Notify,
    release: Notify,
}

#[async_trait]
impl Gate for Hanging {
    async fn pass(&self, _changes: &[Change], _fence: &Fence) -> StoreResult<()> {
        self.entered.notify_one();
        self.release.notified().await;
        Ok(())
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
        let worker = Arc::new(Gated {
            inner: ActivityWorker::new(store.activity.clone(), ActivityLimits::default()),
            gate: Hanging {
                entered: Notify::new(),
                release: Notify::new(),
            },
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
        worker.gate.entered.notified().await;
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
        worker.gate.release.notify_one();
    }
}

/// No more than three changes can be applied within the lease: a larger batch loses
/// the lease under it (here, released as an expiry would leave it) and hangs.
struct TooSlow {
    leases: Arc<dyn socialite::store::LeaseStore>,
}

#[async_trait]
impl Gate for TooSlow {
    async fn pass(&self, changes: &[Change], fence: &Fence) -> StoreResult<()> {
        if changes.len() > 3 {
            self.leases
                .release(&fence.lease, &fence.holder, fence.version)
                .await?;
            std::future::pending::<()>().await;
        }
        Ok(())
    }
}

/// A batch the store is too slow to apply within the lease would be read again, and
/// lost again, for ever (every holder alike): the runner halves its batch after one
/// outlives its lease, so the feed moves on.
#[tokio::test]
async fn a_batch_that_outlives_its_lease_is_retried_smaller_until_it_fits() {
    for kind in kinds("a_batch_that_outlives_its_lease_is_retried_smaller_until_it_fits") {
        let t = fresh_store(kind).await;
        let store = &t.store;
        let clock = Arc::new(ManualClock::at(now_ms()));
        common::create_user(store, "ivy").await;
        for i in 0..12 {
            post(store, "ivy", &format!("post {i}")).await;
        }
        let worker = Arc::new(Gated {
            inner: ActivityWorker::new(store.activity.clone(), ActivityLimits::default()),
            gate: TooSlow {
                leases: store.leases.clone(),
            },
        });
        let settings = RunnerSettings {
            refresh_ms: 5,
            batch_size: 16,
            ..SETTINGS
        };
        let mut runner = Runner::new(
            worker,
            store.leases.clone(),
            store.change_feed.clone(),
            clock.clone(),
            "A",
            settings,
        );
        let mut steps = Vec::new();
        for _ in 0..40 {
            let step = runner.step().await.unwrap();
            steps.push(step.clone());
            if step == Step::Idle {
                break;
            }
        }
        assert_eq!(steps.last(), Some(&Step::Idle), "{kind:?}: {steps:?}");
        assert!(steps.contains(&Step::LostLease), "{kind:?}: {steps:?}");
        assert_eq!(log(store, "ivy").await.len(), 12, "{kind:?}");
    }
}
