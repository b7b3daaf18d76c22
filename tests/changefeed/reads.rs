//! Reads on open streams match fresh reads, and a post's delete change carries the
//! deleted post.

use serde_json::{Value, json};
use socialite::domain::{Change, ChangeOp, ChangePosition, now_ms};

use super::{handle, inserts, new_user, read_until};
use crate::common::kinds;

/// The changes without their positions, which may differ and still be equivalent.
fn payload(changes: &[Change]) -> Vec<Value> {
    let strip = |c: &Change| json!([c.collection, c.op, c.key, c.document]);
    changes.iter().map(strip).collect()
}

#[tokio::test]
async fn reads_on_open_streams_match_fresh_reads() {
    for kind in kinds("reads_on_open_streams_match_fresh_reads") {
        let h = handle(kind).await;
        let store = &h.store;
        for id in ["r1", "r2", "r3"] {
            store.users.create_user(&new_user(id)).await.unwrap();
        }
        store.graph.follow("r1", "r2", now_ms()).await.unwrap();
        let mut doomed = None;
        for i in 0..12 {
            let author = ["r2", "r3"][i % 2];
            let post = store.content.insert_post(author, "x", None, now_ms());
            doomed = Some(post.await.unwrap().post.id);
        }
        store.users.rename_user("r1", "Renata").await.unwrap();
        store.content.delete_post(doomed.unwrap()).await.unwrap();
        store.graph.unfollow("r1", "r2").await.unwrap();

        let mut position: Option<ChangePosition> = None;
        let mut reads = 0;
        let mut all = Vec::new();
        let mut opened_after_first = None;
        loop {
            let batch = store.change_feed.changes(position.as_ref(), 3);
            let batch = batch.await.unwrap();
            let fresh = h.fresh_feed().await;
            let again = fresh.changes(position.as_ref(), 3).await.unwrap();
            assert_eq!(payload(&batch), payload(&again), "{kind:?}: read {reads}");
            if let Some((mongo, _)) = &h.mongo {
                opened_after_first.get_or_insert(mongo.change_streams_opened());
            }
            reads += 1;
            let Some(last) = batch.last() else { break };
            position = Some(last.position.clone());
            all.extend(batch);
            assert!(reads < 1_000, "the feed never ran dry");
        }
        assert!(reads > 5, "{kind:?}: enough reads to matter: {reads}");
        assert_eq!(inserts(&all, "posts").len(), 12, "{kind:?}");
        let unfollowed = all
            .iter()
            .any(|c| c.op == ChangeOp::Delete && c.key == "r1/r2");
        assert!(unfollowed, "{kind:?}: the whole history");
        if let Some((mongo, _)) = &h.mongo {
            assert_eq!(
                Some(mongo.change_streams_opened()),
                opened_after_first,
                "{kind:?}: {reads} reads, streams opened once"
            );
        }
    }
}
/// A post's delete change carries the deleted post, in the insert's shape, so a worker
/// knows whose post it was (the counters worker recounts that author).
#[tokio::test]
async fn a_post_delete_change_carries_the_deleted_post() {
    for kind in kinds("a_post_delete_change_carries_the_deleted_post") {
        let h = handle(kind).await;
        h.store.users.create_user(&new_user("del")).await.unwrap();
        let post = h
            .store
            .content
            .insert_post("del", "short-lived", None, now_ms())
            .await
            .unwrap()
            .post;
        h.store.content.delete_post(post.id).await.unwrap().unwrap();
        let key = post.id.to_string();
        let mut position = None;
        let read = read_until(h.store.change_feed.as_ref(), &mut position, 50, |read| {
            read.iter()
                .any(|c| c.op == ChangeOp::Delete && c.key == key)
        })
        .await;
        let posts: Vec<&Change> = read.iter().filter(|c| c.key == key).collect();
        let (insert, delete) = (posts[0], posts[posts.len() - 1]);
        assert_eq!((insert.op, delete.op), (ChangeOp::Insert, ChangeOp::Delete));
        let deleted = delete
            .document
            .clone()
            .expect("the delete carries the post");
        assert_eq!(deleted["author"], "del", "{kind:?}: {deleted}");
        assert_eq!(
            Some(&deleted),
            insert.document.as_ref(),
            "{kind:?}: the insert's shape"
        );
    }
}
