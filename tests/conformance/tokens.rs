//! API tokens at the port: found by hash, unique by hash and by (user, id), revoked by
//! (user, id).

use socialite::store::StoreError;

use crate::common::{TestStore, fresh_store, kinds};

/// API tokens: found by hash, unique by hash and by (user, id), revoked by (user, id).
#[tokio::test]
async fn tokens_are_found_by_hash_and_revoked_by_id() {
    use socialite::store::TokenRecord;
    for kind in kinds("tokens_are_found_by_hash_and_revoked_by_id") {
        let TestStore { store, .. } = &fresh_store(kind).await;
        let record = |id: &str, user: &str| TokenRecord {
            id: id.into(),
            user: user.into(),
            created_at_ms: 1_700_000_000_000,
        };
        let (one, two, three) = ([1u8; 32], [2u8; 32], [3u8; 32]);
        store
            .tokens
            .insert_token(&one, &record("t1", "ann"))
            .await
            .unwrap();
        store
            .tokens
            .insert_token(&two, &record("t2", "ann"))
            .await
            .unwrap();
        assert!(
            matches!(
                store.tokens.insert_token(&one, &record("t9", "bo")).await,
                Err(StoreError::Conflict(_))
            ),
            "{kind:?}: a hash is stored once"
        );
        assert!(
            matches!(
                store
                    .tokens
                    .insert_token(&three, &record("t1", "ann"))
                    .await,
                Err(StoreError::Conflict(_))
            ),
            "{kind:?}: an id is unique per user"
        );
        store
            .tokens
            .insert_token(&three, &record("t1", "bo"))
            .await
            .unwrap();
        assert_eq!(
            store.tokens.token_by_hash(&one).await.unwrap(),
            Some(record("t1", "ann")),
            "{kind:?}"
        );
        assert_eq!(store.tokens.token_by_hash(&[9; 32]).await.unwrap(), None);
        assert!(!store.tokens.revoke_token("ann", "nope").await.unwrap());
        assert!(store.tokens.revoke_token("ann", "t1").await.unwrap());
        assert!(
            !store.tokens.revoke_token("ann", "t1").await.unwrap(),
            "once"
        );
        assert_eq!(store.tokens.token_by_hash(&one).await.unwrap(), None);
        assert_eq!(
            store.tokens.token_by_hash(&three).await.unwrap(),
            Some(record("t1", "bo")),
            "{kind:?}: another user's token of the same id stays"
        );
        assert!(store.tokens.token_by_hash(&two).await.unwrap().is_some());
    }
}
