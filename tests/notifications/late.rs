//! A write that lands late: a holder checks its fence, stalls, and its lease is taken
//! over; the successor applies the same change and a later one that undoes it; then the
//! stalled write lands (as a `kill -9`ed process's last request may, run by the server
//! after its successor's). It must change nothing: neither the notification nor its
//! group's actors come back. The embedded store refuses the late write by the fence in
//! its own transaction; MongoDB lets it run and guards each write by the `seq`
//! watermark of the document it changes.

use std::sync::Arc;

use socialite::domain::{NotificationFilter, NotificationType, now_ms};
use socialite::faults;
use socialite::workers::Worker;
use socialite::workers::notifications::NotificationsWorker;

use super::common::{Kind, create_user, fresh_store, kinds};
use super::{TTL, fence, keys_of};

/// The follow group of `user`: its count and actors.
async fn follow_group(store: &socialite::store::Store, user: &str) -> Option<(u64, Vec<String>)> {
    store
        .notifications
        .notification_groups(user, &NotificationFilter::default(), None, 10)
        .await
        .unwrap()
        .into_iter()
        .find(|g| g.kind == NotificationType::Follow)
        .map(|g| (g.count, g.actors))
}

/// Holds a call at `place`: the old holder applies the first follow and is held there;
/// the new holder applies everything (both follows, then the unfollow); the old holder
/// goes on.
async fn late_write(place: &'static str, tag: &str, mongo_only: bool) {
    for kind in kinds(&format!("a_late_write_changes_nothing_{tag}")) {
        if mongo_only && kind == Kind::Embedded {
            continue;
        }
        let t = fresh_store(kind).await;
        let store = &t.store;
        // Names of their own: gates are process-wide, keyed by the recipient.
        let (al, bo, cy) = (format!("{tag}al"), format!("{tag}bo"), format!("{tag}cy"));
        for u in [&al, &bo, &cy] {
            create_user(store, u).await;
        }
        store.graph.follow(&bo, &al, now_ms()).await.unwrap();
        store.graph.follow(&cy, &al, now_ms()).await.unwrap();
        store.graph.unfollow(&bo, &al).await.unwrap();
        let changes = store.change_feed.changes(None, 100).await.unwrap();
        let first_follow: Vec<_> = changes
            .iter()
            .filter(|c| c.collection == "follows")
            .take(1)
            .cloned()
            .collect();
        assert_eq!(first_follow.len(), 1, "{kind:?}");
        let worker = Arc::new(NotificationsWorker::new(store.notifications.clone()));

        let old = fence(store, "old", 1_000).await;
        let gate = faults::hold(place, &al);
        let stalled = {
            let (worker, first) = (worker.clone(), first_follow);
            tokio::spawn(async move { worker.apply(&first, &old).await })
        };
        gate.reached.notified().await;
        let new = fence(store, "new", 1_000 + TTL + 1).await;
        worker.apply(&changes, &new).await.unwrap();
        let settled = (keys_of(store, &al).await, follow_group(store, &al).await);
        assert_eq!(
            settled.1,
            Some((1, vec![cy.clone()])),
            "{kind:?}: the successor's result"
        );
        gate.release.notify_one();
        // Refused by the fence (embedded) or applied as a no-op (MongoDB).
        let _ = stalled.await.unwrap();
        assert_eq!(
            (keys_of(store, &al).await, follow_group(store, &al).await),
            settled,
            "{kind:?}: a late write of an undone follow changed what is served"
        );
    }
}

/// Held after the fence check, before the notification is written.
#[tokio::test]
async fn a_late_add_changes_nothing() {
    late_write("notification.fenced", "lateadd", false).await;
}

/// Held after the group's actors are read, before they are written (MongoDB only: the
/// embedded store writes the group in the effect's transaction).
#[tokio::test]
async fn a_late_group_refresh_changes_nothing() {
    late_write("notification.refresh", "laterefresh", true).await;
}
