//! MongoDB's counter claims (`src/store/mongo/claims.rs`): a second call on an edge or
//! a post whose first call is still moving the counters (or died doing it) answers only
//! once the counters include the first call's change, and never moves them a second
//! time. Each test writes, past the ports, what a call in flight or killed leaves
//! behind, then makes the second call through the store and reads the counts it left.
//!
//! The embedded store moves edges and counters in one transaction, so these states
//! cannot occur there; MongoDB only.

mod common;

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

/// The counters worker over `f`'s store, stepped until it finds nothing to apply.
async fn counters_catch_up(f: &Fixture) {
    use socialite::workers::counters::CountersWorker;
    use socialite::workers::{ManualClock, Runner, RunnerSettings, Step};
    let settings = RunnerSettings {
        lease_ttl_ms: 10_000,
        batch_size: 100,
        refresh_ms: 1_000,
    };
    let worker = CountersWorker::new(f.store.users.clone(), f.store.claims.clone());
    let mut runner = Runner::new(
        std::sync::Arc::new(worker),
        f.store.leases.clone(),
        f.store.change_feed.clone(),
        std::sync::Arc::new(ManualClock::at(now_ms())),
        "W",
        settings,
    );
    for _ in 0..100 {
        if !matches!(runner.step().await.unwrap(), Step::Applied(_)) {
            return;
        }
    }
    panic!("the counters worker never ran out of changes");
}

/// `a`'s post, settled, as the parent or original of what follows.
async fn parent(f: &Fixture) -> PostId {
    let inserted = f.store.content.insert_post("a", "parent", None, now_ms());
    inserted.await.unwrap().post.id
}

/// (replies_count, reposts_count) of `post`.
async fn post_counts(f: &Fixture, post: PostId) -> (u64, u64) {
    let post = f.store.content.post(post).await.unwrap().unwrap();
    (post.replies_count, post.reposts_count)
}

/// What a reply's writer killed between its insert and its parent's `$inc` leaves (the
/// soak's divergence of 2026-11-27: a `replies_count` one short for good, since no later
/// call on the reply ever came): the reply, still marked, and the parent's count not
/// moved. The counters worker, applying the reply's insert, takes the stale mark over
/// and recounts the parent.
#[tokio::test]
async fn a_reply_whose_writer_died_before_its_parents_increment_is_counted_by_the_worker() {
    let Some(f) = fixture("a_reply_whose_writer_died_before_its_parents_increment").await else {
        return;
    };
    let parent = parent(&f).await;
    let reply = PostId::at(now_ms(), 1);
    let doc = doc! {
        "_id": ObjectId::from_bytes(reply.bytes()), "author": "b", "text": "cut short",
        "reply_to": { "post": ObjectId::from_bytes(parent.bytes()), "author": "a" },
        "pending": mark("insert", 10_000),
    };
    f.coll("content").insert_one(doc).await.unwrap();
    assert_eq!(
        post_counts(&f, parent).await,
        (0, 0),
        "nothing moved it yet"
    );
    counters_catch_up(&f).await;
    assert_eq!(
        post_counts(&f, parent).await,
        (1, 0),
        "recounted by the worker"
    );
    let content = f.coll("content");
    let settled = content.find_one(doc! { "_id": ObjectId::from_bytes(reply.bytes()) });
    assert!(!settled.await.unwrap().unwrap().contains_key("pending"));
    // A replay settles nothing more and moves nothing.
    assert_eq!(
        f.store
            .claims
            .settle_claims(&[socialite::store::Claimed {
                counter: socialite::store::Counter::Replies,
                id: reply,
                owner: "b".into(),
            }])
            .await
            .unwrap(),
        0
    );
    assert_eq!(post_counts(&f, parent).await, (1, 0));
}

/// The same for a repost: its original's `reposts_count`.
#[tokio::test]
async fn a_repost_whose_writer_died_before_its_increment_is_counted_by_the_worker() {
    let Some(f) = fixture("a_repost_whose_writer_died_before_its_increment").await else {
        return;
    };
    let original = parent(&f).await;
    let doc = doc! {
        "_id": ObjectId::from_bytes(PostId::at(now_ms(), 2).bytes()), "user": "c",
        "post": ObjectId::from_bytes(original.bytes()), "post_author": "a",
        "pending": mark("insert", 10_000),
    };
    f.coll("reposts").insert_one(doc).await.unwrap();
    assert_eq!(post_counts(&f, original).await, (0, 0));
    counters_catch_up(&f).await;
    assert_eq!(
        post_counts(&f, original).await,
        (0, 1),
        "recounted by the worker"
    );
}

