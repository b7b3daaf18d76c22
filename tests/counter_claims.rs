//! MongoDB's counter claims (`src/store/mongo/claims.rs`): a second call on an edge or
//! a post whose first call is still moving the counters (or died doing it) answers only
//! once the counters include the first call's change, and never moves them a second
//! time. Each test writes, past the ports, what a call in flight or killed leaves
//! behind, then makes the second call through the store and reads the counts it left.
//!
//! The embedded store moves edges and counters in one transaction, so these states
//! cannot occur there; MongoDB only. Edges and posts' authors here; the counts a post
//! moves on another post, and deleted posts stored again, in `counter_claims/posts.rs`; a
//! holder back from a stall after a takeover in `counter_claims/returns.rs` (the users'
//! counts) and `counter_claims/parents.rs` (the parent post's count, and a recount
//! overtaken by a move); a recount that meets a source still being written in
//! `counter_claims/marks.rs`, and one that counted a source whose holder comes back from
//! a stall still holding its mark in `counter_claims/stalls.rs`; a user's recount that
//! counted a source whose move landed after it, mended by the counters worker, in
//! `counter_claims/users.rs`. The writers these hold at a gate mid-way are set up in
//! `counter_claims/held.rs`.

mod common;
#[path = "counter_claims/held.rs"]
mod held;
#[path = "counter_claims/marks.rs"]
mod marks;
#[path = "counter_claims/parents.rs"]
mod parents;
#[path = "counter_claims/posts.rs"]
mod posts;
#[path = "counter_claims/removals.rs"]
mod removals;
#[path = "counter_claims/returns.rs"]
mod returns;
#[path = "counter_claims/stalls.rs"]
mod stalls;
#[path = "counter_claims/users.rs"]
mod users;

use std::time::Duration;

use common::{fresh_name, mongo_base_uri, mongo_uri_with_database};
use mongodb::bson::{Document, doc, oid::ObjectId};
use socialite::domain::{NewUser, PostId, now_ms};
use socialite::store::Store;

struct Fixture {
    store: Store,
    db: mongodb::Database,
}

/// A fresh MongoDB store with users `a`, `b`, `c`, and `c` following `b`; `None` (and a
/// SKIPPED line) without MongoDB.
async fn fixture(test: &str) -> Option<Fixture> {
    let Some(base) = mongo_base_uri() else {
        eprintln!("{test}: MongoDB adapter SKIPPED: no MongoDB URI (embedded has no such state)");
        return None;
    };
    let uri = mongo_uri_with_database(&base, &fresh_name("claims"));
    let store = socialite::store::mongo::connect(&uri).await.unwrap();
    let client = mongodb::Client::with_uri_str(&uri).await.unwrap();
    for id in ["a", "b", "c"] {
        let user = NewUser {
            id: id.into(),
            display_name: id.into(),
            created_at_ms: now_ms(),
        };
        store.users.create_user(&user).await.unwrap();
    }
    assert!(store.graph.follow("c", "b", now_ms()).await.unwrap());
    Some(Fixture {
        store,
        db: client.default_database().unwrap(),
    })
}

impl Fixture {
    /// (followers of `b`, following of `a`, posts of `a`).
    async fn counts(&self) -> (u64, u64, u64) {
        let users = &self.store.users;
        let (a, b) = (
            users.user("a").await.unwrap().unwrap(),
            users.user("b").await.unwrap().unwrap(),
        );
        (b.followers_count, a.following_count, a.posts_count)
    }

    fn coll(&self, name: &str) -> mongodb::Collection<Document> {
        self.db.collection(name)
    }

    async fn inc(&self, user: &str, field: &str, delta: i64) {
        inc(&self.coll("users"), user, field, delta).await;
    }
}

/// Moves a counter as a call's `$inc` does.
async fn inc(users: &mongodb::Collection<Document>, user: &str, field: &str, delta: i64) {
    users
        .update_one(
            doc! { "_id": user },
            doc! { "$inc": { field: delta, "counter_version": 1_i64 } },
        )
        .await
        .unwrap();
}

/// A claim mark made `age_ms` ago.
fn mark(op: &str, age_ms: i64) -> Document {
    doc! { "op": op, "token": 7_i64, "at": now_ms() - age_ms }
}

/// The edge `a` → `b` as a follow leaves it after its insert, before its increments.
fn added_edge(age_ms: i64) -> Document {
    doc! {
        "_id": "a/b", "from": "a", "to": "b", "created_at": now_ms(), "merged": false,
        "pending": mark("add", age_ms),
    }
}

