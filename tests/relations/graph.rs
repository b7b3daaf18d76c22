//! A block removes the follows both ways with their counters and refuses new ones while
//! it stands; unblocking restores none; the lists page newest first; a follow racing a
//! block ends with no edge, and no trace in the activity log, whichever way they
//! interleave.

use std::sync::Arc;

use socialite::domain::FeedStrategy;
use socialite::service::MuteRequest;
use socialite::store::StoreError;

use socialite::domain::{ActivityLimits, ActivityType};
use socialite::workers::activity::ActivityWorker;

use crate::common::{Kind, drain, fresh_store, kinds};
use crate::{settings, social};

async fn counts(social: &socialite::service::Social, user: &str) -> (u64, u64) {
    let u = social.user(user).await.unwrap();
    (u.followers_count, u.following_count)
}

#[tokio::test]
async fn a_block_removes_both_follows_with_their_counters_and_refuses_follows() {
    for kind in kinds("a_block_removes_both_follows") {
        let t = fresh_store(kind).await;
        let social = social(&t.store, &settings(FeedStrategy::Cache));
        for id in ["ann", "bob", "cat"] {
            social.create_user(id, id).await.unwrap();
        }
        social.follow("ann", "bob").await.unwrap();
        social.follow("bob", "ann").await.unwrap();
        social.follow("cat", "ann").await.unwrap();
        assert!(social.block("ann", "bob").await.unwrap(), "{kind:?}: new");
        assert!(
            !social.block("ann", "bob").await.unwrap(),
            "{kind:?}: again"
        );
        for (a, b) in [("ann", "bob"), ("bob", "ann")] {
            assert!(
                t.store.graph.edge(a, b).await.unwrap().is_none(),
                "{kind:?}"
            );
        }
        assert_eq!(counts(&social, "ann").await, (1, 0), "{kind:?}: cat stays");
        assert_eq!(counts(&social, "bob").await, (0, 0), "{kind:?}");
        for (a, b) in [("ann", "bob"), ("bob", "ann")] {
            let refused = social.follow(a, b).await;
            assert!(
                matches!(refused, Err(StoreError::Forbidden(_))),
                "{kind:?}: {a} -> {b}: {refused:?}"
            );
            assert!(
                t.store.graph.edge(a, b).await.unwrap().is_none(),
                "{kind:?}"
            );
        }
        assert_eq!(counts(&social, "bob").await, (0, 0), "{kind:?}");
        // Only the blocker's own block goes: bob unblocking ann changes nothing.
        social.unblock("bob", "ann").await.unwrap();
        assert!(social.follow("bob", "ann").await.is_err(), "{kind:?}");
        social.unblock("ann", "bob").await.unwrap();
        social.unblock("ann", "bob").await.unwrap();
        for (a, b) in [("ann", "bob"), ("bob", "ann")] {
            assert!(
                t.store.graph.edge(a, b).await.unwrap().is_none(),
                "{kind:?}: unblocking restores no follow"
            );
        }
        assert!(social.follow("bob", "ann").await.unwrap(), "{kind:?}");
        assert!(matches!(
            social.block("ann", "ann").await,
            Err(StoreError::Invalid(_))
        ));
        assert!(matches!(
            social.block("ann", "nobody").await,
            Err(StoreError::NotFound(_))
        ));
        assert!(matches!(
            social.unblock("ann", "nobody").await,
            Err(StoreError::NotFound(_))
        ));
    }
}