/// A mark still fresh belongs to a writer still at work: the worker waits for it rather
/// than recounting under it, and leaves the count to that writer's `$inc`.
#[tokio::test]
async fn a_fresh_claim_is_left_to_its_writer() {
    let Some(f) = fixture("a_fresh_claim_is_left_to_its_writer").await else {
        return;
    };
    let parent = parent(&f).await;
    let reply = ObjectId::from_bytes(PostId::at(now_ms(), 3).bytes());
    let doc = doc! {
        "_id": reply, "author": "b", "text": "in flight",
        "reply_to": { "post": ObjectId::from_bytes(parent.bytes()), "author": "a" },
        "pending": mark("insert", 0),
    };
    f.coll("content").insert_one(doc).await.unwrap();
    // The writer, alive, moves the count and settles a little later.
    let finish = {
        let content = f.coll("content");
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(300)).await;
            let parent = doc! { "_id": ObjectId::from_bytes(parent.bytes()) };
            content
                .update_one(parent, doc! { "$inc": { "replies_count": 1 } })
                .await
                .unwrap();
            content
                .update_one(doc! { "_id": reply }, doc! { "$unset": { "pending": "" } })
                .await
                .unwrap();
        })
    };
    counters_catch_up(&f).await;
    finish.await.unwrap();
    assert_eq!(post_counts(&f, parent).await, (1, 0), "counted once");
}

/// A settler killed between its recount and its removal of the mark (the soak's
/// divergence of 2026-11-28, seed 1795819996917312858: a `replies_count` one short after
/// a request and then the counters worker were killed) leaves the mark, so the next
/// settler recounts again. Removing the mark first, as before, left nothing for the next
/// one to find, and the count short for good.
#[tokio::test]
async fn a_settler_killed_mid_takeover_leaves_the_mark_for_the_next_one() {
    let Some(f) = fixture("a_settler_killed_mid_takeover").await else {
        return;
    };
    let parent = parent(&f).await;
    let reply = PostId::at(now_ms(), 4);
    // An author no other test uses: the gate is keyed by it.
    let author = "killed_settler";
    let doc = doc! {
        "_id": ObjectId::from_bytes(reply.bytes()), "author": author, "text": "cut short",
        "reply_to": { "post": ObjectId::from_bytes(parent.bytes()), "author": "a" },
        "pending": mark("insert", 10_000),
    };
    f.coll("content").insert_one(doc).await.unwrap();
    let claimed = [socialite::store::Claimed {
        counter: socialite::store::Counter::Replies,
        id: reply,
        owner: author.into(),
    }];
    let gate = socialite::faults::hold("claims.recounted", author);
    let settler = {
        let claims = f.store.claims.clone();
        let claimed = claimed.clone();
        tokio::spawn(async move { claims.settle_claims(&claimed).await })
    };
    tokio::time::timeout(Duration::from_secs(10), gate.reached.notified())
        .await
        .expect("the settler reaches the gate");
    // Killed there, as a kill -9 of its process would.
    settler.abort();
    assert!(settler.await.unwrap_err().is_cancelled());
    let content = f.coll("content");
    let still = content.find_one(doc! { "_id": ObjectId::from_bytes(reply.bytes()) });
    assert!(
        still.await.unwrap().unwrap().contains_key("pending"),
        "the killed settler left the mark"
    );
    // The next settler (the restarted worker, replaying the insert) takes it over.
    assert_eq!(f.store.claims.settle_claims(&claimed).await.unwrap(), 1);
    assert_eq!(
        post_counts(&f, parent).await,
        (1, 0),
        "the reply is counted once"
    );
    let settled = content.find_one(doc! { "_id": ObjectId::from_bytes(reply.bytes()) });
    assert!(!settled.await.unwrap().unwrap().contains_key("pending"));
}
