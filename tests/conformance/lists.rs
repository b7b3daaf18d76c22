//! The account lists read the other way from a cursor (Mastodon's `min_id`, the page
//! just before it), held to one behaviour on every backend: `followers_below`,
//! `following_below`, `block_list_newer`, `mute_list_newer`, `likers_newer` and
//! `reposts_of_post_newer` answer the items nearest the cursor first, strictly beyond
//! it, at most `limit`, ties broken as the forward read breaks them, and each is the
//! forward read's section reversed.

use socialite::domain::relations::MuteSettings;
use socialite::domain::{NewUser, PostId};
use socialite::store::{Liker, Store};

use crate::common::{fresh_store, kinds};

const USERS: [&str; 6] = ["ann", "b1", "b2", "b3", "b4", "b5"];

async fn users(store: &Store) {
    for id in USERS {
        let user = NewUser {
            id: id.into(),
            display_name: id.into(),
            created_at_ms: 1_000,
        };
        store.users.create_user(&user).await.unwrap();
    }
}

#[tokio::test]
async fn follow_lists_read_below_a_cursor_nearest_first() {
    for kind in kinds("follow_lists_read_below_a_cursor_nearest_first") {
        let t = fresh_store(kind).await;
        let store = &t.store;
        users(store).await;
        for other in &USERS[1..] {
            store.graph.follow(other, "ann", 1_000).await.unwrap();
            store.graph.follow("ann", other, 1_000).await.unwrap();
        }
        store.graph.follow("b1", "b2", 1_000).await.unwrap(); // another's list
        let graph = &store.graph;
        for (side, read) in [
            ("followers", graph.followers_below("ann", "b4", 2).await),
            ("following", graph.following_below("ann", "b4", 2).await),
        ] {
            assert_eq!(read.unwrap(), ["b3", "b2"], "{kind:?} {side}");
        }
        assert!(
            graph
                .followers_below("ann", "b1", 5)
                .await
                .unwrap()
                .is_empty()
        );
        let all = graph.following_below("ann", "zzz", 10).await.unwrap();
        assert_eq!(all, ["b5", "b4", "b3", "b2", "b1"], "{kind:?}");
        let mut forward = graph.followers("ann", None, 10).await.unwrap();
        forward.reverse();
        assert_eq!(forward, all, "{kind:?}: the forward read reversed");
    }
}

#[tokio::test]
async fn blocks_and_mutes_read_newer_than_a_cursor_oldest_first() {
    for kind in kinds("blocks_and_mutes_read_newer_than_a_cursor_oldest_first") {
        let t = fresh_store(kind).await;
        let store = &t.store;
        users(store).await;
        let relations = &store.relations;
        // b2 and b3 at one time: ties go by the other's id, as the list's order.
        for (other, at) in [("b1", 1_000), ("b3", 2_000), ("b2", 2_000), ("b4", 3_000)] {
            relations.block("ann", other, at).await.unwrap();
        }
        relations.block("b5", "b1", 2_500).await.unwrap(); // another's block
        let others = |list: Vec<socialite::domain::relations::Relation>| {
            list.into_iter()
                .map(|r| (r.other, r.created_ms))
                .collect::<Vec<_>>()
        };
        let pair = |o: &str, at: i64| (o.to_owned(), at);
        let newer = relations.block_list_newer("ann", (1_000, "b1".into()), 2);
        assert_eq!(
            others(newer.await.unwrap()),
            [pair("b2", 2_000), pair("b3", 2_000)],
            "{kind:?}"
        );
        let newer = relations.block_list_newer("ann", (2_000, "b2".into()), 5);
        assert_eq!(
            others(newer.await.unwrap()),
            [pair("b3", 2_000), pair("b4", 3_000)],
            "{kind:?}"
        );
        let newest = relations.block_list_newer("ann", (3_000, "b4".into()), 5);
        assert!(newest.await.unwrap().is_empty(), "{kind:?}");
        let mut forward = others(relations.block_list("ann", None, 10).await.unwrap());
        forward.reverse();
        let whole = relations.block_list_newer("ann", (0, String::new()), 10);
        assert_eq!(others(whole.await.unwrap()), forward, "{kind:?}");

        let mute = |until_ms| MuteSettings {
            notifications: true,
            until_ms,
        };
        relations
            .mute("ann", "b1", mute(None), 1_000)
            .await
            .unwrap();
        relations
            .mute("ann", "b2", mute(Some(1_500)), 2_000)
            .await
            .unwrap();
        relations
            .mute("ann", "b3", mute(None), 3_000)
            .await
            .unwrap();
        let from_b1 = (1_000, "b1".to_owned());
        let early = relations.mute_list_newer("ann", from_b1.clone(), 1_200, 5);
        let early = early.await.unwrap();
        assert_eq!(
            others(early.clone()),
            [pair("b2", 2_000), pair("b3", 3_000)]
        );
        assert_eq!(early[0].mute, Some(mute(Some(1_500))), "{kind:?}");
        let late = relations.mute_list_newer("ann", from_b1, 1_600, 5);
        assert_eq!(
            others(late.await.unwrap()),
            [pair("b3", 3_000)],
            "{kind:?}: an expired mute is not listed"
        );
    }
}

