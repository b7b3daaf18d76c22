//! What a load's sources imply of each other on MongoDB, made true before anything is
//! derived from them: blocks and mutes written, the follows beside a block removed (no
//! follow stands beside a block), and replies completed (each loaded reply's parent
//! author, every post's `replies_count`), reposts written with their originals' authors
//! and every post's `reposts_count` counted. Every write carries its shard key, and every
//! write of a post's count moves its `counter_version` (see `post_counts.rs`).

use std::collections::HashMap;

use futures::TryStreamExt;
use mongodb::bson::{Bson, Document, doc};

use super::insert_unordered;
use crate::domain::PostId;
use crate::domain::REPOSTS;
use crate::store::StoreResult;
use crate::store::bulk::{RelationRow, RepostRow, Rows};
use crate::store::mongo::graph::FOLLOWS;
use crate::store::mongo::relations::{BLOCKS, MUTES};
use crate::store::mongo::threads::{REPLIES_COUNT, REPLY_TO, reply_from};
use crate::store::mongo::{COUNTER_VERSION, MongoStore, all, db_error, oid, post_id};

/// Parents read per `$in` query.
const PARENTS_PER_READ: usize = 500;

pub(super) async fn insert_relations(
    store: &MongoStore,
    rows: &Rows<RelationRow>,
) -> StoreResult<u64> {
    let (mut blocks, mut mutes) = (Vec::new(), Vec::new());
    for row in rows.rows() {
        let (user, other) = (rows.str(row.user), rows.str(row.other));
        let mut relation = doc! {
            "_id": format!("{user}/{other}"), "user": user, "other": other,
            "created_ms": row.created_at_ms,
        };
        match row.mute {
            None => blocks.push(relation),
            Some(m) => {
                relation.insert("notifications", m.notifications);
                relation.insert("until_ms", m.until_ms.map_or(Bson::Null, Bson::Int64));
                mutes.push(relation);
            }
        }
    }
    Ok(insert_unordered(&store.collection(BLOCKS), blocks).await?
        + insert_unordered(&store.collection(MUTES), mutes).await?)
}

/// Removes every follow, either way, between two users one of whom blocks the other.
pub(super) async fn remove_blocked_follows(store: &MongoStore) -> StoreResult<u64> {
    let blocks = all(store
        .collection(BLOCKS)
        .find(doc! {})
        .projection(doc! { "user": 1, "other": 1 }))
    .await?;
    let follows = store.collection(FOLLOWS);
    let mut removed = 0;
    for block in &blocks {
        let (Ok(user), Ok(other)) = (block.get_str("user"), block.get_str("other")) else {
            continue;
        };
        for (from, to) in [(user, other), (other, user)] {
            removed += follows
                .delete_one(doc! { "from": from, "_id": format!("{from}/{to}") })
                .await
                .map_err(db_error)?
                .deleted_count;
        }
    }
    Ok(removed)
}

