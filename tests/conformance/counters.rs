//! The counters of users, follows and posts, kept by the port on every backend.

use socialite::domain::{NewUser, now_ms};
use socialite::store::{Recount, StoreError};

use crate::common::{create_user, fresh_store, kinds};

#[tokio::test]
async fn users_follows_and_posts_keep_their_counters() {
    for kind in kinds("users_follows_and_posts_keep_their_counters") {
        let t = fresh_store(kind).await;
        let store = &t.store;
        let new = |id: &str| NewUser {
            id: id.into(),
            display_name: id.to_uppercase(),
            created_at_ms: now_ms(),
        };
        let alice = store.users.create_user(&new("alice")).await.unwrap();
        assert_eq!((alice.display_name.as_str(), alice.version), ("ALICE", 0));
        assert!(matches!(
            store.users.create_user(&new("alice")).await,
            Err(StoreError::Conflict(_))
        ));
        for id in ["bob", "carol", "dave"] {
            store.users.create_user(&new(id)).await.unwrap();
        }
        let renamed = store
            .users
            .rename_user("alice", "Alice")
            .await
            .unwrap()
            .unwrap();
        assert_eq!(
            (renamed.display_name.as_str(), renamed.version),
            ("Alice", 1)
        );
        assert!(
            store
                .users
                .rename_user("nobody", "x")
                .await
                .unwrap()
                .is_none()
        );

        assert!(store.graph.follow("alice", "bob", now_ms()).await.unwrap());
        assert!(
            !store.graph.follow("alice", "bob", now_ms()).await.unwrap(),
            "idempotent"
        );
        assert!(store.graph.follow("alice", "dave", now_ms()).await.unwrap());
        assert!(store.graph.follow("carol", "bob", now_ms()).await.unwrap());
        assert!(matches!(
            store.graph.follow("alice", "nobody", now_ms()).await,
            Err(StoreError::NotFound(_))
        ));
        assert!(matches!(
            store.graph.follow("nobody", "alice", now_ms()).await,
            Err(StoreError::NotFound(_))
        ));

        assert_eq!(
            store.graph.following("alice", None, 10).await.unwrap(),
            ["bob", "dave"]
        );
        assert_eq!(
            store
                .graph
                .following("alice", Some("bob"), 10)
                .await
                .unwrap(),
            ["dave"]
        );
        assert_eq!(
            store.graph.following("alice", None, 1).await.unwrap(),
            ["bob"]
        );
        assert_eq!(
            store.graph.followers("bob", None, 10).await.unwrap(),
            ["alice", "carol"]
        );
        let mut among: Vec<String> = store
            .users
            .authors("alice", &["dave".into(), "carol".into(), "bob".into()])
            .await
            .unwrap()
            .into_iter()
            .filter(|a| a.followed)
            .map(|a| a.id)
            .collect();
        among.sort();
        assert_eq!(among, ["bob", "dave"]);

        let first = store
            .content
            .insert_post("bob", "one", None, now_ms())
            .await
            .unwrap()
            .post;
        let second = store
            .content
            .insert_post("bob", "two", None, now_ms() - 60_000)
            .await
            .unwrap()
            .post;
        assert!(
            second.id > first.id,
            "ids increase even when the clock steps back"
        );
        assert!(matches!(
            store
                .content
                .insert_post("nobody", "x", None, now_ms())
                .await,
            Err(StoreError::NotFound(_))
        ));

        let bob = store.users.user("bob").await.unwrap().unwrap();
        assert_eq!(
            (bob.followers_count, bob.following_count, bob.posts_count),
            (2, 0, 2)
        );
        let alice = store.users.user("alice").await.unwrap().unwrap();
        assert_eq!((alice.followers_count, alice.following_count), (0, 2));

        assert!(store.graph.unfollow("alice", "bob").await.unwrap());
        assert!(
            !store.graph.unfollow("alice", "bob").await.unwrap(),
            "idempotent"
        );
        assert_eq!(
            store
                .users
                .user("bob")
                .await
                .unwrap()
                .unwrap()
                .followers_count,
            1
        );
        assert_eq!(
            store
                .users
                .user("alice")
                .await
                .unwrap()
                .unwrap()
                .following_count,
            1
        );

        assert_eq!(
            store
                .content
                .posts_by_author("bob", None, 10)
                .await
                .unwrap()
                .iter()
                .map(|p| p.id)
                .collect::<Vec<_>>(),
            [second.id, first.id]
        );
        assert_eq!(
            store
                .content
                .posts_by_author("bob", Some(second.id), 10)
                .await
                .unwrap()[0]
                .id,
            first.id
        );
        assert_eq!(
            store
                .content
                .delete_post(first.id)
                .await
                .unwrap()
                .unwrap()
                .text,
            "one"
        );
        assert!(store.content.delete_post(first.id).await.unwrap().is_none());
        assert_eq!(
            store
                .content
                .posts_by_ids(&[first.id, second.id], &[])
                .await
                .unwrap()
                .len(),
            1
        );
        assert_eq!(
            store.users.user("bob").await.unwrap().unwrap().posts_count,
            1
        );

        let mut names: Vec<(String, String)> = store
            .users
            .authors("alice", &["bob".into(), "zed".into(), "alice".into()])
            .await
            .unwrap()
            .into_iter()
            .map(|a| (a.id, a.display_name))
            .collect();
        names.sort();
        let expected = [("alice", "Alice"), ("bob", "BOB")];
        assert_eq!(names, expected.map(|(i, n)| (i.to_owned(), n.to_owned())));
        store.health.ping().await.unwrap();
    }
}

