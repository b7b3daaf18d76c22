//! The audit's reads on MongoDB, each one index range of at most a page, and the drop of
//! a cache for its repair. Likes are listed per user through the index declared here.

use async_trait::async_trait;
use mongodb::bson::{Bson, Document, doc};

use super::graph::FOLLOWS;
use super::trends::TAGS;
use super::{IndexSpec, MongoStore, all, db_error, index, int, oid, post_from, post_id, user_from};
use crate::domain::{Post, PostId, User};
use crate::store::StoreResult;
use crate::store::audit::{AuditStore, FollowEdge, NotificationKey};

const LIKES: &str = "likes";

pub(super) fn indexes() -> Vec<IndexSpec> {
    vec![(LIKES, index(doc! { "_id.u": 1, "_id.p": 1 }, false))]
}

#[async_trait]
impl AuditStore for MongoStore {
    async fn user_count(&self) -> StoreResult<u64> {
        self.users_coll()
            .estimated_document_count()
            .await
            .map_err(db_error)
    }

    async fn users_after(&self, after: Option<&str>, limit: usize) -> StoreResult<Vec<User>> {
        let filter = match after {
            Some(after) => doc! { "_id": { "$gt": after } },
            None => doc! {},
        };
        let docs = all(self
            .users_coll()
            .find(filter)
            .sort(doc! { "_id": 1 })
            .limit(limit as i64))
        .await?;
        docs.iter().map(user_from).collect()
    }

    async fn follow_edges(
        &self,
        follower: &str,
        after: Option<&str>,
        limit: usize,
    ) -> StoreResult<Vec<FollowEdge>> {
        let mut filter = doc! { "from": follower };
        if let Some(after) = after {
            filter.insert("to", doc! { "$gt": after });
        }
        let docs = all(self
            .collection(FOLLOWS)
            .find(filter)
            .sort(doc! { "from": 1, "to": 1 })
            .limit(limit as i64))
        .await?;
        Ok(docs
            .iter()
            .map(|d| FollowEdge {
                followee: d.get_str("to").unwrap_or_default().to_owned(),
                created_ms: int(d, "created_at"),
                merged: d.get_bool("merged").unwrap_or(false),
            })
            .collect())
    }

    async fn likes_of(
        &self,
        user: &str,
        after: Option<PostId>,
        limit: usize,
    ) -> StoreResult<Vec<PostId>> {
        let mut filter = doc! { "_id.u": user };
        if let Some(after) = after {
            filter.insert("_id.p", doc! { "$gt": oid(after) });
        }
        let docs = all(self
            .collection(LIKES)
            .find(filter)
            .sort(doc! { "_id.u": 1, "_id.p": 1 })
            .limit(limit as i64))
        .await?;
        docs.iter()
            .map(|d| post_id(d.get_document("_id").ok().and_then(|id| id.get("p"))))
            .collect()
    }

    async fn posts_after(&self, after: Option<PostId>, limit: usize) -> StoreResult<Vec<Post>> {
        let filter = match after {
            Some(after) => doc! { "_id": { "$gt": oid(after) } },
            None => doc! {},
        };
        let docs = all(self
            .content_coll()
            .find(filter)
            .sort(doc! { "_id": 1 })
            .limit(limit as i64))
        .await?;
        docs.iter().map(post_from).collect()
    }

    async fn tag_totals(
        &self,
        after: Option<&str>,
        limit: usize,
    ) -> StoreResult<Vec<(String, u64)>> {
        let filter = match after {
            Some(after) => doc! { "_id": { "$gt": after } },
            None => doc! {},
        };
        let docs = all(self
            .collection(TAGS)
            .find(filter)
            .sort(doc! { "_id": 1 })
            .limit(limit as i64)
            .projection(doc! { "total": 1 }))
        .await?;
        Ok(docs
            .iter()
            .filter_map(|d| match d.get("_id") {
                Some(Bson::String(tag)) => Some((tag.clone(), int(d, "total").max(0) as u64)),
                _ => None,
            })
            .collect())
    }

    async fn tag_index_totals(
        &self,
        after: Option<&str>,
        limit: usize,
    ) -> StoreResult<Vec<(String, u64)>> {
        super::content::tags::index_totals(self, after, limit).await
    }

    async fn reindex_tags(&self) -> StoreResult<u64> {
        super::content::tags::reindex(self).await
    }

    async fn timelines_holding(&self, post: PostId, limit: usize) -> StoreResult<Vec<String>> {
        let mut users = Vec::new();
        let owner = |coll: &str, d: &Document| -> Option<String> {
            match coll {
                "timed_buckets" => d
                    .get_document("_id")
                    .ok()
                    .and_then(|id| id.get_str("u").ok())
                    .map(str::to_owned),
                "sized_buckets" => d.get_str("u").ok().map(str::to_owned),
                _ => d.get_str("_id").ok().map(str::to_owned),
            }
        };
        for coll in ["timeline_cache", "timed_buckets", "sized_buckets"] {
            let docs = all(self
                .collection(coll)
                .find(doc! { "c._id": oid(post) })
                .limit(limit as i64)
                .projection(doc! { "_id": 1, "u": 1 }))
            .await?;
            users.extend(docs.iter().filter_map(|d| owner(coll, d)));
        }
        users.sort_unstable();
        users.dedup();
        users.truncate(limit);
        Ok(users)
    }

    async fn notifications_held(
        &self,
        keys: &[NotificationKey],
    ) -> StoreResult<Vec<NotificationKey>> {
        let mut held = Vec::new();
        for chunk in keys.chunks(500) {
            let ids: Vec<String> = chunk
                .iter()
                .map(|(user, kind, actor, post)| {
                    super::notifications::key(user, *kind, actor, *post)
                })
                .collect();
            let users: Vec<&str> = chunk.iter().map(|k| k.0.as_str()).collect();
            let docs = all(self
                .collection("notifications")
                .find(doc! {
                    "user": { "$in": users }, "_id": { "$in": &ids }, "removed": { "$ne": true },
                })
                .projection(doc! { "_id": 1 }))
            .await?;
            let found: std::collections::HashSet<&str> =
                docs.iter().filter_map(|d| d.get_str("_id").ok()).collect();
            held.extend(
                chunk
                    .iter()
                    .zip(&ids)
                    .filter(|(_, id)| found.contains(id.as_str()))
                    .map(|(key, _)| key.clone()),
            );
        }
        Ok(held)
    }

    async fn reply_counts(&self, parents: &[PostId]) -> StoreResult<Vec<(PostId, u64)>> {
        let mut counts = Vec::new();
        for chunk in parents.chunks(1000) {
            counts.extend(self.reply_counts_of(chunk).await?);
        }
        Ok(counts)
    }

    async fn repost_counts(&self, posts: &[PostId]) -> StoreResult<Vec<(PostId, u64)>> {
        let mut counts = Vec::new();
        for chunk in posts.chunks(1000) {
            counts.extend(self.repost_counts_of(chunk).await?);
        }
        Ok(counts)
    }

    async fn drop_cache(&self, user: &str) -> StoreResult<bool> {
        let deleted = self
            .cache_coll()
            .delete_one(doc! { "_id": user })
            .await
            .map_err(db_error)?;
        Ok(deleted.deleted_count > 0)
    }
}
