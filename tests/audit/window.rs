//! The eventual window against a follow undone and done again while a user is checked:
//! the sources are read before the derived data, so such a check sees a post missing
//! under an edge that looks unchanged. Seen in two checks in a row, it used to be called
//! wrong; the edge's new time now tells the checks apart.

use std::sync::atomic::Ordering;

use super::common::faults::{FaultyTimelines, Hold, HoldingAudit};
use super::common::kinds;
use super::{Audited, config, settings, skip_the_workers_past_it, world};
use socialite::audit;
use socialite::domain::{FeedStrategy, TimelineKind, now_ms};
use socialite::store::Store;

/// `ann` unfollows `bob`, the unfollow's upkeep empties her cache of him, and she
/// follows him again at `at`, the backfill not applied yet; the workers are then past
/// it all, as if they had applied it.
async fn follow_again(store: &Store, at: i64) {
    assert!(store.graph.unfollow("ann", "bob").await.unwrap());
    store
        .timelines
        .remove_author_entries(TimelineKind::Cache, "ann", "bob")
        .await
        .unwrap();
    assert!(store.graph.follow("ann", "bob", at).await.unwrap());
    skip_the_workers_past_it(store).await;
}

/// The follow's backfill into `ann`'s cache, as the timelines worker applies it.
async fn backfill(store: &Store) {
    let bob = store
        .content
        .posts_by_author("bob", None, 50)
        .await
        .unwrap();
    let entries: Vec<_> = bob.iter().map(|p| p.entry(true, None)).collect();
    store
        .timelines
        .cache_backfill("ann", &entries, 50, false)
        .await
        .unwrap();
}

#[tokio::test]
async fn a_follow_done_again_during_every_check_is_never_called_wrong() {
    for kind in kinds("a_follow_done_again_during_every_check_is_never_called_wrong") {
        let (config, _dir) = config(kind, FeedStrategy::Cache);
        let store = world(&config).await;
        let faulty = FaultyTimelines::new(store.timelines.clone());
        let hold = Hold::for_user("cache", "ann");
        *faulty.hold.lock().unwrap() = Some(hold.clone());
        let mut audited = store.clone();
        audited.timelines = faulty.clone();
        hold.armed.store(true, Ordering::SeqCst);
        let settings = settings(&config);
        let drive = async {
            let start = now_ms();
            // The pass's check and the first check again: each finds the follow redone
            // between its read of the edges and its read of the cache.
            for round in 1..=2 {
                hold.reached.notified().await;
                follow_again(&store, start + round).await;
                hold.armed.store(true, Ordering::SeqCst);
                hold.release.notify_one();
            }
            // The third check finds the backfill applied.
            hold.reached.notified().await;
            backfill(&store).await;
            hold.release.notify_one();
        };
        let (report, ()) = tokio::join!(audit::audit(&audited, &settings, &()), drive);
        let report = report.unwrap();
        assert!(report.clean(), "{kind:?}: {report}");
        assert_eq!(
            report.pending_count(Audited::Timelines),
            0,
            "{kind:?}: {report}"
        );
    }
}

/// The follow is redone between two checks, each of which reads the edges alike at its
/// start and its end: the second finds the same posts missing under a new edge. Those
/// are two moments of an eventual state, not one wrong one; the changes to `ann`'s
/// follows since the first check tell them apart.
#[tokio::test]
async fn a_follow_done_again_between_two_checks_is_never_called_wrong() {
    for kind in kinds("a_follow_done_again_between_two_checks_is_never_called_wrong") {
        let (config, _dir) = config(kind, FeedStrategy::Cache);
        let store = world(&config).await;
        let hold = Hold::for_user("follow_edges", "ann");
        let mut audited = store.clone();
        audited.audit = std::sync::Arc::new(HoldingAudit {
            inner: store.audit.clone(),
            hold: hold.clone(),
        });
        let start = now_ms();
        follow_again(&store, start).await;
        hold.armed.store(true, Ordering::SeqCst);
        let settings = settings(&config);
        let drive = async {
            // `ann`'s edges are read at the start and the end of each check: the pass's,
            // then two checks again. The follow is redone before the third check, and
            // its backfill lands before the fourth.
            for read in 1..=6 {
                hold.reached.notified().await;
                match read {
                    5 => follow_again(&store, start + 1).await,
                    6 => backfill(&store).await,
                    _ => {}
                }
                hold.armed.store(read < 6, Ordering::SeqCst);
                hold.release.notify_one();
            }
        };
        let run = audit::audit(&audited, &settings, &());
        tokio::pin!(run);
        // An audit that calls it wrong ends before the drive does.
        let report = tokio::select! {
            report = &mut run => report,
            () = drive => run.await,
        };
        let report = report.unwrap();
        assert!(report.clean(), "{kind:?}: {report}");
        assert_eq!(
            report.pending_count(Audited::Timelines),
            0,
            "{kind:?}: {report}"
        );
    }
}
