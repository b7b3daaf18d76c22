//! The eventual window against a follow undone and done again while a user is checked:
//! the sources are read before the derived data, so such a check sees a post missing
//! under an edge that looks unchanged. Seen in two checks in a row, it used to be called
//! wrong; the edge's new time now tells the checks apart.

use std::sync::atomic::Ordering;

use super::common::faults::{FaultyTimelines, Hold};
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
