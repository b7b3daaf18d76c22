//! A holder that keeps its claim mark past the takeover age and is not taken over: a
//! recount by another call meanwhile ignores its stale mark (the mark is its settler's)
//! and may count its source before the holder's move lands. So a holder whose mark is
//! that old recounts after its move even though its mark was still its own; without it,
//! the count stayed one off its sources for good.

use std::time::Duration;

use mongodb::bson::doc;
use socialite::domain::now_ms;

use super::held::users;
use super::held::{held_delete, held_reply};
use super::marks::{
    oid, parent_with_dead_and_standing_replies, parent_with_dead_reply, replies_of,
};
use super::posts::post_counts;
use super::{Fixture, fixture};

/// Holds long enough for the holder itself to see its mark as outlived (half the
/// takeover age), then ages the mark in the database past the takeover age, as a stall
/// of 2 s leaves it for other calls.
async fn stall(f: &Fixture, id: mongodb::bson::oid::ObjectId) {
    tokio::time::sleep(Duration::from_millis(1_100)).await;
    let aged = f
        .coll("content")
        .update_one(
            doc! { "_id": id },
            doc! { "$set": { "pending.at": now_ms() - 10_000 } },
        )
        .await
        .unwrap();
    assert_eq!(aged.modified_count, 1);
}

#[tokio::test]
async fn a_reply_writer_back_from_a_stall_recounts_the_parent_a_recount_counted_it_in() {
    let Some(f) = fixture("a_reply_writer_back_from_a_stall_recounts").await else {
        return;
    };
    let (author, replier) = ("stalled_p", "stalled_w");
    users(&f, &[author, replier]).await;
    let (parent, dead) = parent_with_dead_reply(&f, author).await;

    // A reply held between its insert and its `$inc`, for longer than the takeover age.
    let (writer_gate, writer) = held_reply(&f, replier, parent).await;
    let reply = f.coll("content").find_one(doc! { "author": replier }).await;
    stall(&f, reply.unwrap().unwrap().get_object_id("_id").unwrap()).await;

    // A takeover of another reply recounts the parent: both replies, the slow one's
    // `$inc` not landed.
    let taken = f.store.claims.settle_claims(&[dead]).await.unwrap();
    assert_eq!(taken, 1, "the dead reply taken over");
    assert_eq!(post_counts(&f, parent).await, (2, 0));

    writer_gate.release.notify_one();
    writer.await.unwrap().unwrap();
    assert_eq!(replies_of(&f, parent).await, 2);
    assert_eq!(
        post_counts(&f, parent).await,
        (2, 0),
        "the writer, back, recounted the parent after its `$inc`"
    );
}

#[tokio::test]
async fn a_reply_delete_back_from_a_stall_recounts_the_parent_a_recount_counted_it_in() {
    let Some(f) = fixture("a_reply_delete_back_from_a_stall_recounts").await else {
        return;
    };
    let (author, deleter) = ("stalled_q", "stalled_d");
    users(&f, &[author, deleter]).await;
    let (parent, dead, reply) = parent_with_dead_and_standing_replies(&f, author, deleter).await;

    // The delete moves the parent down and is held before its delete, for longer than
    // the takeover age, and no call takes it over.
    let (deleter_gate, deleting) = held_delete(&f, deleter, reply).await;
    stall(&f, oid(reply)).await;

    // A takeover of another reply recounts the parent: both replies standing, the
    // delete's `-1` overwritten.
    assert_eq!(f.store.claims.settle_claims(&[dead]).await.unwrap(), 1);
    assert_eq!(post_counts(&f, parent).await, (2, 0));

    deleter_gate.release.notify_one();
    let deleted = deleting.await.unwrap().unwrap();
    assert_eq!(
        deleted.map(|p| p.id),
        Some(reply),
        "its mark was still its own"
    );
    assert_eq!(replies_of(&f, parent).await, 1);
    assert_eq!(
        post_counts(&f, parent).await,
        (1, 0),
        "the delete, back, recounted the parent after its delete"
    );
}
