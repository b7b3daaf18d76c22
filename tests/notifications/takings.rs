//! A dismissal or clear killed (its task dropped at a gate, as a `kill -9` would leave
//! it) or paused part way on MongoDB, then settled by
//! `NotificationStore::settle_notification_takings`: the group's count is its standing
//! notifications, and a paused writer that resumes after the settler moves nothing
//! again. On the embedded store each is one transaction, which runs whole; settling
//! finds nothing.

use std::sync::Arc;

use socialite::domain::{PostId, now_ms};
use socialite::feed::FeedSettings;
use socialite::store::Store;
use socialite::workers::{ManualClock, Runner};

use super::common::{Kind, create_user, fresh_store, kinds};
use super::races::{count_and_standing, held, like_of, one_more_like};
use super::{post, runner, settle};

/// `al`'s post liked by `bo` and `cy`, notified.
async fn two_likes(store: &Store, tag: &str) -> ([String; 4], PostId, Runner) {
    let users = ["al", "bo", "cy", "dy"].map(|u| format!("{tag}{u}"));
    for u in &users {
        create_user(store, u).await;
    }
    let clock = Arc::new(ManualClock::at(now_ms()));
    let mut worker = runner(store, &clock, "W");
    let p = post(store, &users[0], "like me").await;
    for u in &users[1..3] {
        store.activity.like(u, p, now_ms()).await.unwrap();
    }
    settle(&mut worker).await;
    assert_eq!(count_and_standing(store, &users[0], p).await, (2, 2));
    (users, p, worker)
}

/// Settles everything of `user` (every claim counts as stale): how many it settled.
async fn settle_all(store: &Store, user: &str) -> u64 {
    let takings = &store.notifications;
    takings
        .settle_notification_takings(user, now_ms() + 1)
        .await
        .unwrap()
}

/// A dismissal (or a clear) of `bo`'s like held at `place`; then `kill`ed there (its
/// task dropped) or, else, let go only after a settler ran. Either way the settler
/// finishes it, once.
async fn taking_held(tag: &str, place: &'static str, clear: bool, kill: bool) {
    for kind in kinds(tag) {
        let t = fresh_store(kind).await;
        let store = &t.store;
        let ([al, bo, _, dy], p, mut worker) = two_likes(store, tag).await;
        let id = like_of(store, &al, &bo, p).await.unwrap();
        let gate = held(kind, place, &al);
        let social = Arc::new(super::common::social(
            store.clone(),
            &FeedSettings::default(),
        ));
        let mut taking = Some({
            let (social, al) = (social.clone(), al.clone());
            tokio::spawn(async move {
                if clear {
                    social.notifications().clear(&al).await
                } else {
                    social.notifications().dismiss(&al, id).await
                }
            })
        });
        let left = if clear { 0 } else { 1 };
        match &gate {
            Some(gate) => gate.reached.notified().await,
            None => taking.take().unwrap().await.unwrap().unwrap(),
        }
        if let (Some(killed), true) = (&taking, kill) {
            killed.abort();
            let killed = taking.take().unwrap().await;
            assert!(killed.unwrap_err().is_cancelled());
        }
        let settled = settle_all(store, &al).await;
        assert_eq!(settled, u64::from(kind == Kind::Mongo), "{kind:?}: settled");
        assert_eq!(
            count_and_standing(store, &al, p).await,
            (left, left),
            "{kind:?}: settled, the group's count is not its standing notifications"
        );
        if let (Some(gate), Some(paused)) = (&gate, taking) {
            gate.release.notify_one();
            paused.await.unwrap().unwrap();
        }
        assert_eq!(
            count_and_standing(store, &al, p).await,
            (left, left),
            "{kind:?}: after the writer's end, the group's count is not its standing ones"
        );
        assert_eq!(settle_all(store, &al).await, 0, "{kind:?}: settled twice");

        one_more_like(store, &mut worker, (&al, &dy, p), clear, left, kind).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dismissal_killed_between_its_take_and_its_move_is_settled_once() {
    taking_held("dktm", "notification.taken", false, true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dismissal_killed_before_its_take_is_finished_by_the_settler() {
    taking_held("dkbt", "notification.intended", false, true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dismissal_paused_past_a_settler_moves_its_group_once() {
    taking_held("dpts", "notification.taken", false, false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dismissal_paused_after_its_count_past_a_settler_moves_its_group_once() {
    taking_held("dpac", "notification.counted", false, false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dismissal_paused_before_its_take_past_a_settler_takes_nothing_again() {
    taking_held("dpbt", "notification.intended", false, false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_clear_killed_between_its_take_and_its_move_is_settled_once() {
    taking_held("cktm", "notification.taken", true, true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_clear_paused_after_its_count_past_a_settler_moves_its_group_once() {
    taking_held("cpac", "notification.counted", true, false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_clear_paused_past_a_settler_moves_its_group_once() {
    taking_held("cpts", "notification.taken", true, false).await;
}
