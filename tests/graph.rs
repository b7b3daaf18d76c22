//! The follow graph under races: edges seen from both sides and the counters agree after
//! any interleaving of follows and unfollows, renames never fail because counters move,
//! and a graph in MongoDB's earlier two-collection layout is carried over. Runs on every
//! backend.

mod common;

use std::sync::Arc;

use common::{Kind, fresh_store, kinds};
use socialite::domain::now_ms;
use socialite::store::Store;

/// Whether `a` follows `b`, as each side of the graph and each counter tells it.
async fn views(store: &Store, a: &str, b: &str) -> (bool, bool, u64, u64) {
    let following = store.graph.following(a, None, 10).await.unwrap();
    let followers = store.graph.followers(b, None, 10).await.unwrap();
    let a_user = store.users.user(a).await.unwrap().unwrap();
    let b_user = store.users.user(b).await.unwrap().unwrap();
    (
        following.iter().any(|id| id == b),
        followers.iter().any(|id| id == a),
        a_user.following_count,
        b_user.followers_count,
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_follow_racing_an_unfollow_leaves_both_sides_and_the_counters_agreeing() {
    for kind in kinds("a_follow_racing_an_unfollow_leaves_both_sides_and_the_counters_agreeing") {
        let t = fresh_store(kind).await;
        let store = &t.store;
        common::create_user(store, "fan").await;
        common::create_user(store, "star").await;
        let (mut followed, mut not_followed) = (0, 0);
        for round in 0..300 {
            let (a, b) = (store.clone(), store.clone());
            let follow = tokio::spawn(async move { a.graph.follow("fan", "star", now_ms()).await });
            let unfollow = tokio::spawn(async move { b.graph.unfollow("fan", "star").await });
            follow.await.unwrap().unwrap();
            unfollow.await.unwrap().unwrap();
            let (forward, reverse, following, followers) = views(store, "fan", "star").await;
            assert_eq!(
                forward, reverse,
                "{kind:?} round {round}: the two sides disagree"
            );
            let edges = u64::from(forward);
            assert_eq!(
                (following, followers),
                (edges, edges),
                "{kind:?} round {round}: counters disagree with the edges"
            );
            if forward {
                followed += 1;
                // Start the next round from no edge, so both orders keep occurring.
                store.graph.unfollow("fan", "star").await.unwrap();
            } else {
                not_followed += 1;
            }
        }
        eprintln!("{kind:?}: {followed} rounds ended following, {not_followed} not");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn renames_never_fail_while_counters_move() {
    for kind in kinds("renames_never_fail_while_counters_move") {
        let t = fresh_store(kind).await;
        let store = &t.store;
        common::create_user(store, "celebrity").await;
        let fans: Vec<String> = (0..40).map(|i| format!("fan{i}")).collect();
        for fan in &fans {
            common::create_user(store, fan).await;
        }
        let mut tasks = Vec::new();
        for fan in fans.clone() {
            let store = store.clone();
            tasks.push(tokio::spawn(async move {
                for _ in 0..3 {
                    store
                        .graph
                        .follow(&fan, "celebrity", now_ms())
                        .await
                        .unwrap();
                    store.graph.unfollow(&fan, "celebrity").await.unwrap();
                }
                store
                    .graph
                    .follow(&fan, "celebrity", now_ms())
                    .await
                    .unwrap();
            }));
        }
        let renames = 30;
        let renamer = {
            let store = store.clone();
            tokio::spawn(async move {
                for i in 0..renames {
                    let renamed = store
                        .users
                        .rename_user("celebrity", &format!("Name {i}"))
                        .await
                        .expect("a rename never fails because a counter moved");
                    assert!(renamed.is_some());
                }
            })
        };
        for task in tasks {
            task.await.unwrap();
        }
        renamer.await.unwrap();
        let celebrity = store.users.user("celebrity").await.unwrap().unwrap();
        assert_eq!(
            celebrity.display_name,
            format!("Name {}", renames - 1),
            "{kind:?}"
        );
        assert_eq!(
            celebrity.version, renames,
            "{kind:?}: one version per rename"
        );
        assert_eq!(celebrity.followers_count, fans.len() as u64, "{kind:?}");
    }
}

/// A deployment whose graph is still in `following`/`followers` keeps it after the
/// upgrade: the first start copies it into `follows`.
#[tokio::test]
async fn mongodb_carries_over_the_two_collection_graph() {
    if !kinds("mongodb_carries_over_the_two_collection_graph").contains(&Kind::Mongo) {
        return;
    }
    let uri = common::mongo_uri_with_database(
        &common::mongo_base_uri().unwrap(),
        &common::fresh_name("legacy"),
    );
    let client = mongodb::Client::with_uri_str(&uri).await.unwrap();
    let db = client.default_database().unwrap();
    let users = db.collection::<mongodb::bson::Document>("users");
    for id in ["ann", "ben", "cat"] {
        users
            .insert_one(mongodb::bson::doc! {
                "_id": id, "display_name": id, "followers_count": 0_i64,
                "following_count": 0_i64, "posts_count": 0_i64, "created_at": 0_i64, "version": 0_i64,
            })
            .await
            .unwrap();
    }
    for (from, to) in [("ann", "ben"), ("ann", "cat"), ("ben", "cat")] {
        let key = format!("{from}/{to}");
        db.collection::<mongodb::bson::Document>("following")
            .insert_one(
                mongodb::bson::doc! { "_id": &key, "from": from, "to": to, "created_at": 1_i64 },
            )
            .await
            .unwrap();
        db.collection::<mongodb::bson::Document>("followers")
            .insert_one(
                mongodb::bson::doc! { "_id": &key, "from": to, "to": from, "created_at": 1_i64 },
            )
            .await
            .unwrap();
    }
    let store = Arc::new(socialite::store::mongo::connect(&uri).await.unwrap());
    assert_eq!(
        store.graph.following("ann", None, 10).await.unwrap(),
        vec!["ben".to_owned(), "cat".to_owned()]
    );
    assert_eq!(
        store.graph.followers("cat", None, 10).await.unwrap(),
        vec!["ann".to_owned(), "ben".to_owned()]
    );
    // A second start finds `follows` filled and copies nothing twice.
    let again = socialite::store::mongo::connect(&uri).await.unwrap();
    assert_eq!(
        again.graph.followers("cat", None, 10).await.unwrap().len(),
        2
    );
}
