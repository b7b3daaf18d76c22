//! Claims on the embedded store: none. A reply moves its parent's `replies_count`, and a
//! repost its original's `reposts_count`, in the source's own transaction, so no writer
//! can die between the two and nothing is ever left to settle; an idempotency key and
//! its post are stored in one transaction too, so no deleted post is ever stored again.

use async_trait::async_trait;

use super::EmbeddedStore;
use crate::domain::PostId;
use crate::store::StoreResult;
use crate::store::claims::{ClaimStore, Claimed};

#[async_trait]
impl ClaimStore for EmbeddedStore {
    async fn settle_claims(&self, _sources: &[Claimed]) -> StoreResult<u64> {
        Ok(0)
    }

    async fn settle_deleted_posts(&self, _posts: &[PostId]) -> StoreResult<u64> {
        Ok(0)
    }
}
