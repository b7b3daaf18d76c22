//! Notifications on both stores: the worker driven one `step()` at a time (each type for
//! the right user and never the actor, undoing removes, a re-like is new, replays change
//! nothing, a fenced-off holder is refused, history lost rebuilds the derived
//! definition), the grouped view with hundreds of likers, type filters and paging; and
//! the HTTP API on a real server (`notifications/http.rs`); the rebuild in small bounds
//! (`notifications/rebuild.rs`).

mod common;
#[path = "notifications/dismiss.rs"]
mod dismiss;
#[path = "notifications/http.rs"]
mod http;
#[path = "notifications/late.rs"]
mod late;
#[path = "notifications/live.rs"]
mod live;
#[path = "notifications/races.rs"]
mod races;
#[path = "notifications/rebuild.rs"]
mod rebuild;
#[path = "stream/sse.rs"]
mod sse;

use std::collections::BTreeSet;
use std::sync::Arc;

use common::{create_user, fresh_store, kinds};
use socialite::derived::notifications::{NotificationKey, expected, groups, keys};
use socialite::domain::{
    Change, ChangeOp, ChangePosition, Fence, Notification, NotificationFilter, NotificationType,
    PostId, now_ms,
};
use socialite::store::{Store, StoreError};
use socialite::workers::notifications::{NAME, NotificationsWorker};
use socialite::workers::{ManualClock, Runner, RunnerSettings, Step, Worker};

use NotificationType::{Follow, Like, Mention, Reply};

const TTL: i64 = 10_000;
const SETTINGS: RunnerSettings = RunnerSettings {
    lease_ttl_ms: TTL,
    batch_size: 100,
    refresh_ms: 1_000,
};

fn runner(store: &Store, clock: &Arc<ManualClock>, holder: &str) -> Runner {
    Runner::new(
        Arc::new(NotificationsWorker::new(store.notifications.clone())),
        store.leases.clone(),
        store.change_feed.clone(),
        clock.clone(),
        holder,
        SETTINGS,
    )
}

async fn settle(worker: &mut Runner) {
    loop {
        match worker.step().await.unwrap() {
            Step::Applied(_) | Step::Rebuilt => {}
            Step::Idle => return,
            other => panic!("unexpected step {other:?}"),
        }
    }
}

async fn post(store: &Store, author: &str, text: &str) -> PostId {
    store
        .content
        .insert_post(author, text, None, now_ms())
        .await
        .unwrap()
        .post
        .id
}

/// Every notification of `user`, newest first, walked in pages of `page`.
async fn all_of(
    store: &Store,
    user: &str,
    filter: &NotificationFilter,
    page: usize,
) -> Vec<Notification> {
    let mut out: Vec<Notification> = Vec::new();
    let mut before = None;
    loop {
        let items = store
            .notifications
            .notifications(user, filter, before, page)
            .await
            .unwrap();
        let done = items.len() < page;
        before = items.last().map(|n| n.id);
        out.extend(items);
        if done {
            return out;
        }
    }
}

async fn keys_of(store: &Store, user: &str) -> Vec<(NotificationType, String, Option<PostId>)> {
    let mut k: Vec<_> = all_of(store, user, &NotificationFilter::default(), 100)
        .await
        .into_iter()
        .map(|n| (n.kind, n.actor, n.post))
        .collect();
    k.sort();
    k
}

/// Every stored notification of `users`, keyed, and what the sources imply.
async fn stored_and_expected(
    store: &Store,
    users: &[&str],
) -> (BTreeSet<NotificationKey>, BTreeSet<NotificationKey>) {
    let mut stored = BTreeSet::new();
    for user in users {
        stored.extend(keys(
            &all_of(store, user, &NotificationFilter::default(), 100).await,
        ));
    }
    let sources = store.notifications.notification_sources().await.unwrap();
    (stored, expected(&sources).into_keys().collect())
}

async fn fence(store: &Store, holder: &str, at: i64) -> Fence {
    let lease = store.leases.acquire(NAME, holder, at, TTL).await.unwrap();
    assert!(lease.held_by(holder));
    Fence {
        lease: NAME.into(),
        holder: holder.into(),
        version: lease.version,
    }
}

/// A post's change document as the replies branch will write it, made by hand.
fn reply_change(seq: u64, id: PostId, author: &str, parent: PostId, parent_author: &str) -> Change {
    Change {
        position: ChangePosition(format!("hand-{seq}")),
        seq,
        at_ms: id.timestamp_ms(),
        collection: "posts".into(),
        op: ChangeOp::Insert,
        key: id.to_string(),
        document: Some(serde_json::json!({
            "id": id.to_string(), "author": author, "text": "agreed",
            "reply_to": { "post": parent.to_string(), "author": parent_author },
        })),
    }
}

