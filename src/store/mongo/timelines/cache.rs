//! Pushes into `timeline_cache` documents, idempotent by post id: `$push` does not
//! deduplicate, and a fill, a push and a stale rebuild can all carry the same post.
//!
//! Every write keeps the coverage rule of `feed::cache` in its own filter: a cache
//! being built (`ready: false`) takes everything; a ready one takes an entry below its
//! oldest only while `complete`; a write that may drop an entry clears `complete`.

use std::collections::HashSet;

use mongodb::bson::{Document, doc};

use super::buckets::held_ids;
use super::entry_doc;
use crate::domain::{PostId, TimelineEntry};
use crate::store::mongo::{MongoStore, db_error, oid};
use crate::store::timelines::CacheMerge;
use crate::store::{StoreError, StoreResult};

/// The cache document's revision, moved by every write that adds or removes entries,
/// so that a read-then-write (`cache_merge`) can guard on the exact state it read. Its
/// length and oldest entry are not enough: a removal and a push between the read and
/// the write keep both, and the write would then leave out an entry it read as held.
pub(in crate::store::mongo) const REV: &str = "rev";

/// Users per multi-document cache update.
const CACHE_BATCH: usize = 500;
/// Merges in a row that lose to a concurrent push of one of their posts.
const MAX_MERGE_ATTEMPTS: usize = 16;

/// `$push` of `entries` keeping the newest `cache_size`, as a sorted, capped array.
fn push(entries: &[TimelineEntry], cache_size: u32) -> Document {
    let each: Vec<Document> = entries.iter().map(entry_doc).collect();
    doc! { "c": { "$each": each, "$sort": { "_id": 1 }, "$slice": -i64::from(cache_size) } }
}

/// The caches that may take `id`: being built, complete, or holding an older entry.
fn takes(id: PostId) -> Document {
    doc! { "$or": [
        { "ready": false },
        { "complete": true },
        { "c._id": { "$lt": oid(id) } },
    ] }
}

impl MongoStore {
    /// One entry into the caches of `users`, matching only caches that exist
    /// (`upsert: false`), do not hold the entry yet and may take it. Returns how many
    /// caches took it.
    ///
    /// Two `updateMany` per batch, since a classic update cannot tell whether its
    /// `$slice` dropped an entry: first into the caches with room (no trim, so
    /// completeness stands), then into the rest, clearing `complete`. A cache that only
    /// gained room between the two is marked incomplete needlessly, which is safe.
    pub(super) async fn cache_push_one(
        &self,
        users: &[String],
        entry: &TimelineEntry,
        cache_size: u32,
    ) -> StoreResult<u64> {
        let push = push(std::slice::from_ref(entry), cache_size);
        let roomy = doc! { "$push": push.clone(), "$inc": { REV: 1 } };
        let trimming = doc! { "$push": push, "$set": { "complete": false }, "$inc": { REV: 1 } };
        let room = format!("c.{}", cache_size.saturating_sub(1));
        let mut written = 0;
        for batch in users.chunks(CACHE_BATCH) {
            let mut filter = doc! { "_id": { "$in": batch }, "c._id": { "$ne": oid(entry.id) } };
            filter.extend(takes(entry.id));
            let mut with_room = filter.clone();
            with_room.insert(&room, doc! { "$exists": false });
            for (filter, update) in [(with_room, &roomy), (filter, &trimming)] {
                let result = self
                    .cache_coll()
                    .update_many(filter, update.clone())
                    .await
                    .map_err(db_error)?;
                written += result.matched_count;
            }
        }
        Ok(written)
    }

    /// [`Self::cache_merge`] into each of `users`' caches; how many took an entry.
    pub(super) async fn cache_merges(
        &self,
        users: &[String],
        entries: &[TimelineEntry],
        cache_size: u32,
        merge: CacheMerge,
    ) -> StoreResult<u64> {
        let mut written = 0;
        for user in users {
            let merged = self.cache_merge(user, entries, cache_size, merge).await?;
            written += u64::from(merged.is_some_and(|n| n > 0));
        }
        Ok(written)
    }

    /// Several entries into `user`'s cache, if it exists, keeping the coverage rule and
    /// what `merge` says: a fill makes it ready, a cut read ends completeness.
    /// `None` when there is no cache, otherwise how many entries were new.
    ///
    /// Reads the cache, then pushes only the missing entries it may take, guarded by the
    /// state the decision rests on: the same revision (see [`REV`]), readiness,
    /// completeness, length and oldest entry, and none of the entries present. A
    /// concurrent write fails the guard, and the merge reads again. Chosen over one
    /// guarded update per entry, which rewrites the whole array once per entry (a fill
    /// of 50 is 50 rewrites and round trips).
    async fn cache_merge(
        &self,
        user: &str,
        entries: &[TimelineEntry],
        cache_size: u32,
        merge: CacheMerge,
    ) -> StoreResult<Option<usize>> {
        for _ in 0..MAX_MERGE_ATTEMPTS {
            let found = self
                .cache_coll()
                .find_one(doc! { "_id": user })
                .projection(doc! { "c._id": 1, "ready": 1, "complete": 1, REV: 1 })
                .await
                .map_err(db_error)?;
            let Some(found) = found else {
                return Ok(None);
            };
            let ready = found.get_bool("ready").unwrap_or(false);
            let complete = found.get_bool("complete").unwrap_or(false);
            let rev = found.get(REV).cloned();
            let held = held_ids(std::slice::from_ref(&found));
            let oldest = held.iter().min().copied();
            let may_take =
                |id: PostId| !ready || complete || oldest.is_some_and(|oldest| id > oldest);
            let mut seen: HashSet<PostId> = held.iter().copied().collect();
            let fresh: Vec<TimelineEntry> = entries
                .iter()
                .filter(|e| may_take(e.id) && seen.insert(e.id))
                .cloned()
                .collect();
            let trims = held.len() + fresh.len() > cache_size as usize;
            let mut update = Document::new();
            if !fresh.is_empty() {
                update.insert("$push", push(&fresh, cache_size));
            }
            let mut set = Document::new();
            if trims || (merge.cut() && complete) {
                set.insert("complete", false);
            }
            if merge.readies() {
                set.insert("ready", true);
            }
            if !set.is_empty() {
                update.insert("$set", set);
            }
            if update.is_empty() {
                return Ok(Some(0));
            }
            update.insert("$inc", doc! { REV: 1 });
            // Between the read the decision rests on and the write it guards.
            crate::faults::point("cache.merge").await;
            let fresh_ids: Vec<_> = fresh.iter().map(|e| oid(e.id)).collect();
            let mut guarded = doc! {
                "_id": user,
                "ready": ready,
                "complete": if complete { doc! { "$eq": true } } else { doc! { "$ne": true } },
                "c": { "$size": held.len() as i64 },
                "c._id": { "$nin": fresh_ids },
            };
            if let Some(oldest) = oldest {
                guarded.insert("c.0._id", oid(oldest));
            }
            match rev {
                Some(rev) => guarded.insert(REV, rev),
                None => guarded.insert(REV, doc! { "$exists": false }),
            };
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
