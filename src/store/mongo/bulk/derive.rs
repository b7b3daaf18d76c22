//! The derived data of a bulk load on MongoDB, each step recomputed from all the
//! sources. The watermarks (`counted_seq`, the logs' `applied`, the tags' `w`) are the
//! newest oplog entry before the sources are read: changes after it are the workers'.
//!
//! - counters: three `$group` aggregations, then one batched update of every user;
//! - activity logs: the rebuild's documents (`activity/rebuild.rs`), inserted in bulk;
//! - timelines: caches dropped (built on first read); the configured bucket kind
//!   materialised user by user, as pushes in id order would lay it out;
//! - delivery markers: every post, under a materialising strategy; orphans removed;
//! - tag counts: only where the server keeps the event log (they are kept from it; a
//!   server without capped collections, such as the test stand-in, has neither);
//! - the event log itself is not rebuilt here: a capped collection cannot have
//!   documents removed, and its ids are oplog times. It keeps the workers' events.

use std::collections::HashMap;

use futures::TryStreamExt;
use mongodb::bson::{Bson, Document, doc, oid::ObjectId};

use super::{WRITE_BATCH, insert_unordered};
use crate::domain::{BucketKind, FeedStrategy, PostId};
use crate::store::bulk::TimelineLayout;
use crate::store::bulk::{DeriveSettings, Derived, StepReport};
use crate::store::mongo::trends::Tally;
use crate::store::mongo::{MongoStore, all, db_error, int, oid, post_id};
use crate::store::trends::{HOUR_MS, HOURS_KEPT};
use crate::store::{DeliveryStore, EventStore, StoreResult};

/// Posts per user in one `$in` read of the content when materialising buckets.
const AUTHORS_PER_READ: usize = 100;

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
        derived.timeline_entries = buckets(store, kind, feed).await?;
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

/// A timeline entry as `timelines.rs` stores it: `{_id, a, m, n, v}` embedded, `{_id,
/// a}` linked.
fn entry(post: &Document, names: &HashMap<String, (String, i64)>, embed: bool) -> Document {
    let author = post.get_str("author").unwrap_or_default();
    let mut entry = doc! { "_id": post.get("_id").cloned().unwrap_or(Bson::Null), "a": author };
    if embed {
        entry.insert("m", post.get_str("text").unwrap_or_default());
        if let Some((name, version)) = names.get(author) {
            entry.insert("n", name);
            entry.insert("v", *version);
        }
    }
    if let Ok(parent_author) = post
        .get_document("reply_to")
        .and_then(|r| r.get_str("author"))
    {
        entry.insert("r", parent_author);
    }
    // A repost, as `repost_as_post` shapes it: its original's id and author.
    if let Ok(original) = post.get_document("repost_of") {
        entry.insert("o", original.get("post").cloned().unwrap_or(Bson::Null));
        entry.insert("oa", original.get_str("author").unwrap_or_default());
    }
    entry
}

/// The reposts by `authors`, each shaped as a post of its reposter's under the
/// repost's id, carrying its original's text and `repost_of`; reposts whose original
/// is gone are left out.
async fn reposts_as_posts(store: &MongoStore, authors: &[&str]) -> StoreResult<Vec<Document>> {
    let mut reposts = Vec::new();
    for chunk in authors.chunks(AUTHORS_PER_READ) {
        reposts.extend(
            all(store
                .collection(crate::domain::REPOSTS)
                .find(doc! { "user": { "$in": chunk } }))
            .await?,
        );
    }
    let originals: Vec<Bson> = reposts
        .iter()
        .filter_map(|r| r.get("post").cloned())
        .collect();
    let mut texts: HashMap<PostId, String> = HashMap::new();
    for chunk in originals.chunks(WRITE_BATCH) {
        let found = all(store
            .content_coll()
            .find(doc! { "_id": { "$in": chunk.to_vec() } })
            .projection(doc! { "text": 1 }))
        .await?;
        for post in &found {
            texts.insert(
                post_id(post.get("_id"))?,
                post.get_str("text").unwrap_or_default().to_owned(),
            );
        }
    }
    let mut shaped = Vec::with_capacity(reposts.len());
    for repost in &reposts {
        let Some(text) = texts.get(&post_id(repost.get("post"))?) else {
            continue;
        };
        shaped.push(doc! {
            "_id": repost.get("_id").cloned().unwrap_or(Bson::Null),
            "author": repost.get_str("user").unwrap_or_default(),
            "text": text,
            "repost_of": {
                "post": repost.get("post").cloned().unwrap_or(Bson::Null),
                "author": repost.get_str("post_author").unwrap_or_default(),
            },
        });
    }
    Ok(shaped)
}

