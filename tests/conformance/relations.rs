//! Blocks at the port, read in a batch: `blocks_among` answers exactly the pairs whose
//! first user blocks the second, in one direction, on every backend.

use socialite::domain::{NewUser, now_ms};

use crate::common::{fresh_store, kinds};

#[tokio::test]
async fn blocks_among_answers_the_standing_blocks_of_the_pairs_asked() {
    for kind in kinds("blocks_among_answers_the_standing_blocks_of_the_pairs_asked") {
        let t = fresh_store(kind).await;
        let store = &t.store;
        for id in ["ann", "bob", "cat"] {
            let user = NewUser {
                id: id.into(),
                display_name: id.into(),
                created_at_ms: now_ms(),
            };
            store.users.create_user(&user).await.unwrap();
        }
        let relations = &store.relations;
        relations.block("ann", "bob", now_ms()).await.unwrap();
        relations.block("cat", "ann", now_ms()).await.unwrap();
        relations.block("bob", "cat", now_ms()).await.unwrap();
        relations.unblock("bob", "cat").await.unwrap();
        let pair = |u: &str, o: &str| (u.to_owned(), o.to_owned());
        let asked = [
            pair("ann", "bob"),
            pair("bob", "ann"), // the other direction: no block
            pair("cat", "ann"),
            pair("bob", "cat"), // undone
            pair("ann", "zed"), // an unknown user
        ];
        let mut standing = relations.blocks_among(&asked).await.unwrap();
        standing.sort();
        assert_eq!(
            standing,
            vec![pair("ann", "bob"), pair("cat", "ann")],
            "{kind:?}"
        );
        assert!(
            relations.blocks_among(&[]).await.unwrap().is_empty(),
            "{kind:?}"
        );
    }
}
