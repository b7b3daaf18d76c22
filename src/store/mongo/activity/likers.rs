//! The likers of a post, newest first, by the index `{_id.p: 1, createdAt: -1, _id.u:
//! -1}` on `likes`: one range from the cursor, in the index's order (or, for the page
//! just newer than the cursor, against it); and which of a set of likes still stand, by
//! their `_id`s.

use futures::TryStreamExt;
use mongodb::bson::{Document, doc};

use super::super::{MongoStore, db_error, oid};
use crate::domain::PostId;
use crate::store::{Liker, StoreResult};

pub(super) fn index() -> Document {
    doc! { "_id.p": 1, "createdAt": -1, "_id.u": -1 }
}

impl MongoStore {
    /// Which of `likes` stand, a thousand keys a query.
    pub(super) async fn likes_standing_of(
        &self,
        likes: &[(String, PostId)],
    ) -> StoreResult<Vec<(String, PostId)>> {
        let mut standing = Vec::new();
        for chunk in likes.chunks(1000) {
            // `_id` is `{u, p}` in that order, so the keys match as whole documents.
            let keys: Vec<Document> = chunk
                .iter()
                .map(|(user, post)| doc! { "u": user, "p": oid(*post) })
                .collect();
            let mut found = self
                .db
                .collection::<Document>("likes")
                .find(doc! { "_id": { "$in": keys } })
                .projection(doc! { "_id": 1 })
                .await
                .map_err(db_error)?;
            while let Some(like) = found.try_next().await.map_err(db_error)? {
                let Ok(key) = like.get_document("_id") else {
                    continue;
                };
                let user = key.get_str("u").unwrap_or_default().to_owned();
                standing.push((user, super::super::post_id(key.get("p"))?));
            }
        }
        Ok(standing)
    }

    pub(super) async fn likers_of(
        &self,
        post: PostId,
        before: Option<&Liker>,
        limit: usize,
    ) -> StoreResult<Vec<Liker>> {
        self.likers_from(post, before, "$lt", -1, limit).await
    }

    /// Who likes `post` beyond `cursor` by `op` (`$lt`: older, `$gt`: newer), in
    /// `order` (-1: newest first, 1: oldest first), one range of the index.
    pub(super) async fn likers_from(
        &self,
        post: PostId,
        cursor: Option<&Liker>,
        op: &str,
        order: i32,
        limit: usize,
    ) -> StoreResult<Vec<Liker>> {
        let mut filter = doc! { "_id.p": oid(post) };
        if let Some(b) = cursor {
            filter.insert(
                "$or",
                vec![
                    doc! { "createdAt": { op: b.at_ms } },
                    doc! { "createdAt": b.at_ms, "_id.u": { op: &b.user } },
                ],
            );
        }
        let mut found = self
            .db
            .collection::<Document>("likes")
            .find(filter)
            .sort(doc! { "createdAt": order, "_id.u": order })
            .limit(limit as i64)
            .await
            .map_err(db_error)?;
        let mut likers = Vec::new();
        while let Some(like) = found.try_next().await.map_err(db_error)? {
            let user = like
                .get_document("_id")
                .ok()
                .and_then(|id| id.get_str("u").ok())
                .unwrap_or_default()
                .to_owned();
            likers.push(Liker {
                user,
                at_ms: super::super::int(&like, "createdAt"),
            });
        }
        Ok(likers)
    }
}

impl MongoStore {
    /// `ActivityStore::like_counts`: one `$group` over the likes of `posts`.
    pub(super) async fn like_counts_of(&self, posts: &[PostId]) -> StoreResult<Vec<(PostId, u64)>> {
        if posts.is_empty() {
            return Ok(Vec::new());
        }
        let ids: Vec<_> = posts.iter().map(|p| oid(*p)).collect();
        let pipeline = [
            doc! { "$match": { "_id.p": { "$in": ids } } },
            doc! { "$group": { "_id": "$_id.p", "n": { "$sum": 1 } } },
        ];
        let mut found = self
            .db
            .collection::<Document>("likes")
            .aggregate(pipeline)
            .await
            .map_err(db_error)?;
        let mut counts = Vec::new();
        while let Some(group) = found.try_next().await.map_err(db_error)? {
            let post = super::super::post_id(group.get("_id"))?;
            counts.push((post, super::super::int(&group, "n").max(0) as u64));
        }
        Ok(counts)
    }
}
