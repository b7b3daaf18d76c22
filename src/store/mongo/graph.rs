//! The follow graph on MongoDB: `following` `{_id: "a/b", from: a, to: b}` and its
//! twin `followers` `{_id: "a/b", from: b, to: a}`, each unique on `{from, to}`.

use async_trait::async_trait;
use mongodb::bson::doc;

use super::{IndexSpec, MongoStore, db_error, index, is_duplicate_key};
use crate::store::{GraphStore, StoreError, StoreResult};

pub(super) fn indexes() -> Vec<IndexSpec> {
    vec![
        ("following", index(doc! { "from": 1, "to": 1 }, true)),
        ("followers", index(doc! { "from": 1, "to": 1 }, true)),
    ]
}

#[async_trait]
impl GraphStore for MongoStore {
    async fn follow(&self, follower: &str, followee: &str, now_ms: i64) -> StoreResult<bool> {
        for id in [follower, followee] {
            if !self.exists("users", doc! { "_id": id }).await? {
                return Err(StoreError::NotFound(format!("user {id}")));
            }
        }
        // The reverse edge first (an idempotent upsert), then the forward edge, whose
        // insert decides whether this call added the follow and so moves the counters.
        // A crash between the insert and the counters leaves them one short; the change
        // feed carries the edge, so a repair job can recount.
        let key = format!("{follower}/{followee}");
        self.collection("followers")
            .update_one(
                doc! { "_id": &key },
                doc! { "$setOnInsert": { "from": followee, "to": follower, "created_at": now_ms } },
            )
            .upsert(true)
            .await
            .map_err(db_error)?;
        let edge = doc! { "_id": &key, "from": follower, "to": followee, "created_at": now_ms };
        match self.collection("following").insert_one(edge).await {
            Ok(_) => {}
            Err(error) if is_duplicate_key(&error) => return Ok(false),
            Err(error) => return Err(db_error(error)),
        }
        self.inc_user(follower, "following_count", 1).await?;
        self.inc_user(followee, "followers_count", 1).await?;
        Ok(true)
    }

    async fn unfollow(&self, follower: &str, followee: &str) -> StoreResult<bool> {
        let key = format!("{follower}/{followee}");
        let removed = self
            .collection("following")
            .delete_one(doc! { "_id": &key })
            .await
            .map_err(db_error)?;
        self.collection("followers")
            .delete_one(doc! { "_id": &key })
            .await
            .map_err(db_error)?;
        if removed.deleted_count == 0 {
            return Ok(false);
        }
        self.inc_user(follower, "following_count", -1).await?;
        self.inc_user(followee, "followers_count", -1).await?;
        Ok(true)
    }

    async fn following(
        &self,
        user: &str,
        after: Option<&str>,
        limit: usize,
    ) -> StoreResult<Vec<String>> {
        self.ids_from("following", user, after, limit).await
    }

    async fn followers(
        &self,
        user: &str,
        after: Option<&str>,
        limit: usize,
    ) -> StoreResult<Vec<String>> {
        self.ids_from("followers", user, after, limit).await
    }
}
