//! A group's count against its standing notifications when a dismissal or a clear
//! races the worker (MongoDB: held at gates in the middle of each; embedded: each is one
//! transaction, so the same steps run as they come). Each notification leaves its group
//! exactly once, whoever takes it: the count equals the standing notifications after the
//! race, and again after one more like (which a count hidden below zero would show).

use std::sync::Arc;

use socialite::domain::{NotificationFilter, NotificationType, PostId, now_ms};
use socialite::faults::{self, Gate};
use socialite::feed::FeedSettings;
use socialite::store::{NotificationEffect, Recipient, Store, StoreError};
use socialite::workers::{ManualClock, Runner};

use super::common::{Kind, create_user, fresh_store, kinds};
use super::{TTL, all_of, fence, post, runner, settle};

/// The like group of `post` in `user`'s grouped view (0 when it shows none), and how
/// many like notifications about `post` stand.
pub(super) async fn count_and_standing(store: &Store, user: &str, post: PostId) -> (u64, u64) {
    let all = NotificationFilter::default();
    let groups = store
        .notifications
        .notification_groups(user, &all, None, 100)
        .await
        .unwrap();
    let count = groups
        .iter()
        .find(|g| g.kind == NotificationType::Like && g.post == Some(post))
        .map_or(0, |g| g.count);
    let standing = all_of(store, user, &all, 100)
        .await
        .iter()
        .filter(|n| n.kind == NotificationType::Like && n.post == Some(post))
        .count() as u64;
    (count, standing)
}

/// A gate at `place` for `user` on MongoDB; none on the embedded store, whose writes are
/// one transaction each.
pub(super) fn held(kind: Kind, place: &'static str, user: &str) -> Option<Arc<Gate>> {
    (kind == Kind::Mongo).then(|| faults::hold(place, user))
}

/// The like notification of `actor` about `post`, as `user` has it.
pub(super) async fn like_of(
    store: &Store,
    user: &str,
    actor: &str,
    post: PostId,
) -> Option<PostId> {
    all_of(store, user, &NotificationFilter::default(), 100)
        .await
        .into_iter()
        .find(|n| n.kind == NotificationType::Like && n.actor == actor && n.post == Some(post))
        .map(|n| n.id)
}
/// One more like of `al`'s post `p` by `dy` after a dismissal or clear, counted once:
/// after a clear, dated a minute past it (a clear hides every like up to its instant,
/// and a change's time may be the server's, to the second), applied as the worker
/// would, under a lease of its own, past every change's `seq`; after a dismissal, a
/// plain like the worker applies. The group then counts `left + 1` and as many stand.
pub(super) async fn one_more_like(
    store: &Store,
    worker: &mut Runner,
    (al, dy, p): (&str, &str, PostId),
    clear: bool,
    left: u64,
    kind: Kind,
) {
    if clear {
        let f = fence(store, "X", now_ms() + 10 * TTL).await;
        let later = NotificationEffect::Add {
            to: Recipient::User(al.to_owned()),
            kind: NotificationType::Like,
            actor: dy.to_owned(),
            post: Some(p),
            at_ms: now_ms() + 60_000,
        };
        let notifications = &store.notifications;
        notifications
            .apply_notification(&f, i64::MAX as u64 - 1, &later)
            .await
            .unwrap();
    } else {
        store.activity.like(dy, p, now_ms()).await.unwrap();
        settle(worker).await;
    }
    assert_eq!(
        count_and_standing(store, al, p).await,
        (left + 1, left + 1),
        "{kind:?}: after one more like"
    );
}

/// Accepts `NotFound` on the embedded store only, where the unheld worker may have
/// taken the notification away first.
fn taken_or_gone(kind: Kind, result: Result<(), StoreError>) {
    match result {
        Ok(()) => {}
        Err(StoreError::NotFound(_)) if kind == Kind::Embedded => {}
        Err(other) => panic!("{kind:?}: {other:?}"),
    }
}

