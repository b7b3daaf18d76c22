//! The count a removal moves on another post (a reply's parent's `replies_count`, a
//! repost's original's `reposts_count`) when its holder stalls past the takeover age
//! between its move down and its delete, and comes back after a second call took the
//! source over: the taker's recount may come after the holder's move down, so moving
//! the parent back up would leave it one above its sources for good; the holder
//! recounts it instead. And a recount that a move overtakes between its count and its
//! write: the write is refused (the post's `counter_version` moved) and it counts again.

use mongodb::bson::{Document, doc, oid::ObjectId};
use socialite::domain::{PostId, now_ms};

use super::held::{held, held_delete, held_unrepost, users};
use super::posts::post_counts;
use super::{Fixture, fixture, mark};

async fn post(f: &Fixture, author: &str, reply_to: Option<PostId>) -> PostId {
    let inserted = f
        .store
        .content
        .insert_post(author, "text", reply_to, now_ms());
    inserted.await.unwrap().post.id
}

/// Ages the claim mark on the one document of `coll` that `filter` matches past the
/// takeover (as a stall of 2 s would leave it).
async fn age_mark(f: &Fixture, coll: &str, filter: Document) {
    let aged = f
        .coll(coll)
        .update_one(filter, doc! { "$set": { "pending.at": now_ms() - 10_000 } })
        .await
        .unwrap();
    assert_eq!(aged.modified_count, 1);
}

fn oid(id: PostId) -> ObjectId {
    ObjectId::from_bytes(id.bytes())
}

#[tokio::test]
async fn a_reply_delete_back_from_a_stall_after_a_takeover_leaves_the_parent_at_its_replies() {
    let Some(f) = fixture("a_reply_delete_back_from_a_stall_after_a_takeover").await else {
        return;
    };
    let (author, replier) = ("parent_p", "stalled_r");
    users(&f, &[author, replier]).await;
    let parent = post(&f, author, None).await;
    let reply = post(&f, replier, Some(parent)).await;
    post(&f, "b", Some(parent)).await;
    assert_eq!(post_counts(&f, parent).await, (2, 0));

    // The holder claims the reply, moves the counts down, and stalls before its delete.
    let (gate, holder) = held_delete(&f, replier, reply).await;
    assert_eq!(post_counts(&f, parent).await, (1, 0));
    age_mark(&f, "content", doc! { "_id": oid(reply) }).await;
    // A second delete takes it over: deletes the reply and recounts, after the move.
    let taken = f.store.content.delete_post(reply).await.unwrap();
    assert_eq!(taken.map(|p| p.id), Some(reply));
    assert_eq!(post_counts(&f, parent).await, (1, 0));

    gate.release.notify_one();
    let back = holder.await.unwrap().unwrap();
    assert_eq!(back, None, "the taker removed the reply");
    assert_eq!(
        post_counts(&f, parent).await,
        (1, 0),
        "the holder's return leaves the parent's replies_count at its replies"
    );
    let replier = f.store.users.user(replier).await.unwrap().unwrap();
    assert_eq!(replier.posts_count, 0);
}

#[tokio::test]
async fn an_unrepost_back_from_a_stall_after_a_takeover_leaves_the_original_at_its_reposts() {
    let Some(f) = fixture("an_unrepost_back_from_a_stall_after_a_takeover").await else {
        return;
    };
    let (author, reposter) = ("original_o", "stalled_u");
    users(&f, &[author, reposter]).await;
    let original = post(&f, author, None).await;
    let reposts = &f.store.reposts;
    let repost = reposts.repost(reposter, original, now_ms()).await.unwrap();
    reposts.repost("c", original, now_ms()).await.unwrap();
    assert_eq!(post_counts(&f, original).await, (0, 2));

    // The holder claims the repost, moves the count down, and stalls before its delete.
    let (gate, holder) = held_unrepost(&f, reposter, original).await;
    assert_eq!(post_counts(&f, original).await, (0, 1));
    age_mark(&f, "reposts", doc! { "_id": oid(repost.repost.id) }).await;
    // A second unrepost takes it over: deletes the repost and recounts, after the move.
    let taken = reposts.unrepost(reposter, original).await.unwrap();
    assert_eq!(taken.map(|r| r.id), Some(repost.repost.id));
    assert_eq!(post_counts(&f, original).await, (0, 1));

    gate.release.notify_one();
    let back = holder.await.unwrap().unwrap();
    assert_eq!(back, None, "the taker removed the repost");
    assert_eq!(
        post_counts(&f, original).await,
        (0, 1),
        "the holder's return leaves the original's reposts_count at its reposts"
    );
}

/// A takeover's recount of the parent counts its replies, then a new reply's `$inc`
/// lands before the recount writes: an unconditional `$set` of the older count would
/// lose the new reply for good.
#[tokio::test]
async fn a_recount_overtaken_by_a_move_counts_again() {
    let Some(f) = fixture("a_recount_overtaken_by_a_move_counts_again").await else {
        return;
    };
    let author = "recounted_p";
    users(&f, &[author]).await;
    let parent = post(&f, author, None).await;
    let dead = post(&f, "b", Some(parent)).await;
    post(&f, "b", Some(parent)).await;
    // A delete of `dead` claimed it, moved the counts down, and died.
    f.coll("content")
        .update_one(
            doc! { "_id": oid(dead) },
            doc! { "$set": { "pending": mark("remove", 10_000) } },
        )
        .await
        .unwrap();
    f.coll("content")
        .update_one(
            doc! { "_id": oid(parent) },
            doc! { "$inc": { "replies_count": -1_i64, "counter_version": 1_i64 } },
        )
        .await
        .unwrap();
    f.inc("b", "posts_count", -1).await;
    assert_eq!(post_counts(&f, parent).await, (1, 0));

    // A second delete takes it over and recounts the parent: held between its count
    // (one reply) and its write.
    let gate = socialite::faults::hold("post_count.counted", author);
    let taker = {
        let content = f.store.content.clone();
        tokio::spawn(async move { content.delete_post(dead).await })
    };
    held(&gate, "the recount").await;
    // A new reply lands, and moves the count, in between.
    post(&f, "c", Some(parent)).await;
    assert_eq!(post_counts(&f, parent).await, (2, 0));

    gate.release.notify_one();
    let taken = taker.await.unwrap().unwrap();
    assert_eq!(taken.map(|p| p.id), Some(dead));
    assert_eq!(
        post_counts(&f, parent).await,
        (2, 0),
        "the recount's older count does not overwrite the new reply's move"
    );
}
