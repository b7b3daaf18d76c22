//! The notifications rebuild (the worker's after history lost, and the audit's repair)
//! runs in bounded memory, a range of recipients at a time; its result is the derived
//! definition, ids and groups included, whatever the bounds: with one recipient per
//! write and three causes sorted in memory at a time (many ranges, many sorted runs on
//! MongoDB) as with the defaults, stale notifications replaced in every range.

use socialite::derived::notifications::{groups, rebuilt};
use socialite::domain::{NotificationFilter, now_ms};
use socialite::store::RebuildBounds;

use super::common::{create_user, fresh_store, kinds};
use super::{all_of, fence, post};

#[tokio::test]
async fn a_rebuild_in_small_bounds_writes_the_derived_definition() {
    for kind in kinds("a_rebuild_in_small_bounds_writes_the_derived_definition") {
        let t = fresh_store(kind).await;
        let store = &t.store;
        let users = ["al", "bo", "cy", "di", "ed", "fe"];
        for u in users {
            create_user(store, u).await;
        }
        let a = post(store, "al", "hello @cy @fe").await;
        let b = post(store, "bo", "mine").await;
        let c = store
            .content
            .insert_post("cy", "yes @al", Some(a), now_ms())
            .await
            .unwrap()
            .post
            .id;
        for (f, e) in [
            ("bo", "al"),
            ("cy", "al"),
            ("di", "al"),
            ("al", "bo"),
            ("ed", "cy"),
        ] {
            store.graph.follow(f, e, now_ms()).await.unwrap();
        }
        for (u, p) in [("bo", a), ("di", a), ("al", b), ("ed", c), ("al", a)] {
            store.activity.like(u, p, now_ms()).await.unwrap();
        }
        for (u, p) in [("bo", a), ("cy", b), ("fe", a), ("bo", b)] {
            store.reposts.repost(u, p, now_ms()).await.unwrap();
        }
        let f = fence(store, "rebuilder", now_ms()).await;
        let tiny = RebuildBounds {
            per_write: 1,
            causes_in_memory: 3,
        };
        let written = store
            .notifications
            .rebuild_notifications(&f, tiny)
            .await
            .unwrap();
        let check = |label: &'static str| async move {
            let sources = store.notifications.notification_sources().await.unwrap();
            let want = rebuilt(&sources);
            let all = NotificationFilter::default();
            let mut total = 0;
            for user in users {
                let mut mine: Vec<_> = want.iter().filter(|n| n.user == user).cloned().collect();
                mine.sort_by_key(|n| std::cmp::Reverse(n.id));
                let got = all_of(store, user, &all, 100).await;
                assert_eq!(got, mine, "{kind:?} {label}: {user}");
                let g = store
                    .notifications
                    .notification_groups(user, &all, None, 100)
                    .await
                    .unwrap();
                assert_eq!(g, groups(&mine), "{kind:?} {label}: {user}'s groups");
                total += got.len();
            }
            assert_eq!(total, want.len(), "{kind:?} {label}");
            total
        };
        let total = check("tiny bounds").await;
        assert_eq!(written as usize, total, "{kind:?}");
        // 5 follows, 4 likes of others' posts, 3 reposts of others' posts, cy's reply
        // to al, the mentions of cy and fe (cy's mention of al is the reply's).
        assert_eq!(total, 5 + 4 + 3 + 1 + 2, "{kind:?}");

        // The sources move on without the worker: what was stored is stale in several
        // ranges (al's, bo's, cy's and fe's), and a rebuild replaces it.
        store.graph.unfollow("bo", "al").await.unwrap();
        store.reposts.unrepost("fe", a).await.unwrap();
        store.activity.unlike("ed", c).await.unwrap();
        store.graph.follow("fe", "di", now_ms()).await.unwrap();
        store
            .notifications
            .rebuild_notifications(&f, tiny)
            .await
            .unwrap();
        let after = check("stale replaced").await;
        assert_eq!(after, total - 3 + 1, "{kind:?}");
        let again = store
            .notifications
            .rebuild_notifications(&f, RebuildBounds::default())
            .await
            .unwrap();
        assert_eq!(check("default bounds").await, again as usize, "{kind:?}");
    }
}
