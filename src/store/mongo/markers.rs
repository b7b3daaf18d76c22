//! Reading positions on MongoDB: `markers {_id: "user/timeline", user, timeline,
//! last_read_id, version, updated_at}`, one document per user and timeline, sharded on
//! `user`, which every read and write carries. A write is one `findOneAndUpdate` upsert
//! that sets the id and `$inc`s the version, returning the document after it.

use async_trait::async_trait;
use mongodb::bson::{Document, doc};
use mongodb::options::ReturnDocument;

use super::{MongoStore, all, db_error, int, is_duplicate_key};
use crate::domain::markers::{Marker, MarkerTimeline};
use crate::store::{MarkerStore, StoreError, StoreResult};

pub(super) const MARKERS: &str = "markers";

fn key(user: &str, timeline: MarkerTimeline) -> String {
    format!("{user}/{timeline}")
}

fn marker_from(doc: &Document) -> StoreResult<Marker> {
    let name = doc.get_str("timeline").unwrap_or_default();
    let timeline = MarkerTimeline::parse(name).ok_or_else(|| {
        StoreError::Backend(anyhow::anyhow!("a marker of an unknown timeline {name:?}"))
    })?;
    Ok(Marker {
        timeline,
        last_read_id: doc.get_str("last_read_id").unwrap_or_default().to_owned(),
        version: int(doc, "version").max(0) as u64,
        updated_at_ms: int(doc, "updated_at"),
    })
}

#[async_trait]
impl MarkerStore for MongoStore {
    async fn markers(&self, user: &str, timelines: &[MarkerTimeline]) -> StoreResult<Vec<Marker>> {
        if timelines.is_empty() {
            return Ok(Vec::new());
        }
        let ids: Vec<String> = timelines.iter().map(|t| key(user, *t)).collect();
        let docs = all(self
            .collection(MARKERS)
            .find(doc! { "_id": { "$in": ids }, "user": user }))
        .await?;
        let mut markers = docs
            .iter()
            .map(marker_from)
            .collect::<StoreResult<Vec<_>>>()?;
        markers.sort_by_key(|m| m.timeline);
        Ok(markers)
    }

    async fn set_marker(
        &self,
        user: &str,
        timeline: MarkerTimeline,
        last_read_id: &str,
        now_ms: i64,
    ) -> StoreResult<Marker> {
        let filter = doc! { "_id": key(user, timeline), "user": user };
        let update = doc! {
            "$set": { "last_read_id": last_read_id, "updated_at": now_ms },
            "$inc": { "version": 1_i64 },
            "$setOnInsert": { "timeline": timeline.as_str() },
        };
        // Two first writes racing: one inserts, the other may meet its `_id` (E11000)
        // and then finds the document to update; once is enough.
        for _ in 0..2 {
            let written = self
                .collection(MARKERS)
                .find_one_and_update(filter.clone(), update.clone())
                .upsert(true)
                .return_document(ReturnDocument::After)
                .await;
            match written {
                Ok(Some(doc)) => return marker_from(&doc),
                Ok(None) => {
                    return Err(StoreError::Backend(anyhow::anyhow!(
                        "an upsert of marker {} returned nothing",
                        key(user, timeline)
                    )));
                }
                Err(error) if is_duplicate_key(&error) => continue,
                Err(error) => return Err(db_error(error)),
            }
        }
        Err(StoreError::Backend(anyhow::anyhow!(
            "marker {} met a duplicate key twice",
            key(user, timeline)
        )))
    }
}
