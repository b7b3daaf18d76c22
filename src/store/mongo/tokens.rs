//! API tokens on MongoDB: `api_tokens` `{_id: hex SHA-256 of the token, user, token_id,
//! created_at}`; never the token itself.

use async_trait::async_trait;
use mongodb::bson::doc;

use super::{IndexSpec, MongoStore, db_error, index, insert_new, int};
use crate::store::tokens::{TokenHash, TokenRecord, TokenStore};
use crate::store::{StoreError, StoreResult};

pub(super) const TOKENS: &str = "api_tokens";

pub(super) fn indexes() -> Vec<IndexSpec> {
    vec![(TOKENS, index(doc! { "user": 1, "token_id": 1 }, true))]
}

#[async_trait]
impl TokenStore for MongoStore {
    async fn insert_token(&self, hash: &TokenHash, record: &TokenRecord) -> StoreResult<()> {
        let document = doc! {
            "_id": hex::encode(hash),
            "user": &record.user,
            "token_id": &record.id,
            "created_at": record.created_at_ms,
        };
        if insert_new(&self.collection(TOKENS), document, &[]).await? {
            Ok(())
        } else {
            Err(StoreError::Conflict(format!("token {}", record.id)))
        }
    }

    async fn token_by_hash(&self, hash: &TokenHash) -> StoreResult<Option<TokenRecord>> {
        let found = self
            .collection(TOKENS)
            .find_one(doc! { "_id": hex::encode(hash) })
            .await
            .map_err(db_error)?;
        Ok(found.map(|d| TokenRecord {
            id: d.get_str("token_id").unwrap_or_default().to_owned(),
            user: d.get_str("user").unwrap_or_default().to_owned(),
            created_at_ms: int(&d, "created_at"),
        }))
    }

    async fn revoke_token(&self, user: &str, id: &str) -> StoreResult<bool> {
        let deleted = self
            .collection(TOKENS)
            .delete_one(doc! { "user": user, "token_id": id })
            .await
            .map_err(db_error)?;
        Ok(deleted.deleted_count > 0)
    }
}
