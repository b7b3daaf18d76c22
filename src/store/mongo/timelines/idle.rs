//! Idle caches on MongoDB (see `TimelineStore::drop_idle_caches`): a cache document's
//! `read` records when its owner last read it, coarsely, and the sweep drops the
//! documents unread for `feed.cache_idle`.
//!
//! The sweep finds candidates through the `{ready, read}` index, then deletes each by
//! its `_id` (the shard key) with the age and readiness in the delete's own filter: a
//! read stamp or a rebuild that lands between the find and the delete makes it match
//! nothing. A push or a merge racing the delete either lands before (and goes with the
//! document) or matches no document (pushes never upsert); the next read builds the
//! cache again from the sources. A cache being built (`ready: false`) is never dropped.
//! Documents written before `read` existed get it at the first sweep that finds them,
//! so they are kept a whole `feed.cache_idle` from then.

use futures::{StreamExt, TryStreamExt};
use mongodb::IndexModel;
use mongodb::bson::{Document, doc};

use super::FANOUT_CONCURRENCY;
use crate::store::StoreResult;
use crate::store::mongo::{MongoStore, db_error, index};

/// The sweep's index: ready caches by last read.
pub(super) fn read_index() -> IndexModel {
    index(doc! { "ready": 1, "read": 1 }, false)
}

impl MongoStore {
    /// `TimelineStore::cache_touch`.
    pub(super) async fn touch_cache(&self, user: &str, now_ms: i64) -> StoreResult<()> {
        let filter = doc! {
            "_id": user,
            "$or": [{ "read": { "$lt": now_ms } }, { "read": { "$exists": false } }],
        };
        self.cache_coll()
            .update_one(filter, doc! { "$set": { "read": now_ms } })
            .await
            .map_err(db_error)?;
        Ok(())
    }

    /// `TimelineStore::drop_idle_caches`.
    pub(super) async fn drop_idle(
        &self,
        now_ms: i64,
        idle_ms: i64,
        limit: usize,
    ) -> StoreResult<u64> {
        let cutoff = now_ms.saturating_sub(idle_ms);
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let coll = self.cache_coll();
        let unstamped = self
            .cache_ids(doc! { "ready": true, "read": null }, limit)
            .await?;
        futures::stream::iter(unstamped)
            .map(|id| {
                let filter = doc! { "_id": id, "read": { "$exists": false } };
                let coll = coll.clone();
                async move {
                    coll.update_one(filter, doc! { "$set": { "read": now_ms } })
                        .await
                        .map_err(db_error)
                }
            })
            .buffer_unordered(FANOUT_CONCURRENCY)
            .try_collect::<Vec<_>>()
            .await?;
        let idle = self
            .cache_ids(doc! { "ready": true, "read": { "$lt": cutoff } }, limit)
            .await?;
        let deleted: Vec<u64> = futures::stream::iter(idle)
            .map(|id| {
                let filter = doc! { "_id": id, "ready": true, "read": { "$lt": cutoff } };
                let coll = coll.clone();
                async move {
                    let result = coll.delete_one(filter).await.map_err(db_error)?;
                    StoreResult::Ok(result.deleted_count)
                }
            })
            .buffer_unordered(FANOUT_CONCURRENCY)
            .try_collect()
            .await?;
        Ok(deleted.iter().sum())
    }

    /// At most `limit` ids of cache documents matching `filter`, oldest read first.
    async fn cache_ids(&self, filter: Document, limit: i64) -> StoreResult<Vec<String>> {
        let docs: Vec<Document> = self
            .cache_coll()
            .find(filter)
            .sort(doc! { "ready": 1, "read": 1 })
            .projection(doc! { "_id": 1 })
            .limit(limit)
            .await
            .map_err(db_error)?
            .try_collect()
            .await
            .map_err(db_error)?;
        Ok(docs
            .iter()
            .filter_map(|d| d.get_str("_id").ok().map(str::to_owned))
            .collect())
    }
}
