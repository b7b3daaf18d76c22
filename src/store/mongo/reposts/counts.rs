//! The original's `reposts_count` on MongoDB: moved by `$inc` under a repost's claim,
//! set from the reposts after a takeover, and counted for a page of posts in one
//! grouped query.

use mongodb::bson::doc;

use super::super::{MongoStore, db_error, int, oid, post_id};
use super::REPOSTS_COUNT;
use crate::domain::{PostId, ReplyTo};
use crate::store::StoreResult;

impl MongoStore {
    /// Moves the original's repost count by `delta`; nothing when it no longer exists.
    pub(in crate::store::mongo) async fn move_reposts(
        &self,
        post: &ReplyTo,
        delta: i64,
    ) -> StoreResult<()> {
        self.collection("content")
            .update_one(
                doc! { "_id": oid(post.post), "author": &post.author },
                doc! { "$inc": { REPOSTS_COUNT: delta } },
            )
            .await
            .map_err(db_error)?;
        Ok(())
    }

    /// Sets the original's repost count from its reposts, after a takeover.
    pub(in crate::store::mongo) async fn recount_reposts(&self, post: &ReplyTo) -> StoreResult<()> {
        let count = self
            .reposts_coll()
            .count_documents(doc! { "post": oid(post.post) })
            .await
            .map_err(db_error)?;
        self.collection("content")
            .update_one(
                doc! { "_id": oid(post.post), "author": &post.author },
                doc! { "$set": { REPOSTS_COUNT: count as i64 } },
            )
            .await
            .map_err(db_error)?;
        Ok(())
    }

    /// How many reposts stand of each of `posts`, for those with any: one grouped query.
    pub(in crate::store::mongo) async fn repost_counts_of(
        &self,
        posts: &[PostId],
    ) -> StoreResult<std::collections::HashMap<PostId, u64>> {
        let mut counts = std::collections::HashMap::new();
        if posts.is_empty() {
            return Ok(counts);
        }
        let ids: Vec<_> = posts.iter().map(|id| oid(*id)).collect();
        let pipeline = [
            doc! { "$match": { "post": { "$in": ids } } },
            doc! { "$group": { "_id": "$post", "n": { "$sum": 1 } } },
        ];
        let mut cursor = self
            .reposts_coll()
            .aggregate(pipeline)
            .await
            .map_err(db_error)?;
        while let Some(row) = futures::TryStreamExt::try_next(&mut cursor)
            .await
            .map_err(db_error)?
        {
            counts.insert(post_id(row.get("_id"))?, int(&row, "n").max(0) as u64);
        }
        Ok(counts)
    }
}
