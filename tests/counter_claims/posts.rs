//! Counts on other documents (a reply's parent's `replies_count`, a repost's
//! original's `reposts_count`) and deleted posts stored again: what a writer killed
//! mid-way leaves behind, which the counters worker settles (`ClaimStore`).

use std::time::Duration;

use mongodb::bson::{doc, oid::ObjectId};
use socialite::domain::{PostId, now_ms};

use super::held::held;
use super::{Fixture, fixture, mark};

/// The counters worker over `f`'s store, stepped until it finds nothing to apply.
pub(super) async fn counters_catch_up(f: &Fixture) {
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
pub(super) async fn parent(f: &Fixture) -> PostId {
    let inserted = f.store.content.insert_post("a", "parent", None, now_ms());
    inserted.await.unwrap().post.id
}

/// (replies_count, reposts_count) of `post`.
pub(super) async fn post_counts(f: &Fixture, post: PostId) -> (u64, u64) {
    let post = f.store.content.post(post).await.unwrap().unwrap();
    (post.replies_count, post.reposts_count)
}

/// What a reply's writer leaves between its insert and its parent's `$inc`: the reply
/// `id` by `author` to `a`'s `parent`, under an insert mark `age_ms` old (stale from
/// the lease's length on).
async fn insert_marked_reply(f: &Fixture, parent: PostId, id: PostId, author: &str, age_ms: i64) {
    let doc = doc! {
        "_id": ObjectId::from_bytes(id.bytes()), "author": author, "text": "cut short",
        "reply_to": { "post": ObjectId::from_bytes(parent.bytes()), "author": "a" },
        "pending": mark("insert", age_ms),
    };
    f.coll("content").insert_one(doc).await.unwrap();
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
    insert_marked_reply(&f, parent, reply, "b", 10_000).await;
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
    let reply = PostId::at(now_ms(), 3);
    insert_marked_reply(&f, parent, reply, "b", 0).await;
    let reply = ObjectId::from_bytes(reply.bytes());
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
    insert_marked_reply(&f, parent, reply, author, 10_000).await;
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
    held(&gate, "the settler").await;
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

/// A keyed post deleted, then stored again by the late insert of a request killed before
/// its second look for the tombstone (`mongo::idempotency`): a retry answered `Created`,
/// the client deleted the post, and the first request's insert landed after. The
/// counters worker, applying that insert, deletes the post again, with the author's
/// count; without it the deleted post stood for good.
#[tokio::test]
async fn a_deleted_post_stored_again_by_a_late_keyed_insert_is_deleted_by_the_worker() {
    let Some(f) = fixture("a_deleted_post_stored_again_by_a_late_keyed_insert").await else {
        return;
    };
    let key = socialite::store::PostKey {
        author: "a".into(),
        key: "late".into(),
        at_ms: now_ms(),
        ttl_ms: 3_600_000,
    };
    let created = f
        .store
        .idempotency
        .insert_post_once(&key, "once", None, now_ms());
    let socialite::store::KeyedInsert::Created(created) = created.await.unwrap() else {
        panic!("a first keyed insert creates its post");
    };
    let id = ObjectId::from_bytes(created.post.id.bytes());
    let content = f.coll("content");
    let mut stored = content.find_one(doc! { "_id": id }).await.unwrap().unwrap();
    counters_catch_up(&f).await;
    let deleted = f.store.content.delete_post(created.post.id).await.unwrap();
    assert!(deleted.is_some());
    // The killed request's insert, landing now, under its claim mark (it never moved
    // the count nor looked again).
    stored.insert("pending", mark("insert", 10_000));
    content.insert_one(stored).await.unwrap();
    assert!(
        f.store
            .content
            .post(created.post.id)
            .await
            .unwrap()
            .is_some()
    );
    counters_catch_up(&f).await;
    assert_eq!(
        f.store.content.post(created.post.id).await.unwrap(),
        None,
        "the client's delete stands"
    );
    assert_eq!(f.counts().await.2, 0, "a's posts_count");
    let again = f
        .store
        .idempotency
        .insert_post_once(&key, "once", None, now_ms());
    assert_eq!(
        again.await.unwrap(),
        socialite::store::KeyedInsert::Deleted(created.post.id)
    );
}