/// A recount's write is a compare-and-set on the counters' version: counts read before
/// a follow or a post moved a counter are refused, never written over it, and a write
/// replayed is refused too; a fresh read writes. Which users need a write at all is
/// decided at the read.
#[tokio::test]
async fn a_recount_refuses_to_write_over_counters_that_moved_since_its_read() {
    for kind in kinds("a_recount_refuses_to_write_over_counters_that_moved_since_its_read") {
        let t = fresh_store(kind).await;
        let (users, graph) = (&t.store.users, &t.store.graph);
        for id in ["ann", "bob", "cy"] {
            create_user(&t.store, id).await;
        }
        let ann = |seq: u64, always: bool| Recount {
            user: "ann".into(),
            seq,
            always,
        };
        let shown = || async {
            let ann = users.user("ann").await.unwrap().unwrap();
            (ann.posts_count, ann.following_count, ann.followers_count)
        };
        assert!(graph.follow("bob", "ann", now_ms()).await.unwrap());

        let nobody = Recount {
            user: "nobody".into(),
            ..ann(5, true)
        };
        let read = users.count_sources(&[ann(5, true), nobody]).await.unwrap();
        assert_eq!(read.len(), 1, "{kind:?}: unknown users are skipped");
        assert_eq!(
            (read[0].posts, read[0].following, read[0].followers),
            (0, 0, 1)
        );
        assert!(graph.follow("cy", "ann", now_ms()).await.unwrap());
        assert_eq!(
            users.write_counts(&read).await.unwrap(),
            ["ann"],
            "{kind:?}"
        );
        assert_eq!(
            shown().await,
            (0, 0, 2),
            "{kind:?}: the follow's counter stands"
        );

        let read = users.count_sources(&[ann(5, true)]).await.unwrap();
        t.store
            .content
            .insert_post("ann", "p", None, now_ms())
            .await
            .unwrap();
        assert_eq!(
            users.write_counts(&read).await.unwrap(),
            ["ann"],
            "{kind:?}"
        );
        assert_eq!(
            shown().await,
            (1, 0, 2),
            "{kind:?}: the post's counter stands"
        );

        let read = users.count_sources(&[ann(5, true)]).await.unwrap();
        assert_eq!((read[0].posts, read[0].followers), (1, 2), "{kind:?}");
        assert!(
            users.write_counts(&read).await.unwrap().is_empty(),
            "{kind:?}"
        );
        assert_eq!(
            users.write_counts(&read).await.unwrap(),
            ["ann"],
            "{kind:?}: a replayed write finds the version it moved"
        );
        assert_eq!(shown().await, (1, 0, 2), "{kind:?}");
        // `counted_seq` is now 5: nothing to write for a recount at or below it, nor for
        // a correction above it while the counts are right; a recount above it writes.
        assert!(
            users
                .count_sources(&[ann(5, true)])
                .await
                .unwrap()
                .is_empty()
        );
        assert!(
            users
                .count_sources(&[ann(6, false)])
                .await
                .unwrap()
                .is_empty()
        );
        assert_eq!(users.count_sources(&[ann(6, true)]).await.unwrap().len(), 1);
    }
}
