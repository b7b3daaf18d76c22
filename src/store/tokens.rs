//! The tokens port: API tokens, stored by the SHA-256 of their value and never as the
//! value itself. A lookup goes by that hash through the primary key, so finding a token
//! takes the same path whatever its value; the caller compares nothing byte by byte.

use async_trait::async_trait;

use super::StoreResult;

/// A SHA-256 digest of a token's value.
pub type TokenHash = [u8; 32];

/// What is stored about a token besides its hash.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenRecord {
    /// Public id, unique per user, used to revoke it.
    pub id: String,
    pub user: String,
    pub created_at_ms: i64,
}

#[async_trait]
pub trait TokenStore: Send + Sync + 'static {
    /// Stores a token. `Conflict` when its hash, or its id for that user, is taken.
    async fn insert_token(&self, hash: &TokenHash, record: &TokenRecord) -> StoreResult<()>;
    /// The token whose value hashes to `hash`, if it exists and was not revoked.
    async fn token_by_hash(&self, hash: &TokenHash) -> StoreResult<Option<TokenRecord>>;
    /// Deletes `user`'s token `id`; `false` when there was no such token.
    async fn revoke_token(&self, user: &str, id: &str) -> StoreResult<bool>;
}