#[tokio::test]
async fn likers_and_reposts_read_newer_than_a_cursor_oldest_first() {
    for kind in kinds("likers_and_reposts_read_newer_than_a_cursor_oldest_first") {
        let t = fresh_store(kind).await;
        let store = &t.store;
        users(store).await;
        let post = |text: &'static str| async move {
            let inserted = store.content.insert_post("ann", text, None, 1_000).await;
            inserted.unwrap().post.id
        };
        let (p, other) = (post("liked").await, post("other").await);
        for (user, at) in [("b1", 1_000), ("b3", 2_000), ("b2", 2_000), ("b4", 3_000)] {
            store.activity.like(user, p, at).await.unwrap();
        }
        store.activity.like("b5", other, 2_500).await.unwrap();
        let liker = |user: &str, at_ms: i64| Liker {
            user: user.into(),
            at_ms,
        };
        let activity = &store.activity;
        let newer = activity.likers_newer(p, &liker("b1", 1_000), 2).await;
        assert_eq!(
            newer.unwrap(),
            [liker("b2", 2_000), liker("b3", 2_000)],
            "{kind:?}"
        );
        let newer = activity.likers_newer(p, &liker("b3", 2_000), 5).await;
        assert_eq!(newer.unwrap(), [liker("b4", 3_000)], "{kind:?}");
        let mut forward = activity.likers(p, None, 10).await.unwrap();
        forward.reverse();
        let whole = activity.likers_newer(p, &liker("", 0), 10).await.unwrap();
        assert_eq!(whole, forward, "{kind:?}");

        let mut reposts: Vec<PostId> = Vec::new();
        for user in &USERS[1..5] {
            let made = store.reposts.repost(user, p, 2_000).await.unwrap();
            reposts.push(made.repost.id);
        }
        store.reposts.repost("b5", other, 2_000).await.unwrap();
        let ids = |list: Vec<socialite::domain::Repost>| -> Vec<PostId> {
            list.into_iter().map(|r| r.id).collect()
        };
        let newer = store.reposts.reposts_of_post_newer(p, reposts[0], 2).await;
        assert_eq!(ids(newer.unwrap()), reposts[1..3], "{kind:?}");
        let newest = store.reposts.reposts_of_post_newer(p, reposts[3], 2).await;
        assert!(newest.unwrap().is_empty(), "{kind:?}");
        let mut forward = ids(store.reposts.reposts_of_post(p, None, 10).await.unwrap());
        forward.reverse();
        assert_eq!(forward, reposts, "{kind:?}");
    }
}
