//! Materialised timelines on MongoDB: `timed_buckets` `{_id: {u, t, p}, n, mn, mx, pmx,
//! c}` (part `p` of period `t`), `sized_buckets` `{_id, u, s, n, mn, mx, pmx, c}` and
//! `timeline_cache` `{_id: user, ready, started, read, complete, c}`, where each entry of `c` is
//! `{_id, a, m}` embedded or `{_id, a}` linked. `pmx` bounds the ids of the group's older documents
//! (see `buckets.rs`).

mod buckets;
mod cache;
mod entries;
mod idle;
mod names;

use async_trait::async_trait;
use futures::StreamExt;
use mongodb::bson::{Document, doc};

use super::{IndexSpec, MongoStore, all, db_error, index, int, oid, post_id};
use crate::domain::{
    Bucket, BucketKind, CacheState, NameStamp, PostId, TimelineEntry, TimelineKind,
};
use crate::store::timelines::deliver_to_audience;
use crate::store::timelines::{CacheMerge, CacheView};
use crate::store::{StoreResult, TimelineStore};
use buckets::Group;
use entries::{entries_from, entry_doc, newest_below};

/// Users written at once by one fan-out call.
const FANOUT_CONCURRENCY: usize = 32;

/// Each read sort is the tail of an index whose head is the user, so no read sorts in
/// memory; the `{"_id.u", "_id.t", "_id.p"}` and unique `{u, s}` indexes find a
/// group's newest document for pushes.
pub(super) fn indexes() -> Vec<IndexSpec> {
    vec![
        (
            "timed_buckets",
            index(
                doc! { "_id.u": 1, "mx": -1, "_id.t": -1, "_id.p": -1 },
                false,
            ),
        ),
        (
            "timed_buckets",
            index(doc! { "_id.u": 1, "_id.t": 1, "_id.p": 1 }, false),
        ),
        ("timed_buckets", index(doc! { "c._id": 1 }, false)),
        ("sized_buckets", index(doc! { "u": 1, "s": 1 }, true)),
        (
            "sized_buckets",
            index(doc! { "u": 1, "mx": -1, "s": -1 }, false),
        ),
        ("sized_buckets", index(doc! { "c._id": 1 }, false)),
        ("timeline_cache", index(doc! { "c._id": 1 }, false)),
        ("timeline_cache", idle::read_index()),
    ]
}

/// Awaits every push, [`FANOUT_CONCURRENCY`] at once. One user's failure stops no
/// other; the first error is returned once all were tried.
async fn all_settled<F>(pushes: Vec<F>) -> StoreResult<()>
where
    F: std::future::Future<Output = StoreResult<()>>,
{
    let results: Vec<StoreResult<()>> = futures::stream::iter(pushes)
        .buffer_unordered(FANOUT_CONCURRENCY)
        .collect()
        .await;
    results.into_iter().collect()
}

#[async_trait]
impl TimelineStore for MongoStore {
    async fn timed_push(
        &self,
        users: &[String],
        key: i64,
        entries: &[TimelineEntry],
        max_entries: u32,
    ) -> StoreResult<()> {
        let mut heads = self.newest_parts(users, key).await?;
        let pushes = users
            .iter()
            .map(|user| {
                let group = Group::Timed { user, period: key };
                self.push_group(group, entries, max_entries, heads.remove(user))
            })
            .collect();
        all_settled(pushes).await
    }

    async fn sized_push(
        &self,
        users: &[String],
        entries: &[TimelineEntry],
        bucket_size: u32,
    ) -> StoreResult<()> {
        let pushes = users
            .iter()
            .map(|user| self.push_group(Group::Sized { user }, entries, bucket_size, None))
            .collect();
        all_settled(pushes).await
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
            BucketKind::Timed => (
                doc! { "_id.u": user },
                doc! { "mx": -1, "_id.t": -1, "_id.p": -1 },
            ),
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
        match entries {
            [] => Ok(0),
            [entry] => self.cache_push_one(users, entry, cache_size).await,
            _ => {
                self.cache_merges(users, entries, cache_size, CacheMerge::Push)
                    .await
            }
        }
    }

