//! Pushes into `timeline_cache` documents, idempotent by post id: `$push` does not
//! deduplicate, and a fill, a push and a stale rebuild can all carry the same post.

use std::collections::HashSet;

use mongodb::bson::{Document, doc};

use super::buckets::held_ids;
use super::entry_doc;
use crate::domain::{PostId, TimelineEntry};
use crate::store::mongo::{MongoStore, all, db_error, oid};
use crate::store::{StoreError, StoreResult};

/// Users per multi-document cache update.
const CACHE_BATCH: usize = 500;
/// Merges in a row that lose to a concurrent push of one of their posts.
const MAX_MERGE_ATTEMPTS: usize = 16;

/// `$push` of `entries` keeping the newest `cache_size`, as a sorted, capped array.
fn push(entries: &[TimelineEntry], cache_size: u32) -> Document {
    let each: Vec<Document> = entries.iter().map(entry_doc).collect();
    doc! { "c": { "$each": each, "$sort": { "_id": 1 }, "$slice": -i64::from(cache_size) } }
}

impl MongoStore {
    /// One entry into the caches of `users`, one `updateMany` per batch, matching only
    /// caches that exist (`upsert: false`) and do not hold the entry yet. Returns how
    /// many caches took it.
    pub(super) async fn cache_push_one(
        &self,
        users: &[String],
        entry: &TimelineEntry,
        cache_size: u32,
    ) -> StoreResult<u64> {
        let update = doc! { "$push": push(std::slice::from_ref(entry), cache_size) };
        let mut written = 0;
        for batch in users.chunks(CACHE_BATCH) {
            let result = self
                .cache_coll()
                .update_many(
                    doc! { "_id": { "$in": batch }, "c._id": { "$ne": oid(entry.id) } },
                    update.clone(),
                )
                .await
                .map_err(db_error)?;
            written += result.matched_count;
        }
        Ok(written)
    }

    /// Several entries into `user`'s cache, if it exists and matches `condition`,
    /// setting `set` as well. `None` when there is no such cache, otherwise how many
    /// entries were new.
    ///
    /// Reads the ids the cache holds, then pushes only the missing entries, guarded by
    /// `c._id` `$nin` those very entries; a concurrent push of one of them fails the
    /// guard, and the merge reads again. Chosen over one guarded update per entry, which
    /// rewrites the whole array once per entry (a fill of 50 is 50 rewrites and round
    /// trips), and over a version field, which every fan-out push would have to bump,
    /// so that a merge into a busy cache would keep losing to unrelated posts.
    pub(super) async fn cache_merge(
        &self,
        user: &str,
        entries: &[TimelineEntry],
        cache_size: u32,
        condition: Document,
        set: Option<Document>,
    ) -> StoreResult<Option<usize>> {
        let mut filter = doc! { "_id": user };
        filter.extend(condition);
        for _ in 0..MAX_MERGE_ATTEMPTS {
            let found = all(self
                .cache_coll()
                .find(filter.clone())
                .projection(doc! { "c._id": 1 }))
            .await?;
            if found.is_empty() {
                return Ok(None);
            }
            let held: HashSet<PostId> = held_ids(&found).into_iter().collect();
            let mut seen = held;
            let fresh: Vec<TimelineEntry> = entries
                .iter()
                .filter(|e| seen.insert(e.id))
                .cloned()
                .collect();
            let mut update = Document::new();
            if !fresh.is_empty() {
                update.insert("$push", push(&fresh, cache_size));
            }
            if let Some(set) = &set {
                update.insert("$set", set.clone());
            }
            if update.is_empty() {
                return Ok(Some(0));
            }
            let mut guarded = filter.clone();
            let fresh_ids: Vec<_> = fresh.iter().map(|e| oid(e.id)).collect();
            guarded.insert("c._id", doc! { "$nin": fresh_ids });
            let result = self
                .cache_coll()
                .update_one(guarded, update)
                .await
                .map_err(db_error)?;
            if result.matched_count > 0 {
                return Ok(Some(fresh.len()));
            }
        }
        Err(StoreError::Backend(anyhow::anyhow!(
            "merging into the cache of {user} lost {MAX_MERGE_ATTEMPTS} races in a row"
        )))
    }
}
