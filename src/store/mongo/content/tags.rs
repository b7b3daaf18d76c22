//! The tag index on MongoDB: each post document carries `tags`, its hashtags as
//! `domain::hashtags` parses its text (absent when it has none), written with the
//! post's insert (and by the bulk loader), gone with the post; `{tags: 1, _id: -1}`
//! serves the tag timeline. A database written before `tags` existed gets them once,
//! when a process first opens it (`backfill`), recorded in `migrations`.

use futures::TryStreamExt;
use mongodb::Database;
use mongodb::bson::{Bson, Document, doc};

use super::super::{MongoStore, all, db_error, index, int, post_from};
use super::listings::bound;
use crate::domain::{Post, hashtags};
use crate::store::{PostRange, StoreResult};

/// The field.
pub(in crate::store::mongo) const TAGS: &str = "tags";

/// One document per migration step done: `{_id: step}`.
const MIGRATIONS: &str = "migrations";
const BACKFILLED: &str = "post_tags";

pub(in crate::store::mongo) fn tag_index() -> (&'static str, mongodb::IndexModel) {
    ("content", index(doc! { TAGS: 1, "_id": -1 }, false))
}

/// Adds `tags` to a post document about to be inserted, when its text has any.
pub(in crate::store::mongo) fn with_tags(post: &mut Document, text: &str) {
    let tags = hashtags(text);
    if !tags.is_empty() {
        post.insert(TAGS, tags);
    }
}

/// Sets `tags` on every post that has a `#` in its text and no `tags`, once per
/// database: the step is recorded after it ran, so an interrupted one runs again
/// (idempotent: each post gets the tags of its own text). Posts an older binary writes
/// after this ran carry none; upgrade every process together.
pub(in crate::store::mongo) async fn backfill(db: &Database) -> anyhow::Result<()> {
    let migrations = db.collection::<Document>(MIGRATIONS);
    if migrations
        .find_one(doc! { "_id": BACKFILLED })
        .await?
        .is_some()
    {
        return Ok(());
    }
    let content = db.collection::<Document>("content");
    let mut untagged = content
        .find(doc! { TAGS: { "$exists": false }, "text": { "$regex": "#" } })
        .projection(doc! { "_id": 1, "author": 1, "text": 1 })
        .await?;
    let mut tagged = 0_u64;
    while let Some(post) = untagged.try_next().await? {
        let tags = hashtags(post.get_str("text").unwrap_or_default());
        if tags.is_empty() {
            continue;
        }
        let filter = doc! {
            "_id": post.get("_id").cloned().unwrap_or(Bson::Null),
            "author": post.get_str("author").unwrap_or_default(),
        };
        content
            .update_one(filter, doc! { "$set": { TAGS: tags } })
            .await?;
        tagged += 1;
    }
    migrations
        .update_one(
            doc! { "_id": BACKFILLED },
            doc! { "$set": { "at": mongodb::bson::DateTime::now() } },
        )
        .upsert(true)
        .await?;
    if tagged > 0 {
        tracing::info!(
            tagged,
            "indexed the hashtags of posts stored before the tag index"
        );
    }
    Ok(())
}

impl MongoStore {
    /// The posts carrying `tag` in `range`, at most `limit`, in its order, from
    /// `{tags: 1, _id: -1}` (every shard: the shard key leads with the author).
    pub(super) async fn tag_listing(
        &self,
        tag: &str,
        range: PostRange,
        limit: usize,
    ) -> StoreResult<Vec<Post>> {
        let (ids, sort) = bound(range);
        let mut filter = doc! { TAGS: tag };
        if let Some(ids) = ids {
            filter.insert("_id", ids);
        }
        let docs = all(self
            .content_coll()
            .find(filter)
            .sort(sort)
            .limit(limit as i64))
        .await?;
        docs.iter().map(post_from).collect()
    }
}

/// Up to `limit` tags strictly after `after`, ascending, with how many posts carry each:
/// one aggregation over the posts with tags (the `{tags: 1, _id: -1}` index, a scatter
/// across the posts' shards). For the audit, not for serving.
pub(in crate::store::mongo) async fn index_totals(
    store: &MongoStore,
    after: Option<&str>,
    limit: usize,
) -> StoreResult<Vec<(String, u64)>> {
    let past = match after {
        Some(after) => doc! { TAGS: { "$gt": after } },
        None => doc! { TAGS: { "$exists": true } },
    };
    let pipeline = vec![
        doc! { "$match": past.clone() },
        doc! { "$project": { TAGS: 1 } },
        doc! { "$unwind": format!("${TAGS}") },
        doc! { "$match": past },
        doc! { "$group": { "_id": format!("${TAGS}"), "n": { "$sum": 1 } } },
        doc! { "$sort": { "_id": 1 } },
        doc! { "$limit": limit as i64 },
    ];
    let docs: Vec<Document> = store
        .content_coll()
        .aggregate(pipeline)
        .await
        .map_err(db_error)?
        .try_collect()
        .await
        .map_err(db_error)?;
    Ok(docs
        .iter()
        .filter_map(|d| match d.get("_id") {
            Some(Bson::String(tag)) => Some((tag.clone(), int(d, "n").max(0) as u64)),
            _ => None,
        })
        .collect())
}

/// Sets every post's `tags` to the hashtags of its text (removed where it has none),
/// for the posts whose `tags` differ; answers how many changed. Idempotent, and safe
/// beside writers: a post's text never changes.
pub(in crate::store::mongo) async fn reindex(store: &MongoStore) -> StoreResult<u64> {
    let content = store.content_coll();
    let mut posts = content
        .find(doc! { "$or": [ { TAGS: { "$exists": true } }, { "text": { "$regex": "#" } } ] })
        .projection(doc! { "_id": 1, "author": 1, "text": 1, TAGS: 1 })
        .await
        .map_err(db_error)?;
    let mut changed = 0_u64;
    while let Some(post) = posts.try_next().await.map_err(db_error)? {
        let want = hashtags(post.get_str("text").unwrap_or_default());
        let held: Vec<&str> = post
            .get_array(TAGS)
            .map(|a| a.iter().filter_map(Bson::as_str).collect())
            .unwrap_or_default();
        if held == want.iter().map(String::as_str).collect::<Vec<_>>() {
            continue;
        }
        let filter = doc! {
            "_id": post.get("_id").cloned().unwrap_or(Bson::Null),
            "author": post.get_str("author").unwrap_or_default(),
        };
        let update = if want.is_empty() {
            doc! { "$unset": { TAGS: "" } }
        } else {
            doc! { "$set": { TAGS: want } }
        };
        content.update_one(filter, update).await.map_err(db_error)?;
        changed += 1;
    }
    Ok(changed)
}