    /// The author, then the followers in batches, each one `updateMany` that matches
    /// only existing caches; a failed batch is retried and stops no other.
    async fn cache_push_to_audience(
        &self,
        author: &str,
        entries: &[TimelineEntry],
        cache_size: u32,
    ) -> StoreResult<u64> {
        deliver_to_audience(self, author, |batch| async move {
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
            complete: doc.get_bool("complete").unwrap_or(false),
            entries: entries_from(&doc)?,
        }))
    }

    async fn cache_start(&self, user: &str, now_ms: i64) -> StoreResult<bool> {
        let result = self
            .cache_coll()
            .update_one(
                doc! { "_id": user },
                doc! { "$setOnInsert": {
                    "ready": false, "started": now_ms, "read": now_ms, "complete": true, "c": [],
                } },
            )
            .upsert(true)
            .await
            .map_err(db_error)?;
        Ok(result.upserted_id.is_some())
    }

    async fn cache_touch(&self, user: &str, now_ms: i64) -> StoreResult<()> {
        self.touch_cache(user, now_ms).await
    }

    async fn drop_idle_caches(&self, now_ms: i64, idle_ms: i64, limit: usize) -> StoreResult<u64> {
        self.drop_idle(now_ms, idle_ms, limit).await
    }

    async fn cache_reset(&self, user: &str) -> StoreResult<bool> {
        let filter = doc! {
            "_id": user, "ready": true, "complete": { "$ne": true }, "c": { "$size": 0 },
        };
        let result = self
            .cache_coll()
            .delete_one(filter)
            .await
            .map_err(db_error)?;
        Ok(result.deleted_count > 0)
    }

    async fn cache_fill(
        &self,
        user: &str,
        entries: &[TimelineEntry],
        cache_size: u32,
    ) -> StoreResult<()> {
        let merge = CacheMerge::Fill {
            cut: entries.len() >= cache_size as usize,
        };
        let owner = [user.to_owned()];
        self.cache_merges(&owner, entries, cache_size, merge)
            .await?;
        Ok(())
    }

    async fn cache_backfill(
        &self,
        user: &str,
        entries: &[TimelineEntry],
        cache_size: u32,
        cut: bool,
    ) -> StoreResult<bool> {
        let owner = [user.to_owned()];
        let merge = CacheMerge::Backfill { cut };
        Ok(self
            .cache_merges(&owner, entries, cache_size, merge)
            .await?
            > 0)
    }

    async fn remove_author_entries(
        &self,
        kind: TimelineKind,
        user: &str,
        author: &str,
    ) -> StoreResult<()> {
        let pull = removal(kind, doc! { "a": author });
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
        let pull = removal(kind, doc! { "_id": id });
        coll.update_many(doc! { "c._id": id }, pull)
            .await
            .map_err(db_error)?;
        Ok(())
    }

    /// Nothing to settle: a cache read here checks every entry against the follow graph
    /// and the posts (`cache_view`), so an entry whose removal never ran is never served
    /// and is dropped by the cache's own bound in time.
    async fn settle_retractions(&self) -> StoreResult<u64> {
        Ok(0)
    }

    async fn cache_current(
        &self,
        user: &str,
        before: Option<PostId>,
        limit: usize,
    ) -> StoreResult<Option<CacheView>> {
        self.cache_view(user, before, limit).await
    }

    async fn rename_author(
        &self,
        kind: TimelineKind,
        users: &[String],
        author: &str,
        name: &NameStamp,
    ) -> StoreResult<()> {
        self.stamp_author(kind, users, author, name).await
    }

    async fn renamed(&self, authors: &[String]) -> StoreResult<Vec<(String, u64)>> {
        self.renamed_versions(authors).await
    }

    async fn mark_renamed(&self, author: &str, version: u64) -> StoreResult<()> {
        self.mark_renamed_version(author, version).await
    }
}

#[cfg(test)]
mod size_model;

/// The update that pulls the entries matching `entries` from a timeline document of
/// `kind`; on a cache it also moves the revision a merge guards on (`cache::REV`).
fn removal(kind: TimelineKind, entries: Document) -> Document {
    let mut update = doc! { "$pull": { "c": entries } };
    if kind == TimelineKind::Cache {
        update.insert("$inc", doc! { cache::REV: 1 });
    }
    update
}
