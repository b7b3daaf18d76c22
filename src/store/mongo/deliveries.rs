//! Delivery markers on MongoDB: `deliveries` `{_id: post id}`. (Not watched by the change
//! feed, so marking a post writes nothing a worker reads back.)

use async_trait::async_trait;
use mongodb::bson::{doc, oid::ObjectId};

use super::{MongoStore, all, insert_new, oid, post_id};
use crate::domain::PostId;
use crate::store::{DeliveryStore, StoreResult};

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
}
