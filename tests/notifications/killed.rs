//! A worker killed (its task dropped at a gate, as a `kill -9` would leave it) after it
//! made a follow notification and before it moved the follow group, and the notification
//! dismissed before the next holder replays the follow: the dismissal takes it out of
//! the group (`-1`), so the replay, which the dismissal now hides, still owes the group
//! the `+1` of its making. The soak's MongoDB seed 1795939005108529888 (a follow whose
//! request met a `kill -9`, then dismissed) left the follow group one below the plain
//! list for good. On the embedded store the add is one transaction, which runs whole.

use std::sync::Arc;

use socialite::domain::{NotificationFilter, NotificationType, now_ms};
use socialite::feed::FeedSettings;
use socialite::store::Store;
use socialite::workers::ManualClock;

use super::common::{create_user, fresh_store, kinds};
use super::races::held;
use super::{TTL, all_of, runner, settle};

/// `user`'s follow group count (0 when it shows none) and how many follow notifications
/// of `user` stand.
async fn follows_counted_and_standing(store: &Store, user: &str) -> (u64, u64) {
    let all = NotificationFilter::default();
    let groups = store
        .notifications
        .notification_groups(user, &all, None, 100)
        .await
        .unwrap();
    let count = groups
        .iter()
        .find(|g| g.kind == NotificationType::Follow)
        .map_or(0, |g| g.count);
    let standing = all_of(store, user, &all, 100)
        .await
        .iter()
        .filter(|n| n.kind == NotificationType::Follow)
        .count() as u64;
    (count, standing)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_add_killed_before_its_move_then_dismissed_is_counted_by_its_replay() {
    for kind in kinds("an_add_killed_before_its_move_then_dismissed_is_counted_by_its_replay") {
        let t = fresh_store(kind).await;
        let store = &t.store;
        let [al, bo, cy] = ["al", "bo", "cy"].map(|u| format!("kil{u}"));
        for u in [&al, &bo, &cy] {
            create_user(store, u).await;
        }
        let clock = Arc::new(ManualClock::at(now_ms()));
        let mut worker = runner(store, &clock, "W");
        settle(&mut worker).await;

        store.graph.follow(&bo, &al, now_ms()).await.unwrap();
        let gate = held(kind, "notification.made", &al);
        let running = tokio::spawn(async move { settle(&mut worker).await });
        match &gate {
            Some(gate) => {
                gate.reached.notified().await;
                running.abort();
                assert!(running.await.unwrap_err().is_cancelled(), "{kind:?}");
            }
            None => running.await.unwrap(),
        }
        let standing = all_of(store, &al, &NotificationFilter::default(), 100).await;
        let id = standing
            .iter()
            .find(|n| n.kind == NotificationType::Follow && n.actor == bo)
            .map(|n| n.id)
            .expect("the follow's notification, made before the kill");
        let social = super::common::social(store.clone(), &FeedSettings::default());
        social.notifications().dismiss(&al, id).await.unwrap();

        // The killed holder's lease runs out; the next one replays the follow.
        clock.advance(TTL + 1);
        let mut next = runner(store, &clock, "W2");
        settle(&mut next).await;
        assert_eq!(
            follows_counted_and_standing(store, &al).await,
            (0, 0),
            "{kind:?}: dismissed"
        );

        store.graph.follow(&cy, &al, now_ms()).await.unwrap();
        settle(&mut next).await;
        assert_eq!(
            follows_counted_and_standing(store, &al).await,
            (1, 1),
            "{kind:?}: after one more follow, the group's count is not its standing ones"
        );
    }
}
