//! Replies on MongoDB: a reply's `content` document carries `reply_to: {post: ObjectId,
//! author}` (the parent and its author, copied at creation) and every post its
//! `replies_count`, moved by `$inc` like the author's `posts_count` (see `content.rs`,
//! `claims.rs` and `post_counts.rs`, which keeps its `counter_version`). Indexed
//! `{reply_to.post: 1, _id: 1}`, sparse, for the replies of a post. Under the documented shard key
//! `{author: 1, _id: 1}` a read of replies by their parent names no author, so it goes to every
//! shard (one scatter-gather query per level of a thread); the count's `$inc` names the parent's
//! author (the reply carries it), so it targets one shard.

use std::collections::HashMap;

use async_trait::async_trait;
use futures::TryStreamExt;
use mongodb::bson::{Document, doc};

use super::{COUNTER_VERSION, IndexSpec, MongoStore, all, db_error, oid, post_from};
use crate::domain::{Post, PostId, ReplyTo};
use crate::store::{Counter, StoreError, StoreResult, ThreadStore};

pub(super) const REPLY_TO: &str = "reply_to";
pub(super) const REPLIES_COUNT: &str = "replies_count";

pub(super) fn indexes() -> Vec<IndexSpec> {
    let by_parent = mongodb::IndexModel::builder()
        .keys(doc! { "reply_to.post": 1, "_id": 1 })
        .options(
            mongodb::options::IndexOptions::builder()
                .sparse(true)
                .build(),
        )
        .build();
    vec![("content", by_parent)]
}

/// `reply_to` as a post document stores it.
pub(super) fn reply_doc(reply_to: &ReplyTo) -> Document {
    doc! { "post": oid(reply_to.post), "author": &reply_to.author }
}

/// The `reply_to` of a post document, `None` when it answers nothing.
pub(super) fn reply_from(doc: &Document) -> StoreResult<Option<ReplyTo>> {
    let Ok(reply) = doc.get_document(REPLY_TO) else {
        return Ok(None);
    };
    Ok(Some(ReplyTo {
        post: super::post_id(reply.get("post"))?,
        author: reply.get_str("author").unwrap_or_default().to_owned(),
    }))
}

impl MongoStore {
    /// The parent a reply to `id` names, read before the reply is inserted: a parent
    /// deleted between this read and the insert is the same as one deleted a moment
    /// after the insert, which the rules allow (deleting a post keeps its replies).
    pub(super) async fn reply_parent(&self, id: PostId) -> StoreResult<ReplyTo> {
        let found = self
            .content_coll()
            .find_one(doc! { "_id": oid(id) })
            .projection(doc! { "author": 1 })
            .await
            .map_err(db_error)?;
        match found {
            Some(parent) => Ok(ReplyTo {
                post: id,
                author: parent.get_str("author").unwrap_or_default().to_owned(),
            }),
            None => Err(StoreError::NotFound(format!("post {id}"))),
        }
    }
}

impl MongoStore {
    /// How many posts answer each of `parents`, for those with any: one grouped query.
    pub(super) async fn reply_counts_of(
        &self,
        parents: &[PostId],
    ) -> StoreResult<HashMap<PostId, u64>> {
        let mut counts = HashMap::new();
        if parents.is_empty() {
            return Ok(counts);
        }
        let ids: Vec<_> = parents.iter().map(|id| oid(*id)).collect();
        let pipeline = [
            doc! { "$match": { "reply_to.post": { "$in": ids } } },
            doc! { "$group": { "_id": "$reply_to.post", "n": { "$sum": 1 } } },
        ];
        let mut cursor = self
            .content_coll()
            .aggregate(pipeline)
            .await
            .map_err(db_error)?;
        while let Some(row) = cursor.try_next().await.map_err(db_error)? {
            let parent = super::post_id(row.get("_id"))?;
            counts.insert(parent, super::int(&row, "n").max(0) as u64);
        }
        Ok(counts)
    }

    /// Sets every post's `counter` (`replies_count`, `reposts_count`) that differs from
    /// its sources, a page of posts at a time (each page's counts versions read before
    /// its sources are counted), each write guarded by the version read (see
    /// `post_counts.rs`: a reply's or repost's move landing in between leaves the post
    /// for the next recount); a post with a source under a fresh claim mark (its move
    /// maybe not landed) is recounted alone, as a takeover recounts it; returns how many
    /// it wrote.
    pub(super) async fn recount_every_post(&self, counter: Counter) -> StoreResult<u64> {
        let field = super::post_counts::count_field(counter);
        let mut written = 0;
        let mut after: Option<PostId> = None;
        loop {
            let filter = match after {
                Some(after) => doc! { "_id": { "$gt": oid(after) } },
                None => doc! {},
            };
            let page = all(self
                .content_coll()
                .find(filter)
                .sort(doc! { "_id": 1 })
                .limit(RECOUNT_PAGE)
                .projection(doc! { "_id": 1, "author": 1, field: 1, COUNTER_VERSION: 1 }))
            .await?;
            let ids = page
                .iter()
                .map(|d| super::post_id(d.get("_id")))
                .collect::<StoreResult<Vec<_>>>()?;
            // Posts with a source still being written (a fresh claim mark) before or
            // after the count: each recounted alone, waiting for the marks.
            let mut marked = self.fresh_marked_among(counter, &ids).await?;
            let counts = match counter {
                Counter::Replies => self.reply_counts_of(&ids).await?,
                Counter::Reposts => self.repost_counts_of(&ids).await?,
            };
            marked.extend(self.fresh_marked_among(counter, &ids).await?);
            for (doc, id) in page.iter().zip(&ids) {
                let want = counts.get(id).copied().unwrap_or(0) as i64;
                let post = || ReplyTo {
                    post: *id,
                    author: doc.get_str("author").unwrap_or_default().to_owned(),
                };
                // A post with a source being written is recounted alone, else one whose
                // count differs (no field reads as 0, as `post_from` reads it) is set.
                if marked.contains(id) {
                    let recounted = self.recount_post_count(counter, &post(), None).await?;
                    written += u64::from(recounted);
                } else if super::int(doc, field) != want {
                    let version = super::int(doc, COUNTER_VERSION);
                    written +=
                        u64::from(self.set_post_count(counter, &post(), want, version).await?);
                }
            }
            if (page.len() as i64) < RECOUNT_PAGE {
                return Ok(written);
            }
            after = ids.last().copied();
        }
    }
}

/// Posts read per page of the recount.
const RECOUNT_PAGE: i64 = 1000;

#[async_trait]
impl ThreadStore for MongoStore {
    async fn replies(&self, parents: &[PostId], limit: usize) -> StoreResult<Vec<Post>> {
        if parents.is_empty() || limit == 0 {
            return Ok(Vec::new());
        }
        let parents: Vec<_> = parents.iter().map(|id| oid(*id)).collect();
        let docs = all(self
            .content_coll()
            .find(doc! { "reply_to.post": { "$in": parents } })
            .sort(doc! { "_id": 1 })
            .limit(limit as i64))
        .await?;
        docs.iter().map(post_from).collect()
    }
}
