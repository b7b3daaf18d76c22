//! Removals killed between their count's move and their delete (the history checker's
//! divergence of 2026-11-28, seed 1795862969311709302 on MongoDB: a `reposts_count` of
//! 0 with the repost still standing, after an unrepost met a kill). The removal's claim
//! mark is an update of the source; the counters worker, applying it, finishes the
//! removal once the mark is stale, so the count and the sources agree again.

use mongodb::bson::{doc, oid::ObjectId};
use socialite::domain::{PostId, now_ms};

use super::posts::{counters_catch_up, parent, post_counts};
use super::{fixture, mark};

/// What an unrepost killed after the original's `-1` leaves: the repost standing under
/// a stale removal mark, and the count one below the reposts.
#[tokio::test]
async fn an_unrepost_killed_after_its_decrement_is_finished_by_the_worker() {
    let Some(f) = fixture("an_unrepost_killed_after_its_decrement").await else {
        return;
    };
    let original = parent(&f).await;
    let repost = f
        .store
        .reposts
        .repost("c", original, now_ms())
        .await
        .unwrap();
    counters_catch_up(&f).await;
    assert_eq!(post_counts(&f, original).await, (0, 1));
    let reposts = f.coll("reposts");
    let marked = reposts
        .update_one(
            doc! { "user": "c", "post": ObjectId::from_bytes(original.bytes()) },
            doc! { "$set": { "pending": mark("remove", 10_000) } },
        )
        .await
        .unwrap();
    assert_eq!(marked.matched_count, 1, "{repost:?}");
    f.coll("content")
        .update_one(
            doc! { "_id": ObjectId::from_bytes(original.bytes()) },
            doc! { "$inc": { "reposts_count": -1 } },
        )
        .await
        .unwrap();
    assert_eq!(
        post_counts(&f, original).await,
        (0, 0),
        "the dead call's move"
    );

    counters_catch_up(&f).await;
    let standing = reposts.count_documents(doc! { "user": "c" }).await.unwrap();
    let count = post_counts(&f, original).await.1;
    assert_eq!(
        (standing, count),
        (0, 0),
        "the unrepost is finished and the count agrees with the reposts"
    );
}

/// The same for a reply's delete: its parent's `replies_count`.
#[tokio::test]
async fn a_reply_delete_killed_after_its_decrement_is_finished_by_the_worker() {
    let Some(f) = fixture("a_reply_delete_killed_after_its_decrement").await else {
        return;
    };
    let parent = parent(&f).await;
    let reply = f
        .store
        .content
        .insert_post("b", "re", Some(parent), now_ms());
    let reply: PostId = reply.await.unwrap().post.id;
    counters_catch_up(&f).await;
    assert_eq!(post_counts(&f, parent).await, (1, 0));
    let content = f.coll("content");
    content
        .update_one(
            doc! { "_id": ObjectId::from_bytes(reply.bytes()) },
            doc! { "$set": { "pending": mark("remove", 10_000) } },
        )
        .await
        .unwrap();
    content
        .update_one(
            doc! { "_id": ObjectId::from_bytes(parent.bytes()) },
            doc! { "$inc": { "replies_count": -1 } },
        )
        .await
        .unwrap();
    assert_eq!(
        post_counts(&f, parent).await,
        (0, 0),
        "the dead call's move"
    );

    counters_catch_up(&f).await;
    let reply_stands = f.store.content.post(reply).await.unwrap().is_some();
    assert_eq!(
        (reply_stands, post_counts(&f, parent).await.0),
        (false, 0),
        "the delete is finished and the count agrees with the replies"
    );
}
