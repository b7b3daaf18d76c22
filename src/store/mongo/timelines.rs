//! Materialised timelines on MongoDB: `timed_buckets` `{_id: {u, t}, n, mn, mx, c}`,
//! `sized_buckets` `{_id, u, s, n, mn, mx, c}` and `timeline_cache` `{_id: user, ready,
//! started, c}`, where each entry of `c` is `{_id, a, m}` embedded or `{_id, a}` linked.

use std::future::IntoFuture;

use async_trait::async_trait;
use mongodb::bson::{Document, doc, oid::ObjectId};

use super::{IndexSpec, MongoStore, all, db_error, index, int, is_duplicate_key, oid, post_id};
use crate::domain::{Bucket, BucketKind, CacheState, PostId, TimelineEntry, TimelineKind};
use crate::store::{StoreError, StoreResult, TimelineStore, in_follower_batches};

/// Fan-out writes in flight at once.
const FANOUT_CONCURRENCY: usize = 32;
/// Users per multi-document cache update.
const CACHE_BATCH: usize = 500;
/// Rollover attempts before a sized push gives up; each failed attempt means another
/// writer made progress, so this is only reached under pathological contention.
const MAX_ROLLOVER_ATTEMPTS: usize = 64;

/// `{_id, a, m}` when embedding, `{_id, a}` when linking.
fn entry_doc(entry: &TimelineEntry) -> Document {
    let mut doc = doc! { "_id": oid(entry.id), "a": &entry.author };
    if let Some(text) = &entry.text {
        doc.insert("m", text);
    }
    doc
}

fn entries_from(doc: &Document) -> StoreResult<Vec<TimelineEntry>> {
    let mut entries = Vec::new();
    for item in doc.get_array("c").map(|a| a.as_slice()).unwrap_or_default() {
        let Some(item) = item.as_document() else {
            continue;
        };
        entries.push(TimelineEntry {
            id: post_id(item.get("_id"))?,
            author: item.get_str("a").unwrap_or_default().to_owned(),
            text: item.get_str("m").ok().map(str::to_owned),
        });
    }
    entries.sort_unstable_by_key(|e| std::cmp::Reverse(e.id));
    Ok(entries)
}

/// The newest `limit` distinct entries below `before` of entries sorted newest first.
fn newest_below(
    mut entries: Vec<TimelineEntry>,
    before: Option<PostId>,
    limit: usize,
) -> Vec<TimelineEntry> {
    entries.dedup_by_key(|e| e.id);
    if let Some(before) = before {
        entries.retain(|e| e.id < before);
    }
    entries.truncate(limit);
    entries
}

fn bounds(entries: &[TimelineEntry]) -> Option<(ObjectId, ObjectId)> {
    let min = entries.iter().map(|e| e.id).min()?;
    let max = entries.iter().map(|e| e.id).max()?;
    Some((oid(min), oid(max)))
}

pub(super) fn indexes() -> Vec<IndexSpec> {
    vec![
        ("timed_buckets", index(doc! { "_id.u": 1, "mx": -1 }, false)),
        ("timed_buckets", index(doc! { "c._id": 1 }, false)),
        ("sized_buckets", index(doc! { "u": 1, "s": 1 }, true)),
        ("sized_buckets", index(doc! { "u": 1, "mx": -1 }, false)),
        ("sized_buckets", index(doc! { "c._id": 1 }, false)),
        ("timeline_cache", index(doc! { "c._id": 1 }, false)),
    ]
}

