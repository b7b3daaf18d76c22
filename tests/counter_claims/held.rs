//! Writers held mid-way at a fault gate, each spawned as a task: an insert held between
//! its insert (under a fresh claim mark) and its count's `$inc` (`post.stored`,
//! `repost.stored`), or a removal held between its count's `-1` and its delete
//! (`claim.moved`). Each gate is keyed by the writer's user, so tests hold only their
//! own calls. Each returns once the call waits at its gate, with the gate (release it
//! to let the call go on) and the call's handle.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use socialite::domain::{NewUser, Post, PostId, Repost, now_ms};
use socialite::faults::Gate;
use socialite::store::{Inserted, Reposted, StoreResult};
use tokio::task::JoinHandle;

use super::Fixture;

/// Creates users of one test alone (gates are keyed by a user, and tests run at once).
pub(super) async fn users(f: &Fixture, ids: &[&str]) {
    for id in ids {
        let user = NewUser {
            id: (*id).into(),
            display_name: (*id).into(),
            created_at_ms: now_ms(),
        };
        f.store.users.create_user(&user).await.unwrap();
    }
}

/// A call held at its gate, and its handle.
pub(super) type Held<T> = (Arc<Gate>, JoinHandle<StoreResult<T>>);

/// Waits (at most 10 s) until `gate` holds a call; `what` names it in the panic.
pub(super) async fn held(gate: &Arc<Gate>, what: &str) {
    tokio::time::timeout(Duration::from_secs(10), gate.reached.notified())
        .await
        .unwrap_or_else(|_| panic!("{what} reaches its gate"));
}

/// Sets gate `name` for `key`, spawns `call`, and waits until the gate holds it.
async fn hold_at<T: Send + 'static>(
    name: &'static str,
    key: &str,
    what: &str,
    call: impl Future<Output = StoreResult<T>> + Send + 'static,
) -> Held<T> {
    let gate = socialite::faults::hold(name, key);
    let call = tokio::spawn(call);
    held(&gate, what).await;
    (gate, call)
}

/// `replier`'s reply to `parent`, held before the parent's `$inc`.
pub(super) async fn held_reply(f: &Fixture, replier: &str, parent: PostId) -> Held<Inserted> {
    let (content, replier_owned) = (f.store.content.clone(), replier.to_owned());
    let call = async move {
        content
            .insert_post(&replier_owned, "held", Some(parent), now_ms())
            .await
    };
    hold_at("post.stored", replier, "the reply's insert", call).await
}

/// `reposter`'s repost of `original`, held before the original's `$inc`.
pub(super) async fn held_repost(f: &Fixture, reposter: &str, original: PostId) -> Held<Reposted> {
    let (reposts, reposter_owned) = (f.store.reposts.clone(), reposter.to_owned());
    let call = async move { reposts.repost(&reposter_owned, original, now_ms()).await };
    hold_at("repost.stored", reposter, "the repost's insert", call).await
}

/// The delete of `author`'s post `id`, held after its counts' `-1`, before its delete.
pub(super) async fn held_delete(f: &Fixture, author: &str, id: PostId) -> Held<Option<Post>> {
    let content = f.store.content.clone();
    let call = async move { content.delete_post(id).await };
    hold_at("claim.moved", author, "the post's delete", call).await
}

/// `reposter`'s unrepost of `original`, held after the original's `-1`, before its
/// delete.
pub(super) async fn held_unrepost(
    f: &Fixture,
    reposter: &str,
    original: PostId,
) -> Held<Option<Repost>> {
    let (reposts, reposter_owned) = (f.store.reposts.clone(), reposter.to_owned());
    let call = async move { reposts.unrepost(&reposter_owned, original).await };
    hold_at("claim.moved", reposter, "the unrepost", call).await
}

/// `follower`'s follow of `followee`, held after its edge's insert (under a fresh claim
/// mark), before its counters move (`follow.inserted`).
pub(super) async fn held_follow(f: &Fixture, follower: &str, followee: &str) -> Held<bool> {
    let graph = f.store.graph.clone();
    let (from, to) = (follower.to_owned(), followee.to_owned());
    let call = async move { graph.follow(&from, &to, now_ms()).await };
    hold_at("follow.inserted", follower, "the follow", call).await
}

/// `follower`'s unfollow of `followee`, held after its counters' `-1`, before its delete.
pub(super) async fn held_unfollow(f: &Fixture, follower: &str, followee: &str) -> Held<bool> {
    let graph = f.store.graph.clone();
    let (from, to) = (follower.to_owned(), followee.to_owned());
    let call = async move { graph.unfollow(&from, &to).await };
    hold_at("claim.moved", follower, "the unfollow", call).await
}

/// `author`'s post (not a reply), held before its `posts_count` `$inc`.
pub(super) async fn held_post(f: &Fixture, author: &str) -> Held<Inserted> {
    let (content, author_owned) = (f.store.content.clone(), author.to_owned());
    let call = async move {
        content
            .insert_post(&author_owned, "held", None, now_ms())
            .await
    };
    hold_at("post.stored", author, "the post's insert", call).await
}
