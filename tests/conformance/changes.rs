//! The change feed: ordered, resumable from any position it still holds.

use std::collections::HashSet;

use socialite::domain::{ChangeOp, NewUser, now_ms};
use socialite::store::StoreError;

use crate::common::{fresh_store, kinds};

#[tokio::test]
async fn the_change_feed_is_ordered_and_resumable() {
    for kind in kinds("the_change_feed_is_ordered_and_resumable") {
        let t = fresh_store(kind).await;
        let store = &t.store;
        let new = |id: &str| NewUser {
            id: id.into(),
            display_name: id.into(),
            created_at_ms: now_ms(),
        };
        store.users.create_user(&new("u1")).await.unwrap();
        store.users.create_user(&new("u2")).await.unwrap();
        store.graph.follow("u1", "u2", now_ms()).await.unwrap();
        let post = store
            .content
            .insert_post("u2", "hello", None, now_ms())
            .await
            .unwrap()
            .post;
        store.users.rename_user("u1", "Ursula").await.unwrap();
        store.graph.unfollow("u1", "u2").await.unwrap();
        store.content.delete_post(post.id).await.unwrap();

        // Read it all in small batches, resuming from each batch's last position.
        let mut changes = Vec::new();
        let mut position = None;
        for _ in 0..100 {
            let batch = store
                .change_feed
                .changes(position.as_ref(), 2)
                .await
                .unwrap();
            if batch.is_empty() {
                break;
            }
            position = Some(batch.last().unwrap().position.clone());
            changes.extend(batch);
        }
        // Counter updates may show up as extra user updates on MongoDB; the changes this
        // test made must all be there, in order.
        let wanted = [
            ("users", ChangeOp::Insert, "u1".to_owned()),
            ("users", ChangeOp::Insert, "u2".to_owned()),
            ("follows", ChangeOp::Insert, "u1/u2".to_owned()),
            ("posts", ChangeOp::Insert, post.id.to_string()),
            ("users", ChangeOp::Update, "u1".to_owned()),
            ("follows", ChangeOp::Delete, "u1/u2".to_owned()),
            ("posts", ChangeOp::Delete, post.id.to_string()),
        ];
        let mut next = 0;
        for change in &changes {
            if next < wanted.len() {
                let (collection, op, key) = &wanted[next];
                if change.collection == *collection && change.op == *op && change.key == *key {
                    next += 1;
                }
            }
        }
        assert_eq!(
            next,
            wanted.len(),
            "{kind:?}: missing or out of order: {changes:#?}"
        );
        let created = changes.iter().find(|c| c.collection == "posts").unwrap();
        assert_eq!(created.document.as_ref().unwrap()["text"], "hello");
        let renamed = changes.iter().find(|c| {
            c.op == ChangeOp::Update
                && c.key == "u1"
                && c.document
                    .as_ref()
                    .is_some_and(|d| d["display_name"] == "Ursula")
        });
        assert!(
            renamed.is_some(),
            "{kind:?}: the rename carries the document after the change"
        );
        let positions: HashSet<_> = changes.iter().map(|c| c.position.clone()).collect();
        assert_eq!(positions.len(), changes.len(), "positions are distinct");

        // Resuming from the end yields nothing new.
        assert!(
            store
                .change_feed
                .changes(position.as_ref(), 10)
                .await
                .unwrap()
                .is_empty()
        );

        // Trimming loses history for readers behind it, with a distinct error.
        let first = changes[0].position.clone();
        let dropped = store
            .change_feed
            .trim_changes(now_ms() + 1_000, now_ms() + 1_000)
            .await
            .unwrap();
        if dropped == 0 {
            eprintln!(
                "{kind:?}: history-lost check SKIPPED: this backend's retention is the server's (oplog size)"
            );
            continue;
        }
        assert!(matches!(
            store.change_feed.changes(Some(&first), 10).await,
            Err(StoreError::HistoryLost(_))
        ));
        assert!(
            store
                .change_feed
                .changes(position.as_ref(), 10)
                .await
                .unwrap()
                .is_empty(),
            "a reader at the head keeps going"
        );
    }
}
