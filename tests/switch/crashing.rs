//! A bulk port whose timeline rebuild fails as a crash would, for the test of a
//! rebuild cut short.

use std::sync::Arc;

use async_trait::async_trait;
use socialite::store::bulk::{
    BulkStore, DeriveSettings, Derived, Exclusion, FollowRow, LikeRow, PostRow, RelationRow,
    RepostRow, Rows, StepReport, TimelineLayout, TokenRow, UserRow,
};
use socialite::store::{StoreError, StoreResult};

/// The bulk port, with a rebuild that stops as a crash would, before it built anything.
pub struct CrashingRebuild(pub Arc<dyn BulkStore>);

#[async_trait]
impl BulkStore for CrashingRebuild {
    async fn enter_serving(&self, holder: &str) -> StoreResult<Result<(), Exclusion>> {
        self.0.enter_serving(holder).await
    }
    async fn leave_serving(&self) -> StoreResult<()> {
        self.0.leave_serving().await
    }
    async fn begin_load(&self, at_ms: i64) -> StoreResult<Result<(), Exclusion>> {
        self.0.begin_load(at_ms).await
    }
    async fn load_in_progress(&self) -> StoreResult<Option<i64>> {
        self.0.load_in_progress().await
    }
    async fn insert_users(&self, rows: Rows<UserRow>) -> StoreResult<u64> {
        self.0.insert_users(rows).await
    }
    async fn insert_follows(&self, rows: Rows<FollowRow>) -> StoreResult<u64> {
        self.0.insert_follows(rows).await
    }
    async fn insert_posts(&self, rows: Rows<PostRow>) -> StoreResult<u64> {
        self.0.insert_posts(rows).await
    }
    async fn insert_likes(&self, rows: Rows<LikeRow>) -> StoreResult<u64> {
        self.0.insert_likes(rows).await
    }
    async fn insert_tokens(&self, rows: Rows<TokenRow>) -> StoreResult<u64> {
        self.0.insert_tokens(rows).await
    }
    async fn insert_relations(&self, rows: Rows<RelationRow>) -> StoreResult<u64> {
        self.0.insert_relations(rows).await
    }
    async fn insert_reposts(&self, rows: Rows<RepostRow>) -> StoreResult<u64> {
        self.0.insert_reposts(rows).await
    }
    async fn derive_all(
        &self,
        settings: &DeriveSettings,
        step: StepReport,
    ) -> StoreResult<Derived> {
        self.0.derive_all(settings, step).await
    }
    async fn derive_timelines(&self, _: &TimelineLayout, _: StepReport) -> StoreResult<Derived> {
        Err(StoreError::Backend(anyhow::anyhow!("killed mid-rebuild")))
    }
    async fn feed_record(&self) -> StoreResult<Option<String>> {
        self.0.feed_record().await
    }
    async fn record_feed(&self, record: &str) -> StoreResult<()> {
        self.0.record_feed(record).await
    }
    async fn set_positions_to_head(&self, change: &[&str], event: &[&str]) -> StoreResult<()> {
        self.0.set_positions_to_head(change, event).await
    }
    async fn finish_load(&self) -> StoreResult<()> {
        self.0.finish_load().await
    }
}
