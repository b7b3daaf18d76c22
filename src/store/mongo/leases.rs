//! Leases on MongoDB: `worker_leases` `{_id: name, holder, version, expires_at,
//! position}`. Each call is one or a few single-document atomic commands; the filter on
//! `{holder, version}` is what fences a commit.

use async_trait::async_trait;
use futures::TryStreamExt;
use mongodb::bson::{Bson, Document, doc};
use mongodb::options::ReturnDocument;

use super::{MongoStore, db_error, int, is_duplicate_key};
use crate::domain::ChangePosition;
use crate::store::leases::{Lease, LeaseStore, initial_version};
use crate::store::{StoreError, StoreResult};

pub(super) const LEASES: &str = "worker_leases";

fn lease_from(doc: &Document) -> StoreResult<Lease> {
    Ok(Lease {
        name: doc
            .get_str("_id")
            .map_err(|e| StoreError::Backend(e.into()))?
            .to_owned(),
        holder: doc.get_str("holder").ok().map(str::to_owned),
        version: int(doc, "version").max(0) as u64,
        expires_at_ms: int(doc, "expires_at"),
        position: doc
            .get_str("position")
            .ok()
            .map(|p| ChangePosition(p.to_owned())),
    })
}

impl MongoStore {
    /// `findOneAndUpdate` returning the document after the update, or `None`.
    async fn lease_update(&self, filter: Document, update: Document) -> StoreResult<Option<Lease>> {
        self.collection(LEASES)
            .find_one_and_update(filter, update)
            .return_document(ReturnDocument::After)
            .await
            .map_err(db_error)?
            .as_ref()
            .map(lease_from)
            .transpose()
    }

    async fn held_update(
        &self,
        name: &str,
        holder: &str,
        version: u64,
        set: Document,
    ) -> StoreResult<bool> {
        let updated = self
            .collection(LEASES)
            .update_one(
                doc! { "_id": name, "holder": holder, "version": version as i64 },
                doc! { "$set": set },
            )
            .await
            .map_err(db_error)?;
        Ok(updated.matched_count == 1)
    }
}

#[async_trait]
impl LeaseStore for MongoStore {
    /// Refresh, take-over, create: three plain conditional commands rather than one
    /// pipeline update (which the test stand-in lacks). Each is atomic on its own, and a
    /// lost race at any step only means another process holds the lease now.
    async fn acquire(
        &self,
        name: &str,
        holder: &str,
        now_ms: i64,
        ttl_ms: i64,
    ) -> StoreResult<Lease> {
        let expires = now_ms + ttl_ms;
        let mine = doc! { "_id": name, "holder": holder };
        if let Some(lease) = self
            .lease_update(mine, doc! { "$set": { "expires_at": expires } })
            .await?
        {
            return Ok(lease);
        }
        let free = doc! { "_id": name, "$or": [
            { "holder": Bson::Null },
            { "expires_at": { "$lte": now_ms } },
        ] };
        let take_over = doc! {
            "$set": { "holder": holder, "expires_at": expires },
            "$inc": { "version": 1_i64 },
        };
        if let Some(lease) = self.lease_update(free, take_over).await? {
            return Ok(lease);
        }
        let created = doc! {
            "_id": name, "holder": holder, "version": initial_version(now_ms) as i64,
            "expires_at": expires, "position": Bson::Null,
        };
        match self.collection(LEASES).insert_one(created.clone()).await {
            Ok(_) => lease_from(&created),
            // Another process created or holds it: report the lease as it stands.
            Err(error) if is_duplicate_key(&error) => {
                let current = self
                    .collection(LEASES)
                    .find_one(doc! { "_id": name })
                    .await
                    .map_err(db_error)?;
                current
                    .as_ref()
                    .map(lease_from)
                    .transpose()?
                    .ok_or_else(|| StoreError::NotFound(format!("lease {name}")))
            }
            Err(error) => Err(db_error(error)),
        }
    }

    async fn refresh(
        &self,
        name: &str,
        holder: &str,
        version: u64,
        now_ms: i64,
        ttl_ms: i64,
    ) -> StoreResult<bool> {
        self.held_update(
            name,
            holder,
            version,
            doc! { "expires_at": now_ms + ttl_ms },
        )
        .await
    }

    async fn commit(
        &self,
        name: &str,
        holder: &str,
        version: u64,
        position: &ChangePosition,
        now_ms: i64,
        ttl_ms: i64,
    ) -> StoreResult<bool> {
        let set = doc! { "expires_at": now_ms + ttl_ms, "position": &position.0 };
        self.held_update(name, holder, version, set).await
    }

    async fn release(&self, name: &str, holder: &str, version: u64) -> StoreResult<()> {
        let set = doc! { "holder": Bson::Null, "expires_at": 0_i64 };
        self.held_update(name, holder, version, set).await?;
        Ok(())
    }

    async fn leases(&self) -> StoreResult<Vec<Lease>> {
        let docs: Vec<Document> = self
            .collection(LEASES)
            .find(doc! {})
            .sort(doc! { "_id": 1 })
            .await
            .map_err(db_error)?
            .try_collect()
            .await
            .map_err(db_error)?;
        docs.iter().map(lease_from).collect()
    }
}
