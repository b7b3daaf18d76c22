//! The derived data of a bulk load on MongoDB, each step recomputed from all the
//! sources. The watermarks (`counted_seq`, the logs' `applied`, the tags' `w`) are the
//! newest oplog entry before the sources are read: changes after it are the workers'.
//!
//! - counters: three `$group` aggregations, then one batched update of every user;
//! - activity logs: the rebuild's documents (`activity/rebuild.rs`), inserted in bulk;
//! - timelines: caches dropped (built on first read); the configured bucket kind
//!   materialised user by user, as pushes in id order would lay it out (`buckets.rs`);
//! - delivery markers: every post, under a materialising strategy; orphans removed;
//! - tag counts: only where the server keeps the event log (they are kept from it; a
//!   server without capped collections, such as the test stand-in, has neither);
//! - the event log itself is not rebuilt here: a capped collection cannot have
//!   documents removed, and its ids are oplog times. It keeps the workers' events.

use std::collections::HashMap;

use futures::TryStreamExt;
use mongodb::bson::{Bson, Document, doc};

use super::{WRITE_BATCH, insert_unordered};
use crate::domain::{BucketKind, FeedStrategy};
use crate::store::bulk::TimelineLayout;
use crate::store::bulk::{DeriveSettings, Derived, StepReport};
use crate::store::mongo::trends::Tally;
use crate::store::mongo::{MongoStore, all, db_error, int};
use crate::store::trends::{HOUR_MS, HOURS_KEPT};
use crate::store::{DeliveryStore, EventStore, StoreResult};

pub(super) async fn derive_all(
    store: &MongoStore,
    settings: &DeriveSettings,
    step: StepReport,
) -> StoreResult<Derived> {
    let mut derived = Derived::default();
    step("blocks, replies and reposts");
    derived.follows_blocked = super::sources::remove_blocked_follows(store).await?;
    super::sources::complete_replies(store).await?;
    super::sources::count_reposts(store).await?;
    let head = store.head_seq().await?;
    step("counters");
    derived.users_counted = counters(store, head).await?;
    step("activity logs");
    derived.activity_entries = store.build_all_logs(settings.activity, head).await?;
    step("tag counts");
    if store.prepare_log(settings.events).await.is_ok() {
        let mut tally = Tally::default();
        let mut posts = store
            .content_coll()
            .find(doc! {})
            .projection(doc! { "_id": 1, "text": 1 })
            .await
            .map_err(db_error)?;
        while let Some(post) = posts.try_next().await.map_err(db_error)? {
            tally.add(&post)?;
        }
        let from_hour = settings.now_ms.div_euclid(HOUR_MS) - (HOURS_KEPT - 1);
        derived.tags = store.write_tally(tally, head, from_hour).await?;
    }
    step("notifications");
    derived.notifications = super::notifications::derive(store).await?;
    let timelines = derive_timelines(store, &settings.feed, step).await?;
    derived.timeline_entries = timelines.timeline_entries;
    derived.delivered = timelines.delivered;
    Ok(derived)
}

/// The timeline steps: every cache and every bucket dropped, the buckets of `feed`'s
/// kind materialised, `hybrid`'s celebrities classified, the delivery markers set.
pub(super) async fn derive_timelines(
    store: &MongoStore,
    feed: &TimelineLayout,
    step: StepReport,
) -> StoreResult<Derived> {
    let mut derived = Derived::default();
    step("timelines");
    store
        .cache_coll()
        .delete_many(doc! {})
        .await
        .map_err(db_error)?;
    let kind = match feed.strategy {
        FeedStrategy::TimedBuckets => Some(BucketKind::Timed),
        FeedStrategy::SizedBuckets => Some(BucketKind::Sized),
        FeedStrategy::Cache | FeedStrategy::Hybrid | FeedStrategy::FanoutOnRead => None,
    };
    // The other kind's buckets too: left behind, they would be served, stale, by a later
    // switch back that found them.
    for other in [BucketKind::Timed, BucketKind::Sized] {
        store
            .bucket_coll(other)
            .delete_many(doc! {})
            .await
            .map_err(db_error)?;
    }
    if let Some(kind) = kind {
        derived.timeline_entries = super::buckets::buckets(store, kind, feed).await?;
    }
    if feed.strategy == FeedStrategy::Hybrid {
        step("celebrities");
        celebrities(store, feed.hybrid_threshold, feed.hybrid_leave_below).await?;
    }
    step("delivery markers");
    derived.delivered = deliveries(store, feed.strategy).await?;
    Ok(derived)
}