impl MongoStore {
    /// One entry into one user's sized buckets. Race-free because every step is a single
    /// atomic document operation: the push only matches a bucket with room (`n <
    /// size`), so no bucket ever passes its size; a new bucket is an insert guarded by the
    /// unique `{u, s}` index, so two writers that both saw a full bucket cannot both
    /// create bucket `s + 1` — the loser gets 11000 and retries the push, which now finds
    /// the winner's bucket. A new bucket is only opened after the newest one was seen
    /// full, so buckets fill in order. Each entry is written by exactly one successful
    /// operation, so nothing is lost or duplicated.
    async fn sized_push_one(
        &self,
        user: &str,
        entry: &TimelineEntry,
        size: u32,
    ) -> StoreResult<()> {
        let coll = self.bucket_coll(BucketKind::Sized);
        let id = oid(entry.id);
        for _ in 0..MAX_ROLLOVER_ATTEMPTS {
            let pushed = coll
                .find_one_and_update(
                    doc! { "u": user, "n": { "$lt": i64::from(size) } },
                    doc! {
                        "$push": { "c": entry_doc(entry) },
                        "$inc": { "n": 1_i64 },
                        "$min": { "mn": id },
                        "$max": { "mx": id },
                    },
                )
                .sort(doc! { "s": -1 })
                .projection(doc! { "_id": 1 })
                .await
                .map_err(db_error)?;
            if pushed.is_some() {
                return Ok(());
            }
            let newest = coll
                .find_one(doc! { "u": user })
                .sort(doc! { "s": -1 })
                .projection(doc! { "s": 1, "n": 1 })
                .await
                .map_err(db_error)?;
            // A writer that created the newest bucket after our push missed it has left
            // room: push again rather than open a bucket past a non-full one.
            if newest
                .as_ref()
                .is_some_and(|d| int(d, "n") < i64::from(size))
            {
                continue;
            }
            let next = newest.map(|d| int(&d, "s") + 1).unwrap_or(0);
            let bucket = doc! {
                "_id": ObjectId::new(), "u": user, "s": next, "n": 1_i64,
                "mn": id, "mx": id, "c": [entry_doc(entry)],
            };
            match coll.insert_one(bucket).await {
                Ok(_) => return Ok(()),
                Err(error) if is_duplicate_key(&error) => continue,
                Err(error) => return Err(db_error(error)),
            }
        }
        Err(StoreError::Backend(anyhow::anyhow!(
            "sized bucket rollover for {user} did not settle after {MAX_ROLLOVER_ATTEMPTS} attempts"
        )))
    }
}

#[async_trait]
impl TimelineStore for MongoStore {
    async fn timed_push(
        &self,
        users: &[String],
        key: i64,
        entries: &[TimelineEntry],
    ) -> StoreResult<()> {
        let Some((min, max)) = bounds(entries) else {
            return Ok(());
        };
        let coll = self.bucket_coll(BucketKind::Timed);
        let each: Vec<Document> = entries.iter().map(entry_doc).collect();
        let update = doc! {
            "$push": { "c": { "$each": each } },
            "$inc": { "n": entries.len() as i64 },
            "$min": { "mn": min },
            "$max": { "mx": max },
        };
        for batch in users.chunks(FANOUT_CONCURRENCY) {
            futures::future::try_join_all(batch.iter().map(|user| {
                coll.update_one(doc! { "_id": { "u": user, "t": key } }, update.clone())
                    .upsert(true)
                    .into_future()
            }))
            .await
            .map_err(db_error)?;
        }
        Ok(())
    }

    async fn sized_push(
        &self,
        users: &[String],
        entries: &[TimelineEntry],
        bucket_size: u32,
    ) -> StoreResult<()> {
        for batch in users.chunks(FANOUT_CONCURRENCY) {
            futures::future::try_join_all(batch.iter().map(|user| async move {
                for entry in entries {
                    self.sized_push_one(user, entry, bucket_size).await?;
                }
                StoreResult::Ok(())
            }))
            .await?;
        }
        Ok(())
    }

    async fn buckets(
        &self,
        kind: BucketKind,
        user: &str,
        before: Option<PostId>,
        skip: usize,
        limit: usize,
        per_bucket: usize,
    ) -> StoreResult<Vec<Bucket>> {
        let (mut filter, sort) = match kind {
            BucketKind::Timed => (doc! { "_id.u": user }, doc! { "mx": -1, "_id.t": -1 }),
            BucketKind::Sized => (doc! { "u": user }, doc! { "mx": -1, "s": -1 }),
        };
        if let Some(before) = before {
            filter.insert("mn", doc! { "$lt": oid(before) });
        }
        let docs = all(self
            .bucket_coll(kind)
            .find(filter)
            .sort(sort)
            .skip(skip as u64)
            .limit(limit as i64))
        .await?;
        docs.iter()
            .map(|doc| {
                let key = match kind {
                    BucketKind::Timed => doc
                        .get_document("_id")
                        .map(|id| int(id, "t"))
                        .unwrap_or_default(),
                    BucketKind::Sized => int(doc, "s"),
                };
                Ok(Bucket {
                    key,
                    pushes: int(doc, "n").max(0) as u64,
                    newest: post_id(doc.get("mx"))?,
                    entries: newest_below(entries_from(doc)?, before, per_bucket),
                })
            })
            .collect()
    }

