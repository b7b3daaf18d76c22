//! A recount that meets a source still being written: a reply or repost inserted whose
//! `$inc` has not landed yet, or a removal whose `-1` has landed and whose delete has
//! not, both under a fresh claim mark. The recount (here a takeover's, of another source
//! of the same post) waits for the mark to go before it writes: counting the inserted
//! source and writing before its `$inc` left the count one above its sources for good,
//! as did counting the removed source as standing after its `-1`.

use std::time::Duration;

use mongodb::bson::{doc, oid::ObjectId};
use socialite::domain::{PostId, now_ms};
use socialite::faults::Gate;
use socialite::store::{Claimed, Counter, StoreResult};
use tokio::task::JoinHandle;

use super::held::users;
use super::held::{held, held_delete, held_reply, held_repost};
use super::posts::post_counts;
use super::{Fixture, fixture, mark};

pub(super) fn oid(id: PostId) -> ObjectId {
    ObjectId::from_bytes(id.bytes())
}

/// Waits until `gate` is reached, or until `call` has finished (the recount did not
/// wait): whether the gate was reached.
async fn reached_before_done<T>(gate: &Gate, call: &JoinHandle<T>) -> bool {
    let done = async {
        while !call.is_finished() {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    };
    let reached = tokio::time::timeout(Duration::from_secs(10), async {
        tokio::select! {
            _ = gate.reached.notified() => true,
            _ = done => false,
        }
    });
    reached
        .await
        .expect("the recount waits for the mark or finishes")
}

/// `author`'s post, and a reply to it by `b` whose writer died between its insert and
/// its parent's `$inc` (a stale insert mark): the source a takeover settles.
pub(super) async fn parent_with_dead_reply(f: &Fixture, author: &str) -> (PostId, Claimed) {
    let parent = f
        .store
        .content
        .insert_post(author, "parent", None, now_ms());
    let parent = parent.await.unwrap().post.id;
    let dead = PostId::at(now_ms(), 5);
    let reply = doc! {
        "_id": oid(dead), "author": "b", "text": "cut short",
        "reply_to": { "post": oid(parent), "author": author },
        "pending": mark("insert", 10_000),
    };
    f.coll("content").insert_one(reply).await.unwrap();
    let claimed = Claimed {
        counter: Counter::Replies,
        id: dead,
        owner: "b".into(),
    };
    (parent, claimed)
}

/// As [`parent_with_dead_reply`], with a standing reply by `replier` too, counted: its
/// id last.
pub(super) async fn parent_with_dead_and_standing_replies(
    f: &Fixture,
    author: &str,
    replier: &str,
) -> (PostId, Claimed, PostId) {
    let (parent, dead) = parent_with_dead_reply(f, author).await;
    let content = &f.store.content;
    let reply = content.insert_post(replier, "gone", Some(parent), now_ms());
    let reply = reply.await.unwrap().post.id;
    assert_eq!(post_counts(f, parent).await, (1, 0));
    (parent, dead, reply)
}

/// The counters worker's takeover of the dead reply `dead`, spawned: how many it took.
fn takeover(f: &Fixture, dead: Claimed) -> JoinHandle<StoreResult<u64>> {
    let claims = f.store.claims.clone();
    tokio::spawn(async move { claims.settle_claims(&[dead]).await })
}

/// The takeover `taker` took the dead reply over.
async fn taken_over(taker: JoinHandle<StoreResult<u64>>) {
    let taken = taker.await.unwrap().unwrap();
    assert_eq!(taken, 1, "the dead reply taken over");
}

/// `parent` has `n` replies, and its `replies_count` equals them after the `who`'s
/// recount (which `waited` for the mark, or not).
async fn counts_its_replies(f: &Fixture, parent: PostId, n: u64, who: &str, waited: bool) {
    assert_eq!(replies_of(f, parent).await, n);
    assert_eq!(
        post_counts(f, parent).await,
        (n, 0),
        "the parent's replies_count equals its replies (the {who} waited: {waited})"
    );
}

pub(super) async fn replies_of(f: &Fixture, parent: PostId) -> u64 {
    let filter = doc! { "reply_to.post": oid(parent) };
    f.coll("content").count_documents(filter).await.unwrap()
}

#[tokio::test]
async fn a_takeovers_recount_waits_for_a_reply_whose_increment_is_in_flight() {
    let Some(f) = fixture("a_takeovers_recount_waits_for_a_reply_in_flight").await else {
        return;
    };
    // Users of this test alone: the gates are keyed by them.
    let (author, replier) = ("marked_p", "in_flight_r");
    users(&f, &[author, replier]).await;
    let (parent, dead) = parent_with_dead_reply(&f, author).await;
    assert_eq!(post_counts(&f, parent).await, (0, 0));

    // A live reply, held between its insert (under a fresh mark) and its `$inc`.
    let (writer_gate, writer) = held_reply(&f, replier, parent).await;

    // The counters worker takes the dead reply over and recounts the parent.
    let marked = socialite::faults::hold("post_count.marked", author);
    let taker = takeover(&f, dead);
    let waited = reached_before_done(&marked, &taker).await;
    marked.release.notify_one();
    writer_gate.release.notify_one();
    writer.await.unwrap().unwrap();
    taken_over(taker).await;
    counts_its_replies(&f, parent, 2, "recount", waited).await;
}

#[tokio::test]
async fn a_takeovers_recount_waits_for_a_repost_whose_increment_is_in_flight() {
    let Some(f) = fixture("a_takeovers_recount_waits_for_a_repost_in_flight").await else {
        return;
    };
    let (author, dead_reposter, reposter) = ("marked_o", "dead_u", "in_flight_w");
    users(&f, &[author, dead_reposter, reposter]).await;
    let original = f
        .store
        .content
        .insert_post(author, "original", None, now_ms());
    let original = original.await.unwrap().post.id;
    let reposts = &f.store.reposts;
    let dead = reposts
        .repost(dead_reposter, original, now_ms())
        .await
        .unwrap();
    // An unrepost claimed it, moved the count down, and died before its delete.
    f.coll("reposts")
        .update_one(
            doc! { "_id": oid(dead.repost.id) },
            doc! { "$set": { "pending": mark("remove", 10_000) } },
        )
        .await
        .unwrap();
    f.coll("content")
        .update_one(
            doc! { "_id": oid(original) },
            doc! { "$inc": { "reposts_count": -1_i64, "counter_version": 1_i64 } },
        )
        .await
        .unwrap();
    assert_eq!(post_counts(&f, original).await, (0, 0));

    // A live repost, held between its insert (under a fresh mark) and its `$inc`.
    let (writer_gate, writer) = held_repost(&f, reposter, original).await;

    // A second unrepost takes the dead one over: deletes it and recounts the original.
    let marked = socialite::faults::hold("post_count.marked", author);
    let taker = {
        let reposts = f.store.reposts.clone();
        tokio::spawn(async move { reposts.unrepost(dead_reposter, original).await })
    };
    let waited = reached_before_done(&marked, &taker).await;
    marked.release.notify_one();
    writer_gate.release.notify_one();
    assert!(writer.await.unwrap().unwrap().created);
    let taken = taker.await.unwrap().unwrap();
    assert_eq!(taken.map(|r| r.id), Some(dead.repost.id));

    let reposts = f.coll("reposts");
    let standing = reposts
        .count_documents(doc! { "post": oid(original) })
        .await;
    assert_eq!(standing.unwrap(), 1);
    assert_eq!(
        post_counts(&f, original).await,
        (0, 1),
        "the original's reposts_count equals its reposts (the recount waited: {waited})"
    );
}

/// The reverse: a reply's delete has moved the parent down and not yet deleted the reply
/// when a takeover's recount reads the count; counting the reply as standing and writing
/// after its delete left the count one above.
#[tokio::test]
async fn a_takeovers_recount_waits_for_a_reply_delete_whose_decrement_has_landed() {
    let Some(f) = fixture("a_takeovers_recount_waits_for_a_reply_delete").await else {
        return;
    };
    let (author, deleter) = ("marked_q", "deleting_d");
    users(&f, &[author, deleter]).await;
    let (parent, dead, reply) = parent_with_dead_and_standing_replies(&f, author, deleter).await;

    // The delete claims the reply, moves the parent down, and is held before its delete.
    let (deleter_gate, deleting) = held_delete(&f, deleter, reply).await;
    assert_eq!(post_counts(&f, parent).await, (0, 0));

    // The takeover's recount: held where it waits for the mark, or (had it not looked
    // for marks before counting) between its count and its write.
    let marked = socialite::faults::hold("post_count.marked", author);
    let counted = socialite::faults::hold("post_count.counted", author);
    let taker = takeover(&f, dead);
    let waited = tokio::time::timeout(Duration::from_secs(10), async {
        tokio::select! {
            _ = marked.reached.notified() => true,
            _ = counted.reached.notified() => false,
        }
    });
    let waited = waited.await.expect("the recount reaches a gate");
    deleter_gate.release.notify_one();
    let deleted = deleting.await.unwrap().unwrap();
    assert_eq!(deleted.map(|p| p.id), Some(reply));
    marked.release.notify_one();
    counted.release.notify_one();
    taken_over(taker).await;
    counts_its_replies(&f, parent, 1, "recount", waited).await;
}

/// A reply inserted after the recount looked for marks and before it counted: counted,
/// its `$inc` not landed; the recount looks again after its count, and waits.
#[tokio::test]
async fn a_recount_looks_for_marks_again_after_its_count() {
    let Some(f) = fixture("a_recount_looks_for_marks_again_after_its_count").await else {
        return;
    };
    let (author, replier) = ("marked_s", "in_flight_s");
    users(&f, &[author, replier]).await;
    let (parent, dead) = parent_with_dead_reply(&f, author).await;

    // The takeover's recount, held after its first look for marks (none), before its count.
    let looked = socialite::faults::hold("post_count.looked", author);
    let marked = socialite::faults::hold("post_count.marked", author);
    let taker = takeover(&f, dead);
    held(&looked, "the recount").await;
    // A live reply, held between its insert and its `$inc`.
    let (writer_gate, writer) = held_reply(&f, replier, parent).await;
    looked.release.notify_one();
    let waited = reached_before_done(&marked, &taker).await;
    marked.release.notify_one();
    writer_gate.release.notify_one();
    writer.await.unwrap().unwrap();
    taken_over(taker).await;
    counts_its_replies(&f, parent, 2, "recount", waited).await;
}

/// The counters' rebuild (`recount_all`, as `audit --repair` runs it) meets a reply whose
/// `$inc` is in flight: it recounts that parent alone, waiting for the mark.
#[tokio::test]
async fn the_counters_rebuild_waits_for_a_reply_whose_increment_is_in_flight() {
    let Some(f) = fixture("the_counters_rebuild_waits_for_a_reply_in_flight").await else {
        return;
    };
    let (author, replier) = ("marked_r", "in_flight_b");
    users(&f, &[author, replier]).await;
    let parent = f
        .store
        .content
        .insert_post(author, "parent", None, now_ms());
    let parent = parent.await.unwrap().post.id;
    let (writer_gate, writer) = held_reply(&f, replier, parent).await;

    let marked = socialite::faults::hold("post_count.marked", author);
    let rebuild = {
        let users = f.store.users.clone();
        let fence = socialite::domain::Fence {
            lease: "counters".into(),
            holder: "test".into(),
            version: 1,
        };
        tokio::spawn(async move { users.recount_all(&fence).await })
    };
    let waited = reached_before_done(&marked, &rebuild).await;
    marked.release.notify_one();
    writer_gate.release.notify_one();
    writer.await.unwrap().unwrap();
    rebuild.await.unwrap().unwrap();

    counts_its_replies(&f, parent, 1, "rebuild", waited).await;
}