#[tokio::test]
async fn each_type_notifies_its_target_never_the_actor_and_undoing_removes_it() {
    for kind in kinds("each_type_notifies_its_target_never_the_actor_and_undoing_removes_it") {
        let t = fresh_store(kind).await;
        let store = &t.store;
        for u in ["al", "bo", "cy"] {
            create_user(store, u).await;
        }
        let clock = Arc::new(ManualClock::at(now_ms()));
        let mut worker = runner(store, &clock, "W");
        let p = post(store, "al", "my post @al").await;
        store.graph.follow("bo", "al", now_ms()).await.unwrap();
        store.activity.like("bo", p, now_ms()).await.unwrap();
        store.activity.like("al", p, now_ms()).await.unwrap();
        let m = post(store, "cy", "hey @al and @cy and @ghost").await;
        settle(&mut worker).await;
        let expect = vec![
            (Follow, "bo".to_owned(), None),
            (Like, "bo".to_owned(), Some(p)),
            (Mention, "cy".to_owned(), Some(m)),
        ];
        assert_eq!(keys_of(store, "al").await, expect, "{kind:?}");
        assert!(keys_of(store, "bo").await.is_empty(), "{kind:?}");
        assert!(
            keys_of(store, "cy").await.is_empty(),
            "{kind:?}: no self-mention"
        );

        // A reply, from a hand-made change document: the parent's author, never oneself.
        let f = fence(store, "W", now_ms()).await;
        let worker_alone = NotificationsWorker::new(store.notifications.clone());
        let r = PostId::at(now_ms(), 7);
        let own = PostId::at(now_ms(), 8);
        let changes = [
            reply_change(1 << 40, r, "bo", p, "al"),
            reply_change((1 << 40) + 1, own, "al", p, "al"),
        ];
        worker_alone.apply(&changes, &f).await.unwrap();
        assert!(
            keys_of(store, "al")
                .await
                .contains(&(Reply, "bo".to_owned(), Some(r))),
            "{kind:?}"
        );
        assert!(
            !keys_of(store, "al")
                .await
                .contains(&(Reply, "al".to_owned(), Some(own))),
            "{kind:?}"
        );
        let deleted = Change {
            op: ChangeOp::Delete,
            document: None,
            seq: (1 << 40) + 2,
            ..changes[0].clone()
        };
        worker_alone.apply(&[deleted], &f).await.unwrap();
        assert_eq!(
            keys_of(store, "al").await,
            expect,
            "{kind:?}: the deleted reply's is gone"
        );

        // Undo each cause.
        let before_relike = all_of(store, "al", &NotificationFilter::default(), 100).await;
        let liked = before_relike
            .iter()
            .find(|n| n.kind == Like)
            .unwrap()
            .clone();
        store.graph.unfollow("bo", "al").await.unwrap();
        store.activity.unlike("bo", p).await.unwrap();
        store.content.delete_post(m).await.unwrap();
        settle(&mut worker).await;
        assert!(keys_of(store, "al").await.is_empty(), "{kind:?}");

        // A re-like is a new notification; deleting the post takes it away.
        store.activity.like("bo", p, now_ms()).await.unwrap();
        settle(&mut worker).await;
        let again = all_of(store, "al", &NotificationFilter::default(), 100).await;
        assert_eq!(again.len(), 1, "{kind:?}");
        assert!(again[0].id > liked.id, "{kind:?}: a new id");
        store.content.delete_post(p).await.unwrap();
        settle(&mut worker).await;
        assert!(keys_of(store, "al").await.is_empty(), "{kind:?}");
        let g = store
            .notifications
            .notification_groups("al", &NotificationFilter::default(), None, 10)
            .await
            .unwrap();
        assert!(g.is_empty(), "{kind:?}: {g:?}");
    }
}