    async fn cache_push(
        &self,
        users: &[String],
        entries: &[TimelineEntry],
        cache_size: u32,
    ) -> StoreResult<u64> {
        if entries.is_empty() {
            return Ok(0);
        }
        let each: Vec<Document> = entries.iter().map(entry_doc).collect();
        let update = doc! { "$push": { "c": {
            "$each": each, "$sort": { "_id": 1 }, "$slice": -i64::from(cache_size),
        } } };
        let mut written = 0;
        // `upsert: false`: only users who already have a cache get the entry.
        for batch in users.chunks(CACHE_BATCH) {
            let result = self
                .cache_coll()
                .update_many(doc! { "_id": { "$in": batch } }, update.clone())
                .await
                .map_err(db_error)?;
            written += result.matched_count;
        }
        Ok(written)
    }

    /// The author, then the followers in batches, each one `updateMany` that matches
    /// only existing caches.
    async fn cache_push_to_audience(
        &self,
        author: &str,
        entries: &[TimelineEntry],
        cache_size: u32,
    ) -> StoreResult<u64> {
        in_follower_batches(self, author, |batch| async move {
            self.cache_push(&batch, entries, cache_size).await
        })
        .await
    }

    async fn cache(&self, user: &str) -> StoreResult<Option<CacheState>> {
        let found = self
            .cache_coll()
            .find_one(doc! { "_id": user })
            .await
            .map_err(db_error)?;
        let Some(doc) = found else {
            return Ok(None);
        };
        Ok(Some(CacheState {
            ready: doc.get_bool("ready").unwrap_or(false),
            started_at_ms: int(&doc, "started"),
            entries: entries_from(&doc)?,
        }))
    }

    async fn cache_start(&self, user: &str, now_ms: i64) -> StoreResult<bool> {
        let result = self
            .cache_coll()
            .update_one(
                doc! { "_id": user },
                doc! { "$setOnInsert": { "ready": false, "started": now_ms, "c": [] } },
            )
            .upsert(true)
            .await
            .map_err(db_error)?;
        Ok(result.upserted_id.is_some())
    }

    async fn cache_fill(
        &self,
        user: &str,
        entries: &[TimelineEntry],
        cache_size: u32,
    ) -> StoreResult<()> {
        let each: Vec<Document> = entries.iter().map(entry_doc).collect();
        self.cache_coll()
            .update_one(
                doc! { "_id": user },
                doc! {
                    "$push": { "c": {
                        "$each": each, "$sort": { "_id": 1 }, "$slice": -i64::from(cache_size),
                    } },
                    "$set": { "ready": true },
                },
            )
            .await
            .map_err(db_error)?;
        Ok(())
    }

    async fn remove_author_entries(
        &self,
        kind: TimelineKind,
        user: &str,
        author: &str,
    ) -> StoreResult<()> {
        let pull = doc! { "$pull": { "c": { "a": author } } };
        let (coll, filter) = match kind {
            TimelineKind::Buckets(BucketKind::Timed) => (
                self.bucket_coll(BucketKind::Timed),
                doc! { "_id.u": user, "c.a": author },
            ),
            TimelineKind::Buckets(BucketKind::Sized) => (
                self.bucket_coll(BucketKind::Sized),
                doc! { "u": user, "c.a": author },
            ),
            TimelineKind::Cache => (self.cache_coll(), doc! { "_id": user }),
        };
        coll.update_many(filter, pull).await.map_err(db_error)?;
        Ok(())
    }

    async fn remove_post_entries(&self, kind: TimelineKind, post: PostId) -> StoreResult<()> {
        let coll = match kind {
            TimelineKind::Buckets(kind) => self.bucket_coll(kind),
            TimelineKind::Cache => self.cache_coll(),
        };
        let id = oid(post);
        coll.update_many(
            doc! { "c._id": id },
            doc! { "$pull": { "c": { "_id": id } } },
        )
        .await
        .map_err(db_error)?;
        Ok(())
    }
}
