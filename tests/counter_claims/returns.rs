//! A holder that stalls past the takeover age and comes back after another call on its
//! document took it over. A removal's, stalled between its move down and its delete:
//! the taker's recount may come after the holder's move down, so moving back up would
//! leave the counts one above the edges for good; the holder recounts instead. An
//! insert's (a follow's edge, a post), stalled before its move up: the taker's recount
//! counted the source already, so the holder's move would leave the counts one above
//! until the counters worker ran; the holder recounts after its move.

use std::time::Duration;

use mongodb::bson::doc;
use socialite::domain::{NewUser, PostId, now_ms};

use super::fixture;
use super::held::held;

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
    for id in [x, y] {
        let user = NewUser {
            id: id.into(),
            display_name: id.into(),
            created_at_ms: now_ms(),
        };
        f.store.users.create_user(&user).await.unwrap();
    }
    assert!(f.store.graph.follow(x, y, now_ms()).await.unwrap());
    assert_eq!(counts(&f, x, y).await, (1, 1));

    // The holder claims the edge, moves both counts down, and stalls before its delete.
    let gate = socialite::faults::hold("claim.moved", x);
    let holder = {
        let graph = f.store.graph.clone();
        tokio::spawn(async move { graph.unfollow(x, y).await })
    };
    tokio::time::timeout(Duration::from_secs(10), gate.reached.notified())
        .await
        .expect("the unfollow reaches the gate");
    assert_eq!(counts(&f, x, y).await, (0, 0));
    // Its claim ages past the takeover (as a stall of 2 s would leave it).
    let aged = f
        .coll("follows")
        .update_one(
            doc! { "_id": format!("{x}/{y}") },
            doc! { "$set": { "pending.at": now_ms() - 10_000 } },
        )
        .await
        .unwrap();
    assert_eq!(aged.modified_count, 1);
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

/// Two users of one test alone (the gates are keyed by user).
async fn pair(f: &super::Fixture, x: &str, y: &str) {
    for id in [x, y] {
        let user = NewUser {
            id: id.into(),
            display_name: id.into(),
            created_at_ms: now_ms(),
        };
        f.store.users.create_user(&user).await.unwrap();
    }
}

#[tokio::test]
async fn a_follow_back_from_a_stall_after_a_takeover_leaves_the_counts_at_the_edges() {
    let Some(f) = fixture("a_follow_back_from_a_stall_after_a_takeover").await else {
        return;
    };
    let (x, y) = ("returning_follower", "returning_followee");
    pair(&f, x, y).await;
    // The holder inserts the edge under its mark and stalls before its counters move.
    let gate = socialite::faults::hold("follow.inserted", x);
    let holder = {
        let graph = f.store.graph.clone();
        tokio::spawn(async move { graph.follow(x, y, now_ms()).await })
    };
    held(&gate, "the follow").await;
    assert_eq!(counts(&f, x, y).await, (0, 0));
    let aged = f
        .coll("follows")
        .update_one(
            doc! { "_id": format!("{x}/{y}") },
            doc! { "$set": { "pending.at": now_ms() - 10_000 } },
        )
        .await
        .unwrap();
    assert_eq!(aged.modified_count, 1);
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
    pair(&f, author, "returning_other").await;
    // The holder inserts the post under its mark and stalls before its `$inc`.
    let gate = socialite::faults::hold("post.stored", author);
    let holder = {
        let content = f.store.content.clone();
        tokio::spawn(async move { content.insert_post(author, "held", None, now_ms()).await })
    };
    held(&gate, "the post").await;
    let content = f.coll("content");
    let stored = content
        .find_one(doc! { "author": author })
        .await
        .unwrap()
        .expect("the post is stored");
    let aged = content
        .update_one(
            doc! { "_id": stored.get("_id").unwrap() },
            doc! { "$set": { "pending.at": now_ms() - 10_000 } },
        )
        .await
        .unwrap();
    assert_eq!(aged.modified_count, 1);
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
