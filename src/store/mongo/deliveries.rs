//! Delivery markers on MongoDB: `deliveries` `{_id: post id}`. (Not watched by the change
//! feed, so marking a post writes nothing a worker reads back.)

use std::collections::HashSet;

use async_trait::async_trait;
use mongodb::Collection;
use mongodb::bson::{Document, doc, oid::ObjectId};

use super::{MongoStore, all, db_error, insert_new, oid, post_id};
use crate::domain::PostId;
use crate::store::{ContentStore, DeliveryStore, RepostStore, StoreResult};

const DELIVERIES: &str = "deliveries";

#[async_trait]
impl DeliveryStore for MongoStore {
    async fn mark_delivered(&self, post: PostId) -> StoreResult<()> {
        insert_new(&self.collection(DELIVERIES), doc! { "_id": oid(post) }, &[]).await?;
        Ok(())
    }

    async fn delivered(&self, posts: &[PostId]) -> StoreResult<Vec<PostId>> {
        if posts.is_empty() {
            return Ok(Vec::new());
        }
        let ids: Vec<ObjectId> = posts.iter().map(|p| oid(*p)).collect();
        let docs = all(self
            .collection(DELIVERIES)
            .find(doc! { "_id": { "$in": ids } }))
        .await?;
        docs.iter().map(|d| post_id(d.get("_id"))).collect()
    }

    /// Pages of `content` ids in `_id` order, each checked against the markers with one
    /// `$in` lookup, until `limit` unmarked ones are found or the posts run out.
    async fn undelivered(&self, after: Option<PostId>, limit: usize) -> StoreResult<Vec<PostId>> {
        let mut found = Vec::new();
        let mut after = after;
        while found.len() < limit {
            let page = self.ids_after(&self.content_coll(), after, limit).await?;
            let Some(last) = page.last().copied() else {
                break;
            };
            let marked: HashSet<PostId> = self.delivered(&page).await?.into_iter().collect();
            found.extend(page.into_iter().filter(|id| !marked.contains(id)));
            after = Some(last);
        }
        found.truncate(limit);
        Ok(found)
    }

    /// Pages of `reposts` ids in `_id` order, checked against the markers like posts.
    async fn undelivered_reposts(
        &self,
        after: Option<PostId>,
        limit: usize,
    ) -> StoreResult<Vec<PostId>> {
        let mut found = Vec::new();
        let mut after = after;
        let reposts = self.collection(crate::domain::REPOSTS);
        while found.len() < limit {
            let page = self.ids_after(&reposts, after, limit).await?;
            let Some(last) = page.last().copied() else {
                break;
            };
            let marked: HashSet<PostId> = self.delivered(&page).await?.into_iter().collect();
            found.extend(page.into_iter().filter(|id| !marked.contains(id)));
            after = Some(last);
        }
        found.truncate(limit);
        Ok(found)
    }

    /// Pages of markers in `_id` order, each checked against the posts and the reposts
    /// with one `$in` lookup of each `_id` index, until `limit` orphans are found or
    /// the markers run out.
    async fn orphaned(&self, after: Option<PostId>, limit: usize) -> StoreResult<Vec<PostId>> {
        let mut found = Vec::new();
        let mut after = after;
        while found.len() < limit {
            let page = self
                .ids_after(&self.collection(DELIVERIES), after, limit)
                .await?;
            let Some(last) = page.last().copied() else {
                break;
            };
            let mut existing: HashSet<PostId> =
                self.existing_posts(&page, &[]).await?.into_iter().collect();
            let reposts = self.reposts_by_ids(&page).await?;
            existing.extend(reposts.into_iter().map(|r| r.id));
            found.extend(page.into_iter().filter(|id| !existing.contains(id)));
            after = Some(last);
        }
        found.truncate(limit);
        Ok(found)
    }

    async fn unmark(&self, posts: &[PostId]) -> StoreResult<()> {
        if posts.is_empty() {
            return Ok(());
        }
        let ids: Vec<ObjectId> = posts.iter().map(|p| oid(*p)).collect();
        self.collection(DELIVERIES)
            .delete_many(doc! { "_id": { "$in": ids } })
            .await
            .map_err(db_error)?;
        Ok(())
    }
}

impl MongoStore {
    /// Up to `limit` ObjectId `_id`s of `collection` after `after`, ascending.
    async fn ids_after(
        &self,
        collection: &Collection<Document>,
        after: Option<PostId>,
        limit: usize,
    ) -> StoreResult<Vec<PostId>> {
        let filter = match after {
            Some(after) => doc! { "_id": { "$gt": oid(after) } },
            None => doc! {},
        };
        let docs = all(collection
            .find(filter)
            .sort(doc! { "_id": 1 })
            .limit(limit.max(1) as i64)
            .projection(doc! { "_id": 1 }))
        .await?;
        docs.iter().map(|d| post_id(d.get("_id"))).collect()
    }
}