/// A notification whose cause was undone is not served, though the worker has not
/// removed it yet: the read checks each page against the causes it names.
#[tokio::test]
async fn a_notification_is_not_served_once_its_cause_is_undone() {
    for kind in kinds("a_notification_is_not_served_once_its_cause_is_undone") {
        let t = fresh_store(kind).await;
        let store = &t.store;
        for u in ["al", "bo", "cy"] {
            create_user(store, u).await;
        }
        let clock = Arc::new(ManualClock::at(now_ms()));
        let mut worker = runner(store, &clock, "W");
        let p = post(store, "al", "mine").await;
        let kept = post(store, "al", "kept").await;
        store.graph.follow("bo", "al", now_ms()).await.unwrap();
        store.graph.follow("cy", "al", now_ms()).await.unwrap();
        store.activity.like("bo", p, now_ms()).await.unwrap();
        store.activity.like("cy", kept, now_ms()).await.unwrap();
        store.reposts.repost("bo", p, now_ms()).await.unwrap();
        let m = post(store, "cy", "hi @al").await;
        settle(&mut worker).await;
        let service = socialite::service::Notifications::new(store.clone());
        let served = |store_kinds: Vec<(NotificationType, String)>| {
            let mut k = store_kinds;
            k.sort();
            k
        };
        let read = async || {
            served(
                service
                    .page("al", &NotificationFilter::default(), None, 20)
                    .await
                    .unwrap()
                    .items
                    .into_iter()
                    .map(|n| (n.kind, n.actor.id))
                    .collect(),
            )
        };
        assert_eq!(read().await.len(), 6, "{kind:?}: {:?}", read().await);
        // Each cause undone, and the worker not run.
        store.graph.unfollow("bo", "al").await.unwrap();
        store.activity.unlike("bo", p).await.unwrap();
        store.reposts.unrepost("bo", p).await.unwrap();
        store.content.delete_post(m).await.unwrap();
        assert_eq!(
            keys_of(store, "al").await.len(),
            6,
            "{kind:?}: still stored"
        );
        assert_eq!(
            read().await,
            served(vec![(Follow, "cy".to_owned()), (Like, "cy".to_owned())]),
            "{kind:?}"
        );
        // A deleted post takes its likes' notifications with it.
        store.content.delete_post(kept).await.unwrap();
        assert_eq!(
            read().await,
            served(vec![(Follow, "cy".to_owned())]),
            "{kind:?}"
        );
    }
}

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

/// A post with hundreds of likers is one group: its count, its latest three actors
/// (re-read when the newest unlikes); the plain view pages without gaps or repeats, and
/// a type filter serves that type alone.
#[tokio::test]
async fn many_likers_make_one_group_and_pages_have_no_gaps() {
    for kind in kinds("many_likers_make_one_group_and_pages_have_no_gaps") {
        let t = fresh_store(kind).await;
        let store = &t.store;
        create_user(store, "al").await;
        let p = post(store, "al", "popular").await;
        let n = 300;
        for i in 0..n {
            let u = format!("u{i:03}");
            create_user(store, &u).await;
            store.activity.like(&u, p, now_ms()).await.unwrap();
        }
        store.graph.follow("u000", "al", now_ms()).await.unwrap();
        let clock = Arc::new(ManualClock::at(now_ms()));
        let mut worker = runner(store, &clock, "W");
        settle(&mut worker).await;
        let f = NotificationFilter::default();
        let g = store
            .notifications
            .notification_groups("al", &f, None, 10)
            .await
            .unwrap();
        assert_eq!(g.len(), 2, "{kind:?}: {g:?}");
        assert_eq!((g[0].kind, g[0].count), (Follow, 1), "{kind:?}");
        assert_eq!(
            (g[1].kind, g[1].count, g[1].post),
            (Like, n, Some(p)),
            "{kind:?}"
        );
        assert_eq!(g[1].actors, ["u299", "u298", "u297"], "{kind:?}");
        store.activity.unlike("u299", p).await.unwrap();
        settle(&mut worker).await;
        let g = store
            .notifications
            .notification_groups("al", &f, None, 10)
            .await
            .unwrap();
        assert_eq!(
            (g[1].count, g[1].actors.clone()),
            (n - 1, vec!["u298".into(), "u297".into(), "u296".into()]),
            "{kind:?}"
        );
        // Paging the groups: one per page, in order, then none.
        let first = store
            .notifications
            .notification_groups("al", &f, None, 1)
            .await
            .unwrap();
        let second = store
            .notifications
            .notification_groups("al", &f, Some(first[0].latest_id), 1)
            .await
            .unwrap();
        assert_eq!((first[0].kind, second[0].kind), (Follow, Like), "{kind:?}");

        let walked = all_of(store, "al", &f, 7).await;
        assert_eq!(walked.len() as u64, n, "{kind:?}");
        assert!(
            walked.windows(2).all(|w| w[0].id > w[1].id),
            "{kind:?}: newest first, no repeats"
        );
        let follows = NotificationFilter {
            types: vec![Follow],
            hidden: vec![],
        };
        let only = all_of(store, "al", &follows, 7).await;
        assert_eq!(only.len(), 1, "{kind:?}");
        assert_eq!(only[0].actor, "u000");
        let likes = NotificationFilter {
            types: vec![Like, Mention],
            hidden: vec![],
        };
        assert_eq!(
            all_of(store, "al", &likes, 50).await.len() as u64,
            n - 1,
            "{kind:?}"
        );
        // Hidden actors are not served, and the page is refilled.
        let hidden = NotificationFilter {
            types: vec![],
            hidden: vec!["u298".into(), "u000".into()],
        };
        let page = store
            .notifications
            .notifications("al", &hidden, None, 5)
            .await
            .unwrap();
        assert_eq!(page.len(), 5);
        assert!(
            page.iter().all(|n| n.actor != "u298" && n.actor != "u000"),
            "{kind:?}"
        );
    }
}
