//! The activity worker's append on MongoDB: at most once per change, by a watermark in
//! the primary document.
//!
//! The primary document records `applied`, the feed order (`seq`) of the last change
//! whose activity it holds, and every write is conditional on `applied < seq` and sets it
//! in the same atomic command. That watermark is the fence the design asks for: a replay,
//! or a paused holder that lost its lease and comes back with an older change, matches
//! nothing. A stale holder can only write a change no newer holder has applied yet, and
//! then the newer holder's replay of it matches nothing: the entry is written once.
//!
//! An overflow entry takes two commands (reserve the overflow sequence, then write the
//! page). The reservation stores the entry as `pending` with its `seq`; a replay after a
//! crash between the two finds it there and finishes the page write, which is itself
//! guarded by the entry's sequence number, so nothing is lost or doubled.

use mongodb::bson::{Document, doc};
use mongodb::options::ReturnDocument;

use super::{entry, int};
use crate::domain::{Activity, ActivityLimits, ActivityType, Slot};
use crate::store::mongo::{MongoStore, db_error, is_duplicate_key};
use crate::store::{StoreError, StoreResult};

impl MongoStore {
    pub(super) async fn apply_activity_once(
        &self,
        seq: u64,
        user: &str,
        kind: ActivityType,
        reference: &str,
        ts_ms: i64,
        limits: ActivityLimits,
    ) -> StoreResult<Option<Activity>> {
        let head = self.head(user, limits).await?;
        let fixed = ActivityLimits {
            primary_limit: int(&head, "limit") as u32,
            page_size: int(&head, "pageSize").max(1) as u32,
        };
        let order = seq as i64;
        if let Ok(pending) = head.get_document("pending")
            && pending.get_i64("fseq").ok() == Some(order)
        {
            // A crash between reserving this entry's slot and writing its page.
            let oseq = u64::from(fixed.primary_limit) + int(&head, "overflowSeq") - 1;
            self.write_page(user, fixed, oseq, pending.clone()).await?;
            return Ok(None);
        }
        if head.get_i64("applied").unwrap_or(-1) >= order {
            return Ok(None);
        }
        let ts_ms = ts_ms.max(head.get_i64("last_ts").unwrap_or(0));
        let item = entry(kind, ts_ms, reference);
        let unapplied = doc! { "$not": { "$gte": order } };
        let activity = |seq| Activity {
            seq,
            kind,
            ts_ms,
            reference: reference.to_owned(),
        };
        if int(&head, "count") < u64::from(fixed.primary_limit) {
            let pushed = self
                .primary()
                .find_one_and_update(
                    doc! {
                        "_id": user, "applied": unapplied.clone(),
                        "count": { "$lt": i64::from(fixed.primary_limit) },
                    },
                    doc! {
                        "$push": { "activities": item.clone() },
                        "$inc": { "count": 1_i64 },
                        "$set": { "applied": order, "last_ts": ts_ms },
                    },
                )
                .return_document(ReturnDocument::After)
                .projection(doc! { "count": 1 })
                .await
                .map_err(db_error)?;
            if let Some(after) = pushed {
                return Ok(Some(activity(int(&after, "count") - 1)));
            }
        }
        let mut pending = item.clone();
        pending.insert("fseq", order);
        let reserved = self
            .primary()
            .find_one_and_update(
                doc! { "_id": user, "applied": unapplied },
                doc! {
                    "$inc": { "overflowSeq": 1_i64 },
                    "$set": {
                        "hasOverflow": true, "applied": order, "last_ts": ts_ms,
                        "pending": pending.clone(),
                    },
                },
            )
            .return_document(ReturnDocument::After)
            .projection(doc! { "overflowSeq": 1 })
            .await
            .map_err(db_error)?;
        // Nothing matched: another holder applied this change meanwhile.
        let Some(reserved) = reserved else {
            return Ok(None);
        };
        let oseq = u64::from(fixed.primary_limit) + int(&reserved, "overflowSeq") - 1;
        self.write_page(user, fixed, oseq, pending).await?;
        Ok(Some(activity(oseq)))
    }

    /// Puts entry `seq` on its page unless the page already has it.
    async fn write_page(
        &self,
        user: &str,
        fixed: ActivityLimits,
        seq: u64,
        mut item: Document,
    ) -> StoreResult<()> {
        let Slot::Page(page) = fixed.slot(seq) else {
            return Err(StoreError::Backend(anyhow::anyhow!(
                "overflow sequence {seq} maps to the primary"
            )));
        };
        item.remove("fseq");
        item.insert("seq", seq as i64);
        let created = item.get_i64("ts").unwrap_or_default();
        for _ in 0..8 {
            let written = self
                .pages()
                .update_one(
                    doc! { "user": user, "page": page as i64, "activities.seq": { "$ne": seq as i64 } },
                    doc! {
                        "$push": { "activities": item.clone() },
                        "$inc": { "count": 1_i64 },
                        "$setOnInsert": { "createdAt": created },
                    },
                )
                .upsert(true)
                .await;
            match written {
                Ok(_) => {
                    self.primary()
                        .update_one(
                            doc! { "_id": user },
                            doc! { "$max": { "overflowPages": page as i64 + 1 } },
                        )
                        .await
                        .map_err(db_error)?;
                    return Ok(());
                }
                // The page exists and already holds the entry (the guarded filter missed,
                // so the upsert tried an insert), or another first writer won the insert.
                Err(error) if is_duplicate_key(&error) => {
                    let present = self
                        .pages()
                        .find_one(doc! { "user": user, "page": page as i64, "activities.seq": seq as i64 })
                        .projection(doc! { "_id": 1 })
                        .await
                        .map_err(db_error)?;
                    if present.is_some() {
                        return Ok(());
                    }
                }
                Err(error) => return Err(db_error(error)),
            }
        }
        Err(StoreError::Backend(anyhow::anyhow!(
            "activity page {page} of {user} did not settle"
        )))
    }
}
