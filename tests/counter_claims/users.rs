//! A user's recount (a takeover's `recount_now`, the counters worker's) that counts a
//! source of the user still under another call's fresh mark: a follow inserted whose
//! increment has not landed, an unfollow whose decrement has landed before its delete,
//! a post inserted before its `posts_count` increment. The late move leaves the profile
//! one above its sources; unlike a post's counts, which nothing recounts after such a
//! move, every write of a user's counters is a change the counters worker applies, and
//! it recounts the user after it. So the count is one above until the worker has applied
//! the late move's own change, then exact. Each test runs the worker while the move is
//! held (it has applied every change before the move), releases the move, and reads the
//! profile before and after the worker applies what is left.

use mongodb::bson::{doc, oid::ObjectId};
use socialite::domain::{PostId, now_ms};

use super::held::{held_follow, held_post, held_unfollow, users};
use super::posts::counters_catch_up;
use super::{Fixture, fixture, mark};

/// (posts, following, followers) as `user`'s profile shows them.
async fn shown(f: &Fixture, user: &str) -> (u64, u64, u64) {
    let u = f.store.users.user(user).await.unwrap().unwrap();
    (u.posts_count, u.following_count, u.followers_count)
}

/// (posts, following, followers) of `user` counted from the sources.
async fn counted(f: &Fixture, user: &str) -> (u64, u64, u64) {
    let posts = f.store.content.posts_by_author(user, None, 1_000).await;
    let following = f.store.graph.following(user, None, 1_000).await;
    let followers = f.store.graph.followers(user, None, 1_000).await;
    (
        posts.unwrap().len() as u64,
        following.unwrap().len() as u64,
        followers.unwrap().len() as u64,
    )
}

/// The edge `from` → `to` as a follow that died after its insert, before its
/// increments, left it: under an insert mark past the takeover age, counted by nothing.
async fn dead_follow(f: &Fixture, from: &str, to: &str) {
    let edge = doc! {
        "_id": format!("{from}/{to}"), "from": from, "to": to, "created_at": now_ms(),
        "merged": false, "pending": mark("add", 10_000),
    };
    f.coll("follows").insert_one(edge).await.unwrap();
}

#[tokio::test]
async fn a_recount_that_counted_a_follow_before_its_increment_is_mended_by_the_worker() {
    let Some(f) = fixture("a_recount_that_counted_a_follow_before_its_increment").await else {
        return;
    };
    let (x, y, z) = ("late_inc_x", "late_inc_y", "late_inc_z");
    users(&f, &[x, y, z]).await;
    dead_follow(&f, x, z).await;
    // x follows y: the edge is in, under its fresh mark; the increments are held.
    let (gate, holder) = held_follow(&f, x, y).await;
    // A second follow of z takes the dead one over and recounts x from the edges,
    // counting the edge to y whose increment is still to come.
    assert!(!f.store.graph.follow(x, z, now_ms()).await.unwrap());
    assert_eq!(shown(&f, x).await, (0, 2, 0));
    // The worker, having applied every change so far, counts the same.
    counters_catch_up(&f).await;
    assert_eq!(shown(&f, x).await, (0, 2, 0));

    gate.release.notify_one();
    assert!(holder.await.unwrap().unwrap());
    assert_eq!(counted(&f, x).await, (0, 2, 0));
    assert_eq!(
        shown(&f, x).await,
        (0, 3, 0),
        "the late increment lands on the recount: one above the edges"
    );
    // Its own change (a counter update of x) is what is left to apply.
    counters_catch_up(&f).await;
    assert_eq!(shown(&f, x).await, (0, 2, 0), "x once the worker has run");
    assert_eq!(shown(&f, y).await, (0, 0, 1));
    assert_eq!(shown(&f, z).await, (0, 0, 1));
}

#[tokio::test]
async fn a_recount_that_counted_an_unfollow_after_its_decrement_is_mended_by_the_worker() {
    let Some(f) = fixture("a_recount_that_counted_an_unfollow_after_its_decrement").await else {
        return;
    };
    let (x, y, z) = ("late_del_x", "late_del_y", "late_del_z");
    users(&f, &[x, y, z]).await;
    assert!(f.store.graph.follow(x, y, now_ms()).await.unwrap());
    dead_follow(&f, x, z).await;
    // x unfollows y: the edge is claimed and the counters moved down; the delete is held.
    let (gate, holder) = held_unfollow(&f, x, y).await;
    assert_eq!(shown(&f, x).await, (0, 0, 0));
    // The takeover's recount counts the edge to y, whose decrement has landed.
    assert!(!f.store.graph.follow(x, z, now_ms()).await.unwrap());
    assert_eq!(shown(&f, x).await, (0, 2, 0));
    counters_catch_up(&f).await;
    assert_eq!(shown(&f, x).await, (0, 2, 0));

    gate.release.notify_one();
    assert!(holder.await.unwrap().unwrap());
    assert_eq!(counted(&f, x).await, (0, 1, 0));
    assert_eq!(
        shown(&f, x).await,
        (0, 2, 0),
        "the late delete leaves the recount one above the edges"
    );
    // The delete's own change is what is left to apply.
    counters_catch_up(&f).await;
    assert_eq!(shown(&f, x).await, (0, 1, 0), "x once the worker has run");
    assert_eq!(shown(&f, y).await, (0, 0, 0));
    assert_eq!(shown(&f, z).await, (0, 0, 1));
}

#[tokio::test]
async fn a_recount_that_counted_a_post_before_its_increment_is_mended_by_the_worker() {
    let Some(f) = fixture("a_recount_that_counted_a_post_before_its_increment").await else {
        return;
    };
    let author = "late_post_author";
    users(&f, &[author]).await;
    let content = &f.store.content;
    content
        .insert_post(author, "kept", None, now_ms())
        .await
        .unwrap();
    let dead: PostId = content
        .insert_post(author, "half deleted", None, now_ms())
        .await
        .unwrap()
        .post
        .id;
    // A delete that died after moving the count down, before its delete.
    f.coll("content")
        .update_one(
            doc! { "_id": ObjectId::from_bytes(dead.bytes()) },
            doc! { "$set": { "pending": mark("remove", 10_000) } },
        )
        .await
        .unwrap();
    f.inc(author, "posts_count", -1).await;
    // A new post is in, under its fresh mark; its increment is held.
    let (gate, holder) = held_post(&f, author).await;
    // A second delete takes the dead one over and recounts the author, counting the
    // new post whose increment is still to come.
    assert!(content.delete_post(dead).await.unwrap().is_some());
    assert_eq!(shown(&f, author).await, (2, 0, 0));
    counters_catch_up(&f).await;
    assert_eq!(shown(&f, author).await, (2, 0, 0));

    gate.release.notify_one();
    holder.await.unwrap().unwrap();
    assert_eq!(counted(&f, author).await, (2, 0, 0));
    assert_eq!(
        shown(&f, author).await,
        (3, 0, 0),
        "the late increment lands on the recount: one above the posts"
    );
    counters_catch_up(&f).await;
    assert_eq!(
        shown(&f, author).await,
        (2, 0, 0),
        "the author once the worker has run"
    );
}