/// Fills in the parent author of every loaded reply and recounts every post's replies.
pub(super) async fn complete_replies(store: &MongoStore) -> StoreResult<()> {
    let content = store.content_coll();
    let replies = all(content
        .find(doc! { "reply_to": { "$exists": true } })
        .projection(doc! { "_id": 1, "author": 1, "reply_to": 1 }))
    .await?;
    let mut counts: HashMap<PostId, i64> = HashMap::new();
    for reply in &replies {
        if let Some(parent) = reply_from(reply)? {
            *counts.entry(parent.post).or_default() += 1;
        }
    }
    let parents: Vec<PostId> = counts.keys().copied().collect();
    let mut authors: HashMap<PostId, String> = HashMap::new();
    for chunk in parents.chunks(PARENTS_PER_READ) {
        let ids: Vec<Bson> = chunk.iter().map(|p| Bson::ObjectId(oid(*p))).collect();
        let mut found = content
            .find(doc! { "_id": { "$in": ids } })
            .projection(doc! { "_id": 1, "author": 1 })
            .await
            .map_err(db_error)?;
        while let Some(parent) = found.try_next().await.map_err(db_error)? {
            let author = parent.get_str("author").unwrap_or_default().to_owned();
            authors.insert(post_id(parent.get("_id"))?, author);
        }
    }
    let mut statements: Vec<Document> = Vec::new();
    for reply in &replies {
        let Some(parent) = reply_from(reply)? else {
            continue;
        };
        if !parent.author.is_empty() {
            continue;
        }
        if let Some(author) = authors.get(&parent.post) {
            statements.push(doc! {
                "q": { "_id": reply.get("_id").cloned().unwrap_or(Bson::Null),
                       "author": reply.get_str("author").unwrap_or_default() },
                "u": { "$set": { format!("{REPLY_TO}.author"): author } },
            });
        }
    }
    content
        .update_many(
            doc! { REPLIES_COUNT: { "$gt": 0_i64 } },
            doc! { "$set": { REPLIES_COUNT: 0_i64 }, "$inc": { COUNTER_VERSION: 1_i64 } },
        )
        .await
        .map_err(db_error)?;
    for (parent, n) in &counts {
        if let Some(author) = authors.get(parent) {
            statements.push(doc! {
                "q": { "_id": oid(*parent), "author": author },
                "u": { "$set": { REPLIES_COUNT: *n }, "$inc": { COUNTER_VERSION: 1_i64 } },
            });
        }
    }
    store.update_batches("content", statements).await
}

/// One batch of reposts, each with its original's author from the stored post; rows
/// whose id or (user, post) is stored (a duplicate key), or whose post is not, are
/// skipped.
pub(super) async fn insert_reposts(store: &MongoStore, rows: &Rows<RepostRow>) -> StoreResult<u64> {
    let posts: std::collections::HashSet<PostId> = rows.rows().iter().map(|r| r.post).collect();
    let posts: Vec<PostId> = posts.into_iter().collect();
    let authors = store.authors_of(&posts).await?;
    let docs = rows
        .rows()
        .iter()
        .filter_map(|row| {
            let author = authors.get(&row.post)?;
            Some(doc! {
                "_id": oid(row.id), "user": rows.str(row.user), "post": oid(row.post),
                "post_author": author,
            })
        })
        .collect();
    insert_unordered(&store.collection(REPOSTS), docs).await
}

/// Recounts every post's reposts: one `$group` over the reposts, streamed into batched
/// updates (each by the post's id and author, its shard key).
pub(super) async fn count_reposts(store: &MongoStore) -> StoreResult<()> {
    const COUNT: &str = "reposts_count";
    store
        .content_coll()
        .update_many(
            doc! { COUNT: { "$gt": 0_i64 } },
            doc! { "$set": { COUNT: 0_i64 }, "$inc": { COUNTER_VERSION: 1_i64 } },
        )
        .await
        .map_err(db_error)?;
    let pipeline = [doc! { "$group": {
        "_id": { "post": "$post", "author": "$post_author" },
        "n": { "$sum": 1_i64 },
    } }];
    let mut counted = store
        .collection(REPOSTS)
        .aggregate(pipeline)
        .await
        .map_err(db_error)?;
    let mut statements = Vec::new();
    while let Some(group) = counted.try_next().await.map_err(db_error)? {
        let key = group.get_document("_id").map_err(|e| {
            crate::store::StoreError::Backend(anyhow::anyhow!(
                "a repost count without its key: {e}"
            ))
        })?;
        statements.push(doc! {
            "q": { "_id": key.get("post").cloned().unwrap_or(Bson::Null),
                   "author": key.get("author").cloned().unwrap_or(Bson::Null) },
            "u": {
                "$set": { COUNT: crate::store::mongo::int(&group, "n") },
                "$inc": { COUNTER_VERSION: 1_i64 },
            },
        });
        if statements.len() == super::WRITE_BATCH {
            store
                .update_batches("content", std::mem::take(&mut statements))
                .await?;
        }
    }
    store.update_batches("content", statements).await
}
