//! The notifications worker's effects count once: a batch applied again changes
//! nothing, a holder whose lease was taken over is refused and writes nothing, and
//! history lost rebuilds the derived definition, on which later changes apply.

use std::sync::Arc;

use socialite::derived::notifications::groups;
use socialite::domain::{NotificationFilter, NotificationType::Like, now_ms};
use socialite::store::{Store, StoreError};
use socialite::workers::notifications::NotificationsWorker;
use socialite::workers::{ManualClock, Step, Worker};

use super::{TTL, all_of, fence, keys_of, post, runner, settle, stored_and_expected};
use crate::common::{self, create_user, fresh_store, kinds};

/// Applying a batch again changes nothing: notifications, ids and groups stay.
#[tokio::test]
async fn a_replayed_batch_changes_nothing() {
    for kind in kinds("a_replayed_batch_changes_nothing") {
        let t = fresh_store(kind).await;
        let store = &t.store;
        for u in ["al", "bo", "cy", "di"] {
            create_user(store, u).await;
        }
        let p = post(store, "al", "hello").await;
        for u in ["bo", "cy", "di"] {
            store.graph.follow(u, "al", now_ms()).await.unwrap();
            store.activity.like(u, p, now_ms()).await.unwrap();
        }
        store.activity.unlike("cy", p).await.unwrap();
        post(store, "bo", "@al @di").await;
        let changes = store.change_feed.changes(None, 1000).await.unwrap();
        let f = fence(store, "W", now_ms()).await;
        let worker = NotificationsWorker::new(store.notifications.clone());
        worker.apply(&changes, &f).await.unwrap();
        let snapshot = |store: Store| async move {
            let f = NotificationFilter::default();
            (
                all_of(&store, "al", &f, 100).await,
                all_of(&store, "di", &f, 100).await,
                store
                    .notifications
                    .notification_groups("al", &f, None, 100)
                    .await
                    .unwrap(),
            )
        };
        let once = snapshot(store.clone()).await;
        // The whole batch, then its second half, again.
        worker.apply(&changes, &f).await.unwrap();
        worker
            .apply(&changes[changes.len() / 2..], &f)
            .await
            .unwrap();
        assert_eq!(snapshot(store.clone()).await, once, "{kind:?}");
        let likes = once.2.iter().find(|g| g.kind == Like).unwrap();
        assert_eq!(
            (likes.count, likes.actors.clone()),
            (2, vec!["di".to_owned(), "bo".to_owned()]),
            "{kind:?}"
        );
        let (stored, expected) = stored_and_expected(store, &["al", "bo", "cy", "di"]).await;
        assert_eq!(stored, expected, "{kind:?}");
    }
}

/// A holder whose lease was taken over is refused, and writes nothing.
#[tokio::test]
async fn a_fenced_off_holder_is_refused() {
    for kind in kinds("a_fenced_off_holder_is_refused") {
        let t = fresh_store(kind).await;
        let store = &t.store;
        create_user(store, "al").await;
        create_user(store, "bo").await;
        let old = fence(store, "old", 1_000).await;
        let _new = fence(store, "new", 1_000 + TTL + 1).await;
        store.graph.follow("bo", "al", now_ms()).await.unwrap();
        let changes = store.change_feed.changes(None, 100).await.unwrap();
        let worker = NotificationsWorker::new(store.notifications.clone());
        let refused = worker.apply(&changes, &old).await;
        assert!(
            matches!(refused, Err(StoreError::Fenced(_))),
            "{kind:?}: {refused:?}"
        );
        assert!(keys_of(store, "al").await.is_empty(), "{kind:?}");
        let rebuilt = worker.rebuild(&old).await;
        assert!(
            matches!(rebuilt, Err(StoreError::Fenced(_))),
            "{kind:?}: {rebuilt:?}"
        );
        assert!(keys_of(store, "al").await.is_empty(), "{kind:?}");
    }
}

/// History lost (embedded: the feed trimmed past the worker): the worker rebuilds from
/// the sources, counted, and what it holds is the derived definition; changes after the
/// rebuild apply on top.
#[tokio::test]
async fn history_lost_rebuilds_the_derived_definition() {
    let t = fresh_store(common::Kind::Embedded).await;
    let store = &t.store;
    let users = ["al", "bo", "cy"];
    for u in users {
        create_user(store, u).await;
    }
    let clock = Arc::new(ManualClock::at(now_ms()));
    let mut worker = runner(store, &clock, "W");
    let p = post(store, "al", "one").await;
    settle(&mut worker).await;
    store.graph.follow("bo", "al", now_ms()).await.unwrap();
    store.activity.like("cy", p, now_ms()).await.unwrap();
    post(store, "bo", "hi @cy @al").await;
    let far_future = now_ms() + 60_000;
    store
        .change_feed
        .trim_changes(far_future, far_future)
        .await
        .unwrap();
    assert_eq!(worker.step().await.unwrap(), Step::Rebuilt);
    let status = worker.status().lock().unwrap().clone();
    assert_eq!((status.rebuilds, status.history_lost), (1, 1));
    let (stored, expected) = stored_and_expected(store, &users).await;
    assert_eq!(stored, expected);
    assert_eq!(stored.len(), 4, "{stored:?}");
    // Groups rebuilt too, and later changes move them.
    store.activity.like("bo", p, now_ms()).await.unwrap();
    settle(&mut worker).await;
    let f = NotificationFilter::default();
    let mine = all_of(store, "al", &f, 100).await;
    let g = store
        .notifications
        .notification_groups("al", &f, None, 100)
        .await
        .unwrap();
    assert_eq!(g, groups(&mine));
    let (stored, expected) = stored_and_expected(store, &users).await;
    assert_eq!(stored, expected);
}
