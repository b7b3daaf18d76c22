//! The reposts standing of a page of posts, counted in one grouped query (for the
//! recount of every post's `reposts_count`; its moves and single recounts are in
//! `post_counts.rs`).

use mongodb::bson::doc;

use super::super::{MongoStore, db_error, int, oid, post_id};
use crate::domain::PostId;
use crate::store::StoreResult;

impl MongoStore {
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
