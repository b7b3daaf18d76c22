//! The notifications port's reads both ways, held to one behaviour on every backend:
//! a page below an id (`notifications`, `notification_groups`) and the page just above
//! one, oldest first (`notifications_after`, `notification_groups_after`: Mastodon's
//! `min_id`), with the type filter and hidden actors applied alike.

use socialite::domain::{Fence, NewUser, NotificationFilter, NotificationType, PostId, now_ms};
use socialite::store::Store;
use socialite::store::notifications::{NotificationEffect, Recipient};
use socialite::workers::notifications::NAME;

use crate::common::{fresh_store, kinds};

async fn users(store: &Store, ids: &[&str]) {
    for id in ids {
        let user = NewUser {
            id: (*id).into(),
            display_name: (*id).into(),
            created_at_ms: now_ms(),
        };
        store.users.create_user(&user).await.unwrap();
    }
}

/// Adds one notification to `al` per `(kind, actor)`, in order, each a millisecond
/// after the one before; a mention is about a post of its actor's.
async fn notify(store: &Store, causes: &[(NotificationType, &str)]) {
    let now = now_ms();
    let lease = store.leases.acquire(NAME, "conf", now, 60_000).await;
    let lease = lease.unwrap();
    let fence = Fence {
        lease: NAME.into(),
        holder: "conf".into(),
        version: lease.version,
    };
    for (i, (kind, actor)) in causes.iter().enumerate() {
        let post = match kind {
            NotificationType::Follow => None,
            _ => {
                let text = format!("hey @al {i}");
                let inserted = store.content.insert_post(actor, &text, None, now).await;
                Some(inserted.unwrap().post.id)
            }
        };
        let effect = NotificationEffect::Add {
            to: Recipient::User("al".into()),
            kind: *kind,
            actor: (*actor).into(),
            post,
            at_ms: now + i as i64,
        };
        let seq = i as u64 + 1;
        let applied = store.notifications.apply_notification(&fence, seq, &effect);
        applied.await.unwrap();
    }
}

#[tokio::test]
async fn notifications_read_above_an_id_oldest_first_as_below_it() {
    for kind in kinds("notifications_read_above_an_id_oldest_first_as_below_it") {
        let t = fresh_store(kind).await;
        let store = &t.store;
        users(store, &["al", "bo", "cy"]).await;
        use NotificationType::{Follow, Mention};
        let causes = [
            (Mention, "bo"),
            (Mention, "cy"),
            (Follow, "bo"),
            (Mention, "bo"),
            (Mention, "cy"),
            (Mention, "bo"),
        ];
        notify(store, &causes).await;
        let all = NotificationFilter::default();
        let n = &store.notifications;
        let newest_first = n.notifications("al", &all, None, 10).await.unwrap();
        let ids: Vec<PostId> = newest_first.iter().rev().map(|x| x.id).collect();
        assert_eq!(ids.len(), 6, "{kind:?}");
        let above = |after: PostId, filter: NotificationFilter, limit: usize| async move {
            let read = n.notifications_after("al", &filter, after, limit).await;
            read.unwrap().into_iter().map(|x| x.id).collect::<Vec<_>>()
        };
        // Oldest first, strictly above, at most `limit`.
        assert_eq!(above(ids[1], all.clone(), 2).await, ids[2..4], "{kind:?}");
        assert_eq!(above(ids[3], all.clone(), 10).await, ids[4..], "{kind:?}");
        assert!(above(ids[5], all.clone(), 10).await.is_empty(), "{kind:?}");
        // The type filter and hidden actors, as below an id.
        let mentions = NotificationFilter {
            types: vec![Mention],
            hidden: Vec::new(),
        };
        let m = above(ids[1], mentions, 2).await;
        assert_eq!(m, [ids[3], ids[4]], "{kind:?}: the follow is left out");
        let no_cy = NotificationFilter {
            types: Vec::new(),
            hidden: vec!["cy".into()],
        };
        let h = above(ids[0], no_cy, 10).await;
        assert_eq!(h, [ids[2], ids[3], ids[5]], "{kind:?}: cy is hidden");

        // Groups: mentions are groups of one, follows one group; by latest id.
        let groups_below = n.notification_groups("al", &all, None, 10).await.unwrap();
        let latest: Vec<PostId> = groups_below.iter().rev().map(|g| g.latest_id).collect();
        assert_eq!(latest, ids, "{kind:?}: six groups of one");
        let groups_above = |after: PostId, filter: NotificationFilter, limit: usize| async move {
            let read = n
                .notification_groups_after("al", &filter, after, limit)
                .await;
            read.unwrap()
                .into_iter()
                .map(|g| g.latest_id)
                .collect::<Vec<_>>()
        };
        assert_eq!(
            groups_above(ids[1], all.clone(), 2).await,
            ids[2..4],
            "{kind:?}"
        );
        let no_cy = NotificationFilter {
            types: vec![Mention],
            hidden: vec!["cy".into()],
        };
        let g = groups_above(ids[0], no_cy, 2).await;
        assert_eq!(g, [ids[3], ids[5]], "{kind:?}: refilled past hidden groups");
    }
}