#[tokio::test]
async fn lists_page_newest_first_and_a_second_mute_replaces_the_first() {
    for kind in kinds("lists_page_newest_first") {
        let t = fresh_store(kind).await;
        let social = social(&t.store, &settings(FeedStrategy::Cache));
        for id in ["ann", "bob", "cat", "dan"] {
            social.create_user(id, id).await.unwrap();
        }
        for other in ["bob", "cat", "dan"] {
            social.block("ann", other).await.unwrap();
            tokio::time::sleep(std::time::Duration::from_millis(2)).await;
        }
        let mut seen = Vec::new();
        let mut after = None;
        loop {
            let page = social.relation_list("ann", false, after, 2).await.unwrap();
            seen.extend(page.items.iter().map(|r| r.other.clone()));
            match page.next {
                Some(next) => after = Some(next),
                None => break,
            }
        }
        assert_eq!(seen, ["dan", "cat", "bob"], "{kind:?}");
        let request = |notifications, duration_ms| MuteRequest {
            notifications,
            duration_ms,
        };
        assert!(
            social
                .mute("ann", "bob", request(true, None))
                .await
                .unwrap()
        );
        assert!(
            !social
                .mute("ann", "bob", request(false, Some(3_600_000)))
                .await
                .unwrap()
        );
        let mutes = social.relation_list("ann", true, None, 10).await.unwrap();
        assert_eq!(mutes.items.len(), 1, "{kind:?}");
        let mute = mutes.items[0].mute.unwrap();
        assert!(!mute.notifications, "{kind:?}: the second mute's settings");
        assert!(mute.until_ms.is_some(), "{kind:?}");
        let hidden = t
            .store
            .relations
            .hidden("ann", socialite::domain::now_ms())
            .await;
        let hidden = hidden.unwrap();
        assert!(hidden.hides("bob") && hidden.blocks("bob"), "{kind:?}");
        assert!(!hidden.hides("ann"), "{kind:?}");
        assert_eq!(hidden.len(), 3, "{kind:?}");
        let other_side = t.store.relations.hidden("dan", 0).await.unwrap();
        assert!(other_side.blocks("ann"), "{kind:?}: who blocks me");
        social.unmute("ann", "bob").await.unwrap();
        let mutes = social.relation_list("ann", true, None, 10).await.unwrap();
        assert!(mutes.items.is_empty(), "{kind:?}");
        assert!(matches!(
            social.mute("ann", "ann", request(true, None)).await,
            Err(StoreError::Invalid(_))
        ));
    }
}

/// The follow passes its look for a block; the block then stores its document and
/// stops before it removes the edges; the follow finishes, then the block. Whichever
/// way the stores order them, the follow ends with no edge and no counter move, and no
/// derived datum keeps a trace of a follow that was refused: the follower's activity
/// log holds the follow exactly when the follow was answered with success. On the
/// embedded store the block's look inside the follow's transaction refuses it; on
/// MongoDB the follow's intent, stored before its look, makes the block wait for the
/// edge and take it away as an unfollow. (MongoDB once inserted the edge, looked again,
/// found the block and deleted it, answering 403: the activity worker had seen the
/// insert and logged a follow that never happened.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_follow_racing_a_block_ends_with_no_edge_and_no_trace() {
    for kind in kinds("a_follow_racing_a_block_ends_with_no_edge_and_no_trace") {
        let t = fresh_store(kind).await;
        let social = Arc::new(social(&t.store, &settings(FeedStrategy::Cache)));
        let (fan, star) = (format!("racer_{kind:?}"), format!("star_{kind:?}"));
        for id in [&fan, &star] {
            social.create_user(id, id).await.unwrap();
        }
        let follow_gate = socialite::faults::hold("follow.checked", &fan);
        let follow = tokio::spawn({
            let (social, fan, star) = (social.clone(), fan.clone(), star.clone());
            async move { social.follow(&fan, &star).await }
        });
        follow_gate.reached.notified().await;
        // The embedded block is one transaction: nothing to stop half-way.
        let block_gate =
            (kind == Kind::Mongo).then(|| socialite::faults::hold("block.stored", &star));
        let block = tokio::spawn({
            let (social, fan, star) = (social.clone(), fan.clone(), star.clone());
            async move { social.block(&star, &fan).await }
        });
        match &block_gate {
            Some(gate) => gate.reached.notified().await,
            None => {
                while !block.is_finished() {
                    tokio::task::yield_now().await;
                }
            }
        }
        follow_gate.release.notify_one();
        let result = follow.await.unwrap();
        if let Some(gate) = &block_gate {
            gate.release.notify_one();
        }
        block.await.unwrap().unwrap();
        assert!(
            t.store.graph.edge(&fan, &star).await.unwrap().is_none(),
            "{kind:?}: an edge outlived the block"
        );
        assert_eq!(counts(&social, &star).await, (0, 0), "{kind:?}");
        assert_eq!(counts(&social, &fan).await, (0, 0), "{kind:?}");
        drain(
            &t.store,
            ActivityWorker::new(t.store.activity.clone(), ActivityLimits::default()),
        )
        .await;
        let logged = crate::common::activity_logged(&t.store, &[&fan]).await;
        let follows = logged
            .iter()
            .filter(|(_, kind, _)| *kind == ActivityType::Follow);
        assert_eq!(
            follows.count(),
            usize::from(result.is_ok()),
            "{kind:?}: the follow was answered {result:?}, and the activity log holds {logged:?}"
        );
        match (kind, &result) {
            (Kind::Embedded, Err(StoreError::Forbidden(_))) | (Kind::Mongo, Ok(true)) => {}
            other => panic!("the follow's answer: {other:?}"),
        }
    }
}
