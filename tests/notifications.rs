//! Notifications on both stores: the worker driven one `step()` at a time (each type for
//! the right user and never the actor, undoing removes, a re-like is new, a cause undone
//! is not served) here; replays that change nothing, a fenced-off holder refused and
//! history lost rebuilding the derived definition (`notifications/exactly_once.rs`);
//! the grouped view with hundreds of likers, type filters and paging
//! (`notifications/grouped.rs`); the HTTP API on a real server
//! (`notifications/http.rs`); the rebuild in small bounds (`notifications/rebuild.rs`);
//! an add killed before its group's move whose notification is dismissed before the replay
//! (`notifications/killed.rs`); dismissals and clears killed or paused part way, then settled
//! (`notifications/takings.rs`), or killed and finished by the worker's sweep with no
//! one dismissing again (`notifications/sweep.rs`), in bounded batches
//! (`notifications/sweep_batches.rs`), and past a claim written while the sweep was
//! between its read of a group and its write of `taking_at` (`notifications/sweep_race.rs`).

mod common;
#[path = "notifications/dismiss.rs"]
mod dismiss;
#[path = "notifications/exactly_once.rs"]
mod exactly_once;
#[path = "notifications/grouped.rs"]
mod grouped;
#[path = "notifications/http.rs"]
mod http;
#[path = "notifications/killed.rs"]
mod killed;
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
#[path = "notifications/sweep.rs"]
mod sweep;
#[path = "notifications/sweep_batches.rs"]
mod sweep_batches;
#[path = "notifications/sweep_race.rs"]
mod sweep_race;
#[path = "notifications/takings.rs"]
mod takings;

use std::collections::BTreeSet;
use std::sync::Arc;

use common::{create_user, fresh_store, kinds};
use socialite::derived::notifications::{NotificationKey, expected, keys};
use socialite::domain::{
    Change, ChangeOp, ChangePosition, Fence, Notification, NotificationFilter, NotificationType,
    PostId, now_ms,
};
use socialite::store::Store;
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