#[tokio::test]
async fn a_repeated_follow_answers_after_the_first_follows_increment() {
    let Some(f) = fixture("a_repeated_follow_answers_after_the_first_follows_increment").await
    else {
        return;
    };
    f.coll("follows").insert_one(added_edge(0)).await.unwrap();
    // The first follow, alive, lands its increments a little later.
    let finish = {
        let follows = f.coll("follows");
        let users = f.coll("users");
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(200)).await;
            for (user, field) in [("a", "following_count"), ("b", "followers_count")] {
                inc(&users, user, field, 1).await;
            }
            follows
                .update_one(doc! { "_id": "a/b" }, doc! { "$unset": { "pending": "" } })
                .await
                .unwrap();
        })
    };
    assert!(!f.store.graph.follow("a", "b", now_ms()).await.unwrap());
    // Read right after the answer: the first follow's increment is in.
    assert_eq!(f.counts().await, (2, 1, 0));
    finish.await.unwrap();
}

#[tokio::test]
async fn a_follow_takes_over_an_edge_whose_follow_died_before_its_increment() {
    let Some(f) = fixture("a_follow_takes_over_an_edge_whose_follow_died").await else {
        return;
    };
    f.coll("follows")
        .insert_one(added_edge(10_000))
        .await
        .unwrap();
    assert!(!f.store.graph.follow("a", "b", now_ms()).await.unwrap());
    assert_eq!(f.counts().await, (2, 1, 0));
    let edge = f.coll("follows").find_one(doc! { "_id": "a/b" }).await;
    assert!(!edge.unwrap().unwrap().contains_key("pending"));
}

#[tokio::test]
async fn an_unfollow_takes_over_from_one_that_died_after_its_decrement() {
    let Some(f) = fixture("an_unfollow_takes_over_from_one_that_died").await else {
        return;
    };
    assert!(f.store.graph.follow("a", "b", now_ms()).await.unwrap());
    // The first unfollow claimed the edge and moved the counters down, then died.
    f.coll("follows")
        .update_one(
            doc! { "_id": "a/b" },
            doc! { "$set": { "pending": mark("remove", 10_000) } },
        )
        .await
        .unwrap();
    f.inc("a", "following_count", -1).await;
    f.inc("b", "followers_count", -1).await;
    assert!(f.store.graph.unfollow("a", "b").await.unwrap());
    // `c` still follows `b`: a second decrement would show 0.
    assert_eq!(f.counts().await, (1, 0, 0));
    assert_eq!(f.store.graph.edge("a", "b").await.unwrap(), None);
}

#[tokio::test]
async fn two_unfollows_at_once_move_the_counters_once() {
    let Some(f) = fixture("two_unfollows_at_once_move_the_counters_once").await else {
        return;
    };
    assert!(f.store.graph.follow("a", "b", now_ms()).await.unwrap());
    // The first unfollow holds its claim, its decrement not yet landed.
    f.coll("follows")
        .update_one(
            doc! { "_id": "a/b" },
            doc! { "$set": { "pending": mark("remove", 0) } },
        )
        .await
        .unwrap();
    let second = {
        let store = f.store.clone();
        tokio::spawn(async move { store.graph.unfollow("a", "b").await.unwrap() })
    };
    tokio::time::sleep(Duration::from_millis(200)).await;
    // The second waits for the claim: it has moved nothing.
    assert_eq!(f.counts().await, (2, 1, 0));
    f.inc("a", "following_count", -1).await;
    f.inc("b", "followers_count", -1).await;
    f.coll("follows")
        .delete_one(doc! { "_id": "a/b" })
        .await
        .unwrap();
    assert!(!second.await.unwrap());
    assert_eq!(f.counts().await, (1, 0, 0));
}

#[tokio::test]
async fn a_delete_takes_over_from_one_that_died_after_its_decrement() {
    let Some(f) = fixture("a_delete_takes_over_from_one_that_died").await else {
        return;
    };
    let content = &f.store.content;
    let first = content
        .insert_post("a", "one", None, now_ms())
        .await
        .unwrap()
        .post;
    content
        .insert_post("a", "two", None, now_ms())
        .await
        .unwrap();
    let id = ObjectId::from_bytes(PostId::bytes(&first.id));
    f.coll("content")
        .update_one(
            doc! { "_id": id },
            doc! { "$set": { "pending": mark("remove", 10_000) } },
        )
        .await
        .unwrap();
    f.inc("a", "posts_count", -1).await;
    let deleted = content.delete_post(first.id).await.unwrap();
    assert_eq!(deleted.map(|p| p.id), Some(first.id));
    // One post is left: a second decrement would show 0.
    assert_eq!(f.counts().await.2, 1);
    assert_eq!(content.post(first.id).await.unwrap(), None);
}
