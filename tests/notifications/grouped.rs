//! The grouped view with hundreds of likers: one group per post, its count and latest
//! three actors (re-read when the newest unlikes); the plain view's pages without gaps
//! or repeats; a type filter serving that type alone.

use std::sync::Arc;

use socialite::domain::{NotificationFilter, NotificationType, now_ms};
use socialite::workers::ManualClock;

use super::{all_of, post, runner, settle};
use crate::common::{create_user, fresh_store, kinds};
use NotificationType::{Follow, Like, Mention};

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