/// The worker's removal (an unlike) held after it found the notification and before it
/// took it out of its group, while a dismissal of it (or a clear) lands.
async fn removal_held_while_taken(tag: &str, clear: bool) {
    for kind in kinds(&format!("removal_held_while_taken_{tag}")) {
        let t = fresh_store(kind).await;
        let store = &t.store;
        let [al, bo, cy, dy] = ["al", "bo", "cy", "dy"].map(|u| format!("{tag}{u}"));
        for u in [&al, &bo, &cy, &dy] {
            create_user(store, u).await;
        }
        let clock = Arc::new(ManualClock::at(now_ms()));
        let mut worker = runner(store, &clock, "W");
        let p = post(store, &al, "like me").await;
        store.activity.like(&bo, p, now_ms()).await.unwrap();
        store.activity.like(&cy, p, now_ms()).await.unwrap();
        settle(&mut worker).await;
        assert_eq!(count_and_standing(store, &al, p).await, (2, 2), "{kind:?}");
        let id = like_of(store, &al, &bo, p).await.unwrap();

        store.activity.unlike(&bo, p).await.unwrap();
        let gate = held(kind, "notification.found", &al);
        let running = tokio::spawn(async move {
            settle(&mut worker).await;
            worker
        });
        if let Some(gate) = &gate {
            gate.reached.notified().await;
        }
        let social = super::common::social(store.clone(), &FeedSettings::default());
        let service = social.notifications();
        if clear {
            service.clear(&al).await.unwrap();
        } else {
            taken_or_gone(kind, service.dismiss(&al, id).await);
        }
        if let Some(gate) = &gate {
            gate.release.notify_one();
        }
        let mut worker = running.await.unwrap();
        let left = u64::from(!clear);
        let (count, standing) = count_and_standing(store, &al, p).await;
        assert_eq!(standing, left, "{kind:?}");
        assert_eq!(
            count, standing,
            "{kind:?}: the group's count is not its standing notifications"
        );

        one_more_like(store, &mut worker, (&al, &dy, p), clear, left, kind).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_removal_held_after_its_find_and_a_dismissal_take_it_once() {
    removal_held_while_taken("rmdis", false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_removal_held_after_its_find_and_a_clear_take_it_once() {
    removal_held_while_taken("rmclr", true).await;
}

/// A dismissal held after it took the notification and before it moved the group,
/// while the worker adds another like to the group and applies the unlike of the one
/// dismissed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dismissal_held_after_its_take_and_the_worker_move_the_group_once() {
    for kind in kinds("a_dismissal_held_after_its_take_and_the_worker_move_the_group_once") {
        let t = fresh_store(kind).await;
        let store = &t.store;
        let [al, bo, cy, dy] = ["al", "bo", "cy", "dy"].map(|u| format!("dis{u}"));
        for u in [&al, &bo, &cy, &dy] {
            create_user(store, u).await;
        }
        let clock = Arc::new(ManualClock::at(now_ms()));
        let mut worker = runner(store, &clock, "W");
        let p = post(store, &al, "like me").await;
        store.activity.like(&bo, p, now_ms()).await.unwrap();
        settle(&mut worker).await;
        assert_eq!(count_and_standing(store, &al, p).await, (1, 1), "{kind:?}");
        let id = like_of(store, &al, &bo, p).await.unwrap();

        store.activity.like(&cy, p, now_ms()).await.unwrap();
        store.activity.unlike(&bo, p).await.unwrap();
        let gate = held(kind, "notification.taken", &al);
        let social = Arc::new(super::common::social(
            store.clone(),
            &FeedSettings::default(),
        ));
        let dismissing = {
            let (social, al) = (social.clone(), al.clone());
            tokio::spawn(async move { social.notifications().dismiss(&al, id).await })
        };
        if let Some(gate) = &gate {
            gate.reached.notified().await;
        }
        settle(&mut worker).await;
        if let Some(gate) = &gate {
            gate.release.notify_one();
        }
        taken_or_gone(kind, dismissing.await.unwrap());
        let (count, standing) = count_and_standing(store, &al, p).await;
        assert_eq!(standing, 1, "{kind:?}");
        assert_eq!(
            count, standing,
            "{kind:?}: the group's count is not its standing notifications"
        );

        store.activity.like(&dy, p, now_ms()).await.unwrap();
        settle(&mut worker).await;
        assert_eq!(
            count_and_standing(store, &al, p).await,
            (2, 2),
            "{kind:?}: after one more like"
        );
    }
}

/// The worker's add held after it made the notification and before it moved the group,
/// while a dismissal takes it: the dismissal's move lands first (on a group the add has
/// not made yet), the add's after it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_add_held_before_its_move_and_a_dismissal_count_it_once() {
    for kind in kinds("an_add_held_before_its_move_and_a_dismissal_count_it_once") {
        let t = fresh_store(kind).await;
        let store = &t.store;
        let [al, bo, cy] = ["al", "bo", "cy"].map(|u| format!("add{u}"));
        for u in [&al, &bo, &cy] {
            create_user(store, u).await;
        }
        let clock = Arc::new(ManualClock::at(now_ms()));
        let mut worker = runner(store, &clock, "W");
        let p = post(store, &al, "like me").await;
        settle(&mut worker).await;

        store.activity.like(&bo, p, now_ms()).await.unwrap();
        let gate = held(kind, "notification.made", &al);
        let mut running = Some(tokio::spawn(async move {
            settle(&mut worker).await;
            worker
        }));
        let mut done = None;
        match &gate {
            Some(gate) => gate.reached.notified().await,
            // Unheld, the worker's one transaction comes first.
            None => done = Some(running.take().unwrap().await.unwrap()),
        }
        let id = like_of(store, &al, &bo, p).await.unwrap();
        let social = super::common::social(store.clone(), &FeedSettings::default());
        social.notifications().dismiss(&al, id).await.unwrap();
        if let Some(gate) = &gate {
            gate.release.notify_one();
        }
        let mut worker = match running {
            Some(running) => running.await.unwrap(),
            None => done.unwrap(),
        };
        assert_eq!(
            count_and_standing(store, &al, p).await,
            (0, 0),
            "{kind:?}: the group's count is not its standing notifications"
        );

        store.activity.like(&cy, p, now_ms()).await.unwrap();
        settle(&mut worker).await;
        assert_eq!(
            count_and_standing(store, &al, p).await,
            (1, 1),
            "{kind:?}: after one more like"
        );
    }
}
