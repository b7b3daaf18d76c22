//! The follow graph on MongoDB: one document per edge in `follows`
//! `{_id: "a/b", from: a, to: b, created_at}`, unique on `{from, to}` and indexed
//! `{to, from}` for the followers' side.
//!
//! One document per pair means the two directions can never disagree: there is no twin
//! to keep in step, so no interleaving of follows and unfollows can leave a "following"
//! edge without its "followers" edge (the layout before this one kept two collections,
//! and a follow racing an unfollow broke them apart). Each counter move is tied to the
//! operation that actually inserted or deleted the edge (the insert's duplicate key, the
//! delete's count), so under any interleaving the counters equal the edges once the
//! calls return; a crash between the edge and its counters is repaired from the change
//! feed.

use async_trait::async_trait;
use futures::TryStreamExt;
use mongodb::Database;
use mongodb::bson::{Document, doc};
use mongodb::options::InsertManyOptions;

use super::{IndexSpec, MongoStore, Side, db_error, index, insert_new, is_duplicate_key};
use crate::store::{GraphStore, StoreError, StoreResult};

pub(super) const FOLLOWS: &str = "follows";

pub(super) fn indexes() -> Vec<IndexSpec> {
    vec![
        (FOLLOWS, index(doc! { "from": 1, "to": 1 }, true)),
        (FOLLOWS, index(doc! { "to": 1, "from": 1 }, false)),
    ]
}

/// Copies a graph kept in the earlier two-collection layout (`following`, `followers`)
/// into `follows` once, when `follows` is still empty. Idempotent: a copy interrupted
/// half-way is finished by the next start (duplicates are skipped). The old collections
/// are left for the operator to drop.
pub(super) async fn migrate(db: &Database) -> anyhow::Result<()> {
    let follows = db.collection::<Document>(FOLLOWS);
    let old = db.collection::<Document>("following");
    if follows.find_one(doc! {}).await?.is_some() || old.find_one(doc! {}).await?.is_none() {
        return Ok(());
    }
    let edges: Vec<Document> = old.find(doc! {}).await?.try_collect().await?;
    let copied = edges.len();
    for chunk in edges.chunks(1000) {
        let options = InsertManyOptions::builder().ordered(false).build();
        match follows.insert_many(chunk).with_options(options).await {
            Ok(_) => {}
            Err(error) if is_duplicate_key(&error) => {}
            Err(error) => return Err(error.into()),
        }
    }
    tracing::warn!(
        copied,
        "copied the follow graph from `following` into `follows`; `following` and `followers` are no longer used and can be dropped"
    );
    Ok(())
}

#[async_trait]
impl GraphStore for MongoStore {
    async fn follow(&self, follower: &str, followee: &str, now_ms: i64) -> StoreResult<bool> {
        for id in [follower, followee] {
            if !self.exists("users", doc! { "_id": id }).await? {
                return Err(StoreError::NotFound(format!("user {id}")));
            }
        }
        // The insert decides whether this call added the follow, and so whether it moves
        // the counters.
        let key = format!("{follower}/{followee}");
        let edge = doc! { "_id": &key, "from": follower, "to": followee, "created_at": now_ms };
        if !insert_new(&self.collection(FOLLOWS), edge, &["from", "to"]).await? {
            return Ok(false);
        }
        self.inc_user(follower, "following_count", 1).await?;
        self.inc_user(followee, "followers_count", 1).await?;
        Ok(true)
    }

    async fn unfollow(&self, follower: &str, followee: &str) -> StoreResult<bool> {
        let key = format!("{follower}/{followee}");
        let removed = self
            .collection(FOLLOWS)
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

    async fn edge(&self, follower: &str, followee: &str) -> StoreResult<Option<bool>> {
        let key = format!("{follower}/{followee}");
        let found = self
            .collection(FOLLOWS)
            .find_one(doc! { "_id": &key })
            .projection(doc! { "backfilled": 1 })
            .await
            .map_err(db_error)?;
        Ok(found.map(|edge| edge.get_bool("backfilled").unwrap_or(false)))
    }

    /// An update of the edge reaches the feed as an update, which no worker acts on.
    async fn mark_backfilled(&self, follower: &str, followee: &str) -> StoreResult<()> {
        let key = format!("{follower}/{followee}");
        self.collection(FOLLOWS)
            .update_one(
                doc! { "_id": &key, "backfilled": { "$ne": true } },
                doc! { "$set": { "backfilled": true } },
            )
            .await
            .map_err(db_error)?;
        Ok(())
    }

    async fn following(
        &self,
        user: &str,
        after: Option<&str>,
        limit: usize,
    ) -> StoreResult<Vec<String>> {
        self.neighbours(Side::Followees, user, after, limit).await
    }

    async fn followers(
        &self,
        user: &str,
        after: Option<&str>,
        limit: usize,
    ) -> StoreResult<Vec<String>> {
        self.neighbours(Side::Followers, user, after, limit).await
    }
}
