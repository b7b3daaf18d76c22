//! A removal's holder that stalls past the takeover age between its move down and its
//! delete, and comes back after another call on the edge took it over: the taker's
//! recount may come after the holder's move down, so moving back up would leave the
//! counts one above the edges for good. The holder recounts instead.

use std::time::Duration;

use mongodb::bson::doc;
use socialite::domain::{NewUser, now_ms};

use super::fixture;

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
