//! Listings of posts across authors: the public timeline, by `_id`.

use mongodb::bson::{Document, doc};

use super::super::{MongoStore, all, oid, post_from};
use crate::domain::Post;
use crate::store::{PostRange, StoreResult};

/// The `_id` bound and sort of a listing in `range`.
pub(super) fn bound(range: PostRange) -> (Option<Document>, Document) {
    match range {
        PostRange::Older(before) => (before.map(|b| doc! { "$lt": oid(b) }), doc! { "_id": -1 }),
        PostRange::Newer(after) => (Some(doc! { "$gt": oid(after) }), doc! { "_id": 1 }),
    }
}

impl MongoStore {
    /// Every post in `range`, at most `limit`, in its order: a walk of the `_id` index.
    /// On a cluster sharded on `{author: 1, _id: 1}` this goes to every shard, each
    /// walking its own `_id` index, and mongos merges the sorted streams.
    pub(super) async fn listed_posts(
        &self,
        range: PostRange,
        limit: usize,
    ) -> StoreResult<Vec<Post>> {
        let (ids, sort) = bound(range);
        let mut filter = doc! {};
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
