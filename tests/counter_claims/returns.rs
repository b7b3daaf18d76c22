//! A holder that stalls past the takeover age and comes back after another call on its
//! document took it over. A removal's, stalled between its move down and its delete:
//! the taker's recount may come after the holder's move down, so moving back up would
//! leave the counts one above the edges for good; the holder recounts instead. An
//! insert's (a follow's edge, a post), stalled before its move up: the taker's recount
//! counted the source already, so the holder's move would leave the counts one above
//! until the counters worker ran; the holder recounts after its move.

use mongodb::bson::{Document, doc};
use socialite::domain::{PostId, now_ms};

use super::fixture;
use super::held::{held_follow, held_post, held_unfollow, users};

/// Ages the claim mark of the document `filter` finds in `coll` past the takeover, as a
/// stall of 2 s would leave it.
async fn age_mark(f: &super::Fixture, coll: &str, filter: Document) {
    let aged = f
        .coll(coll)
        .update_one(filter, doc! { "$set": { "pending.at": now_ms() - 10_000 } })
        .await
        .unwrap();
    assert_eq!(aged.modified_count, 1, "{coll}: a mark aged");
}

/// (following of `x`, followers of `y`).
async fn counts(f: &super::Fixture, x: &str, y: &str) -> (u64, u64) {
    let users = &f.store.users;
    let (x, y) = (
        users.user(x).await.unwrap().unwrap(),
        users.user(y).await.unwrap().unwrap(),
    );
    (x.following_count, y.followers_count)
}

#[tokio::test]
async fn an_unfollow_back_from_a_stall_after_a_takeover_leaves_the_counts_at_the_edges() {
    let Some(f) = fixture("an_unfollow_back_from_a_stall_after_a_takeover").await else {
        return;
    };
    // Users of this test alone: the gate is keyed by the follower.
    let (x, y) = ("stalled_x", "stalled_y");
    users(&f, &[x, y]).await;
    assert!(f.store.graph.follow(x, y, now_ms()).await.unwrap());
    assert_eq!(counts(&f, x, y).await, (1, 1));

    // The holder claims the edge, moves both counts down, and stalls before its delete.
    let (gate, holder) = held_unfollow(&f, x, y).await;
    assert_eq!(counts(&f, x, y).await, (0, 0));
    // Its claim ages past the takeover (as a stall of 2 s would leave it).
    age_mark(&f, "follows", doc! { "_id": format!("{x}/{y}") }).await;
    // A second unfollow takes it over: deletes the edge and recounts, after the move.
    assert!(f.store.graph.unfollow(x, y).await.unwrap());
    assert_eq!(counts(&f, x, y).await, (0, 0));

    gate.release.notify_one();
    assert!(
        !holder.await.unwrap().unwrap(),
        "the taker removed the edge"
    );
    assert_eq!(
        counts(&f, x, y).await,
        (0, 0),
        "the holder's return leaves the counts at the edges"
    );
}

#[tokio::test]
async fn a_follow_back_from_a_stall_after_a_takeover_leaves_the_counts_at_the_edges() {
    let Some(f) = fixture("a_follow_back_from_a_stall_after_a_takeover").await else {
        return;
    };
    let (x, y) = ("returning_follower", "returning_followee");
    users(&f, &[x, y]).await;
    // The holder inserts the edge under its mark and stalls before its counters move.
    let (gate, holder) = held_follow(&f, x, y).await;
    assert_eq!(counts(&f, x, y).await, (0, 0));
    age_mark(&f, "follows", doc! { "_id": format!("{x}/{y}") }).await;
    // A second follow takes the stale mark over: it recounts (the edge counted) and
    // settles the mark.
    assert!(!f.store.graph.follow(x, y, now_ms()).await.unwrap());
    assert_eq!(counts(&f, x, y).await, (1, 1));

    gate.release.notify_one();
    assert!(holder.await.unwrap().unwrap(), "the holder made the edge");
    assert_eq!(
        counts(&f, x, y).await,
        (1, 1),
        "the holder's return leaves the counts at the one edge"
    );
}

#[tokio::test]
async fn a_post_back_from_a_stall_after_a_takeover_leaves_the_count_at_the_posts() {
    let Some(f) = fixture("a_post_back_from_a_stall_after_a_takeover").await else {
        return;
    };
    let author = "returning_author";
    users(&f, &[author]).await;
    // The holder inserts the post under its mark and stalls before its `$inc`.
    let (gate, holder) = held_post(&f, author).await;
    let content = f.coll("content");
    let stored = content
        .find_one(doc! { "author": author })
        .await
        .unwrap()
        .expect("the post is stored");
    age_mark(&f, "content", doc! { "_id": stored.get("_id").unwrap() }).await;
    // A delete takes the stale mark over: the post goes, the author is recounted.
    let id = PostId::from_bytes(stored.get_object_id("_id").unwrap().bytes());
    assert!(f.store.content.delete_post(id).await.unwrap().is_some());
    let posts = |f: &super::Fixture| {
        let users = f.store.users.clone();
        async move { users.user(author).await.unwrap().unwrap().posts_count }
    };
    assert_eq!(posts(&f).await, 0);

    gate.release.notify_one();
    holder.await.unwrap().unwrap();
    assert_eq!(
        posts(&f).await,
        0,
        "the holder's return leaves the count at the posts"
    );
}