/// A bucket document being filled: its group key, entries and bounds.
struct Open {
    key: (i64, i64),
    entries: Vec<Bson>,
    mn: PostId,
    mx: PostId,
    /// An upper bound of the ids in the group's older documents.
    pmx: PostId,
}

/// Materialises every user's buckets of `kind`; returns the entries written.
async fn buckets(store: &MongoStore, kind: BucketKind, feed: &TimelineLayout) -> StoreResult<u64> {
    let coll = store.bucket_coll(kind);
    coll.delete_many(doc! {}).await.map_err(db_error)?;
    let users = all(store.users_coll().find(doc! {}).sort(doc! { "_id": 1 })).await?;
    let names: HashMap<String, (String, i64)> = users
        .iter()
        .filter_map(|u| {
            let id = u.get_str("_id").ok()?.to_owned();
            let name = u.get_str("display_name").unwrap_or_default().to_owned();
            Some((id, (name, int(u, "version"))))
        })
        .collect();
    let follows = store.collection(crate::store::mongo::graph::FOLLOWS);
    let (size, part_max) = (
        feed.bucket_size.max(1) as usize,
        feed.timed_bucket_max_entries.max(1) as usize,
    );
    let (mut written, mut pending) = (0, Vec::new());
    for user in names.keys() {
        let edges = all(follows
            .find(doc! { "from": user })
            .projection(doc! { "to": 1 }))
        .await?;
        let mut authors: Vec<&str> = edges.iter().filter_map(|e| e.get_str("to").ok()).collect();
        authors.push(user);
        let mut posts = Vec::new();
        for chunk in authors.chunks(AUTHORS_PER_READ) {
            posts.extend(
                all(store
                    .content_coll()
                    .find(doc! { "author": { "$in": chunk } }))
                .await?,
            );
        }
        posts.extend(reposts_as_posts(store, &authors).await?);
        posts.sort_by_key(|p| post_id(p.get("_id")).unwrap_or(PostId::MIN));
        // Group `(period, part)` for timed buckets, `(0, sequence)` for sized ones; a
        // group is a period, or all sized buckets.
        let (mut open, mut period, mut in_period): (Option<Open>, i64, usize) = (None, i64::MIN, 0);
        for (index, post) in posts.iter().enumerate() {
            let id = post_id(post.get("_id"))?;
            let key = match kind {
                BucketKind::Sized => (0, (index / size) as i64),
                BucketKind::Timed => {
                    let this = id.timestamp_ms().div_euclid(feed.bucket_span_ms);
                    if this != period {
                        (period, in_period) = (this, 0);
                    }
                    in_period += 1;
                    (this, ((in_period - 1) / part_max) as i64)
                }
            };
            let mut pmx = PostId::MIN;
            if open.as_ref().is_some_and(|o| o.key != key) {
                let done = open.take().expect("checked");
                if done.key.0 == key.0 {
                    pmx = done.pmx.max(done.mx);
                }
                pending.push(bucket_doc(kind, user, done));
            }
            let open = open.get_or_insert_with(|| Open {
                key,
                entries: Vec::new(),
                mn: id,
                mx: id,
                pmx,
            });
            open.entries
                .push(Bson::Document(entry(post, &names, feed.embed_content)));
            open.mx = id;
            written += 1;
        }
        if let Some(done) = open {
            pending.push(bucket_doc(kind, user, done));
        }
        if pending.len() >= WRITE_BATCH / 10 {
            insert_unordered(&coll, std::mem::take(&mut pending)).await?;
        }
    }
    insert_unordered(&coll, pending).await?;
    Ok(written)
}

fn bucket_doc(kind: BucketKind, user: &str, open: Open) -> Document {
    let mut bucket = match kind {
        BucketKind::Sized => doc! { "_id": ObjectId::new(), "u": user, "s": open.key.1 },
        BucketKind::Timed => doc! { "_id": { "u": user, "t": open.key.0, "p": open.key.1 } },
    };
    bucket.insert("n", open.entries.len() as i64);
    bucket.insert("mn", oid(open.mn));
    bucket.insert("mx", oid(open.mx));
    bucket.insert("pmx", oid(open.pmx));
    bucket.insert("c", open.entries);
    bucket
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
