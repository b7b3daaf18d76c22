//! Reposts in the store: each one and its undoing a change-feed entry carrying the
//! repost, a repeated repost writing nothing, and the port's reads by post and by
//! reposter.

use socialite::domain::{ChangeOp, PostId, REPOSTS, now_ms};
use socialite::store::Store;

use super::{count, users};
use crate::common::{fresh_store, kinds};

pub(super) async fn all_changes(store: &Store) -> Vec<socialite::domain::Change> {
    let mut changes = Vec::new();
    let mut position = None;
    for _ in 0..200 {
        let batch = store
            .change_feed
            .changes(position.as_ref(), 50)
            .await
            .unwrap();
        if batch.is_empty() {
            break;
        }
        position = Some(batch.last().unwrap().position.clone());
        changes.extend(batch);
    }
    changes
}

#[tokio::test]
async fn reposts_are_change_feed_entries_and_answer_by_post_and_reposter() {
    for kind in kinds("reposts_are_change_feed_entries_and_answer_by_post_and_reposter") {
        let t = fresh_store(kind).await;
        let store = &t.store;
        users(store, &["ann", "bob", "cat", "dan"]).await;
        let original = store
            .content
            .insert_post("ann", "hello", None, now_ms())
            .await
            .unwrap()
            .post;
        let by_bob = store
            .reposts
            .repost("bob", original.id, now_ms())
            .await
            .unwrap()
            .repost;
        let by_cat = store
            .reposts
            .repost("cat", original.id, now_ms())
            .await
            .unwrap()
            .repost;
        assert!(original.id < by_bob.id && by_bob.id < by_cat.id);
        assert_eq!(by_bob.post.author, "ann");
        let again = store
            .reposts
            .repost("bob", original.id, now_ms())
            .await
            .unwrap();
        assert!(!again.created);
        assert_eq!(again.repost, by_bob, "{kind:?}");

        // By post, reposter and bound, in one query.
        let mut found = store
            .reposts
            .reposts_of(
                &[original.id],
                &["bob".into(), "cat".into(), "dan".into()],
                by_cat.id,
            )
            .await
            .unwrap();
        assert_eq!(
            found,
            vec![by_bob.clone()],
            "{kind:?}: strictly below the bound"
        );
        found = store
            .reposts
            .reposts_of(
                &[original.id],
                &["cat".into()],
                PostId::from_bytes([0xff; 12]),
            )
            .await
            .unwrap();
        assert_eq!(
            found,
            vec![by_cat.clone()],
            "{kind:?}: only the reposters asked"
        );
        assert_eq!(
            store.reposts.reposts_by("bob", None, 10).await.unwrap(),
            vec![by_bob.clone()]
        );

        assert_eq!(
            store.reposts.unrepost("bob", original.id).await.unwrap(),
            Some(by_bob.clone())
        );
        assert_eq!(
            store.reposts.unrepost("bob", original.id).await.unwrap(),
            None
        );
        assert_eq!(count(store, original.id).await, 1, "{kind:?}");

        let changes = all_changes(store).await;
        let of = |op: ChangeOp, id: PostId| {
            changes
                .iter()
                .find(|c| c.collection == REPOSTS && c.op == op && c.key == id.to_string())
                .and_then(|c| c.document.clone())
                .unwrap_or_else(|| panic!("{kind:?}: no {op:?} of {id}: {changes:#?}"))
        };
        for (op, repost) in [
            (ChangeOp::Insert, &by_bob),
            (ChangeOp::Insert, &by_cat),
            (ChangeOp::Delete, &by_bob),
        ] {
            let doc = of(op, repost.id);
            let parsed: socialite::domain::Repost = serde_json::from_value(doc).unwrap();
            assert_eq!(&parsed, repost, "{kind:?} {op:?}");
        }
        let inserts = changes
            .iter()
            .filter(|c| c.collection == REPOSTS && c.op == ChangeOp::Insert)
            .count();
        assert_eq!(inserts, 2, "{kind:?}: the repeated repost wrote nothing");
    }
}