/// `hybrid`: authors above the threshold become celebrities through the same steps as
/// the timelines worker's (`GraphStore::reclassify`), and the loaded edges to authors
/// marked earlier take the mark they would have copied.
async fn celebrities(store: &MongoStore, threshold: u64, leave: u64) -> StoreResult<()> {
    use crate::store::GraphStore;
    let filter = doc! { "$or": [
        { "followers_count": { "$gt": threshold as i64 } },
        { "merged": true },
    ] };
    let authors = all(store
        .users_coll()
        .find(filter)
        .projection(doc! { "_id": 1 }))
    .await?;
    for author in &authors {
        let Ok(id) = author.get_str("_id") else {
            continue;
        };
        store.reclassify(id, threshold, leave).await?;
        store
            .collection(crate::store::mongo::graph::FOLLOWS)
            .update_many(
                doc! { "to": id, "merged": { "$ne": true } },
                doc! { "$set": { "merged": true } },
            )
            .await
            .map_err(db_error)?;
    }
    Ok(())
}

/// `{_id: value, n: count}` per value of `field` in `collection`.
async fn group_counts(
    store: &MongoStore,
    collection: &str,
    field: &str,
) -> StoreResult<HashMap<String, i64>> {
    let pipeline = [doc! { "$group": { "_id": format!("${field}"), "n": { "$sum": 1 } } }];
    let groups: Vec<Document> = store
        .collection(collection)
        .aggregate(pipeline)
        .await
        .map_err(db_error)?
        .try_collect()
        .await
        .map_err(db_error)?;
    Ok(groups
        .iter()
        .filter_map(|g| Some((g.get_str("_id").ok()?.to_owned(), int(g, "n"))))
        .collect())
}

async fn counters(store: &MongoStore, head: i64) -> StoreResult<u64> {
    let follows = crate::store::mongo::graph::FOLLOWS;
    let posts = group_counts(store, "content", "author").await?;
    let following = group_counts(store, follows, "from").await?;
    let followers = group_counts(store, follows, "to").await?;
    let users = all(store
        .users_coll()
        .find(doc! {})
        .projection(doc! { "_id": 1 }))
    .await?;
    let count = |map: &HashMap<String, i64>, id: &str| map.get(id).copied().unwrap_or(0);
    let statements: Vec<Document> = users
        .iter()
        .filter_map(|u| u.get_str("_id").ok())
        .map(|id| {
            doc! {
                "q": { "_id": id },
                "u": { "$set": {
                    "posts_count": count(&posts, id),
                    "following_count": count(&following, id),
                    "followers_count": count(&followers, id),
                    "counted_seq": head,
                } },
            }
        })
        .collect();
    let counted = statements.len() as u64;
    store.update_batches("users", statements).await?;
    Ok(counted)
}

/// Marks every post under a materialising strategy, as its fan-out would have, and
/// drops the markers of posts that no longer exist.
async fn deliveries(store: &MongoStore, strategy: FeedStrategy) -> StoreResult<u64> {
    let mut after = None;
    loop {
        let orphans = store.orphaned(after, WRITE_BATCH).await?;
        store.unmark(&orphans).await?;
        if orphans.len() < WRITE_BATCH {
            break;
        }
        after = orphans.last().copied();
    }
    if strategy == FeedStrategy::FanoutOnRead {
        return Ok(0);
    }
    let markers = store.collection("deliveries");
    let mut ids = store
        .content_coll()
        .find(doc! {})
        .projection(doc! { "_id": 1 })
        .await
        .map_err(db_error)?;
    let (mut added, mut batch) = (0, Vec::with_capacity(WRITE_BATCH));
    while let Some(post) = ids.try_next().await.map_err(db_error)? {
        batch.push(doc! { "_id": post.get("_id").cloned().unwrap_or(Bson::Null) });
        if batch.len() == WRITE_BATCH {
            added += insert_unordered(&markers, std::mem::take(&mut batch)).await?;
        }
    }
    added += insert_unordered(&markers, batch).await?;
    // Reposts likewise, under their own ids.
    let mut ids = store
        .collection(crate::domain::REPOSTS)
        .find(doc! {})
        .projection(doc! { "_id": 1 })
        .await
        .map_err(db_error)?;
    let mut batch = Vec::with_capacity(WRITE_BATCH);
    while let Some(repost) = ids.try_next().await.map_err(db_error)? {
        batch.push(doc! { "_id": repost.get("_id").cloned().unwrap_or(Bson::Null) });
        if batch.len() == WRITE_BATCH {
            added += insert_unordered(&markers, std::mem::take(&mut batch)).await?;
        }
    }
    added += insert_unordered(&markers, batch).await?;
    Ok(added)
}
