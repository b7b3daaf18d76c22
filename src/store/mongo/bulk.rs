//! The bulk port on MongoDB: each batch is one unordered `insert_many`, whose duplicate
//! keys (rows a re-run finds) are skipped; derived data is written with unordered
//! `insert_many` and with batched unordered `update` commands (the wire protocol's bulk
//! write: many statements in one round trip; the driver's `Client::bulk_write` needs a
//! MongoDB 8.0 server). The load's mark, and the servers registered, are the `bulk_load`
//! collection's one document (`bulk/gate.rs`).
//!
//! Sources written in bulk still reach the oplog, and so the change streams; moving
//! every worker's position to the head afterwards is what keeps the workers from
//! applying them again.

mod buckets;
mod derive;
mod feed;
mod gate;
mod notifications;
mod sources;

pub(super) use gate::Registration;

use async_trait::async_trait;
use mongodb::Collection;
use mongodb::bson::{Bson, Document, doc};
use mongodb::error::ErrorKind;

use super::leases::LEASES;
use super::{MongoStore, db_error, oid};
use crate::domain::now_ms;
use crate::store::bulk::{
    BulkStore, DeriveSettings, Derived, Exclusion, FollowRow, LikeRow, PostRow, RelationRow,
    RepostRow, Rows, StepReport, TokenRow, UserRow,
};
use crate::store::leases::initial_version;
use crate::store::{ChangeFeed, StoreError, StoreResult};

const MARK: &str = "bulk_load";
/// Statements per `update` command, documents per `insert_many` of derived data.
pub(super) const WRITE_BATCH: usize = 1000;

/// Inserts `docs` unordered; documents whose `_id` exists are skipped. Returns how many
/// were inserted.
pub(super) async fn insert_unordered(
    coll: &Collection<Document>,
    docs: Vec<Document>,
) -> StoreResult<u64> {
    if docs.is_empty() {
        return Ok(0);
    }
    let total = docs.len() as u64;
    match coll.insert_many(docs).ordered(false).await {
        Ok(result) => Ok(result.inserted_ids.len() as u64),
        Err(error) => match error.kind.as_ref() {
            ErrorKind::InsertMany(failure)
                if failure.write_concern_error.is_none()
                    && failure
                        .write_errors
                        .as_ref()
                        .is_some_and(|errors| errors.iter().all(|e| e.code == 11000)) =>
            {
                let duplicates = failure.write_errors.as_ref().map_or(0, Vec::len) as u64;
                Ok(total.saturating_sub(duplicates))
            }
            _ => Err(db_error(error)),
        },
    }
}

impl MongoStore {
    /// Sends `statements` (`{q, u, upsert?}`) to `collection` as unordered `update`
    /// commands of [`WRITE_BATCH`] statements each.
    pub(super) async fn update_batches(
        &self,
        collection: &str,
        statements: Vec<Document>,
    ) -> StoreResult<()> {
        let mut statements = statements.into_iter().peekable();
        while statements.peek().is_some() {
            let batch: Vec<Document> = statements.by_ref().take(WRITE_BATCH).collect();
            let reply = self
                .db
                .run_command(doc! {
                    "update": collection,
                    "updates": batch,
                    "ordered": false,
                    "writeConcern": { "w": "majority", "j": true },
                })
                .await
                .map_err(db_error)?;
            if let Ok(errors) = reply.get_array("writeErrors")
                && let Some(first) = errors.first()
            {
                return Err(StoreError::Backend(anyhow::anyhow!(
                    "{} of a bulk update of {collection} failed, the first: {first}",
                    errors.len()
                )));
            }
        }
        Ok(())
    }

    /// The newest oplog entry as a change's `seq` (`time << 32 | increment`), at majority.
    pub(super) async fn head_seq(&self) -> StoreResult<i64> {
        Ok(super::changes::majority_head(&self.db)
            .await?
            .map_or(0, |t| {
                ((u64::from(t.time) << 32) | u64::from(t.increment)) as i64
            }))
    }

    /// Releases lease `name` at a new version with `position` committed.
    async fn reset_lease(&self, name: &str, position: &str) -> StoreResult<()> {
        let leases = self.collection(LEASES);
        let moved = leases
            .update_one(
                doc! { "_id": name },
                doc! {
                    "$set": { "holder": Bson::Null, "expires_at": 0_i64, "position": position },
                    "$inc": { "version": 1_i64 },
                },
            )
            .await
            .map_err(db_error)?;
        if moved.matched_count > 0 {
            return Ok(());
        }
        let created = doc! {
            "_id": name, "holder": Bson::Null, "expires_at": 0_i64, "position": position,
            "version": initial_version(now_ms()) as i64,
        };
        insert_unordered(&leases, vec![created]).await?;
        Ok(())
    }
}

#[async_trait]
impl BulkStore for MongoStore {
    async fn enter_serving(&self, holder: &str) -> StoreResult<Result<(), Exclusion>> {
        gate::enter_serving(self, holder).await
    }

    async fn leave_serving(&self) -> StoreResult<()> {
        gate::leave_serving(self).await
    }

    async fn begin_load(&self, at_ms: i64) -> StoreResult<Result<(), Exclusion>> {
        gate::begin_load(self, at_ms).await
    }

    async fn load_in_progress(&self) -> StoreResult<Option<i64>> {
        gate::load_started(&self.collection(MARK)).await
    }

    async fn insert_users(&self, rows: Rows<UserRow>) -> StoreResult<u64> {
        let docs = rows
            .rows()
            .iter()
            .map(|r| {
                doc! {
                    "_id": rows.str(r.id), "display_name": rows.str(r.display_name),
                    "followers_count": 0_i64, "following_count": 0_i64, "posts_count": 0_i64,
                    "created_at": r.created_at_ms, "version": 0_i64,
                }
            })
            .collect();
        let added = insert_unordered(&self.users_coll(), docs).await?;
        let ids: Vec<String> = rows
            .rows()
            .iter()
            .map(|r| rows.str(r.id).to_owned())
            .collect();
        super::name_words::load(&self.db, &ids).await?;
        Ok(added)
    }

    async fn insert_follows(&self, rows: Rows<FollowRow>) -> StoreResult<u64> {
        let docs = rows
            .rows()
            .iter()
            .map(|r| {
                let (from, to) = (rows.str(r.follower), rows.str(r.followee));
                doc! {
                    "_id": format!("{from}/{to}"), "from": from, "to": to,
                    "created_at": r.created_at_ms, "backfilled": true,
                }
            })
            .collect();
        insert_unordered(&self.collection(super::graph::FOLLOWS), docs).await
    }

    async fn insert_posts(&self, rows: Rows<PostRow>) -> StoreResult<u64> {
        let docs = rows
            .rows()
            .iter()
            .map(|r| {
                let mut post =
                    doc! { "_id": oid(r.id), "author": rows.str(r.author), "text": rows.str(r.text) };
                // The parent's author is filled in when the load derives (`sources.rs`).
                if let Some(parent) = r.reply_to {
                    post.insert(super::threads::REPLY_TO, doc! { "post": oid(parent) });
                }
                super::content::tags::with_tags(&mut post, rows.str(r.text));
                post
            })
            .collect();
        // Ids this process hands out afterwards stay above the loaded ones.
        if let Some(newest) = rows.rows().iter().map(|r| r.id).max() {
            self.ids.observe(newest);
        }
        insert_unordered(&self.content_coll(), docs).await
    }

    async fn insert_likes(&self, rows: Rows<LikeRow>) -> StoreResult<u64> {
        let docs = rows
            .rows()
            .iter()
            .map(|r| {
                doc! {
                    "_id": { "u": rows.str(r.user), "p": oid(r.post) },
                    "createdAt": r.created_at_ms,
                }
            })
            .collect();
        insert_unordered(&self.collection("likes"), docs).await
    }

    async fn insert_tokens(&self, rows: Rows<TokenRow>) -> StoreResult<u64> {
        let docs = rows
            .rows()
            .iter()
            .map(|r| {
                doc! {
                    "_id": hex::encode(r.hash), "user": rows.str(r.user),
                    "token_id": rows.str(r.token_id), "created_at": r.created_at_ms,
                }
            })
            .collect();
        insert_unordered(&self.collection(super::tokens::TOKENS), docs).await
    }

    async fn insert_relations(&self, rows: Rows<RelationRow>) -> StoreResult<u64> {
        sources::insert_relations(self, &rows).await
    }

    async fn insert_reposts(&self, rows: Rows<RepostRow>) -> StoreResult<u64> {
        sources::insert_reposts(self, &rows).await
    }

    async fn derive_all(
        &self,
        settings: &DeriveSettings,
        step: StepReport,
    ) -> StoreResult<Derived> {
        derive::derive_all(self, settings, step).await
    }

    async fn derive_timelines(
        &self,
        feed: &crate::store::bulk::TimelineLayout,
        step: StepReport,
    ) -> StoreResult<Derived> {
        derive::derive_timelines(self, feed, step).await
    }

    async fn feed_record(&self) -> StoreResult<Option<String>> {
        feed::record(self).await
    }

    async fn record_feed(&self, record: &str) -> StoreResult<()> {
        feed::set_record(self, record).await
    }

    /// Change workers at the feed's head; the event log's reader at the newest oplog
    /// entry's time, past which every event id (a change's cluster time) lies.
    async fn set_positions_to_head(
        &self,
        change_workers: &[&str],
        event_workers: &[&str],
    ) -> StoreResult<()> {
        let head = self
            .head()
            .await?
            .ok_or_else(|| StoreError::Backend(anyhow::anyhow!("the oplog is empty")))?;
        for name in change_workers {
            self.reset_lease(name, &head.0).await?;
        }
        let events = self.head_seq().await?.to_string();
        for name in event_workers {
            self.reset_lease(name, &events).await?;
        }
        Ok(())
    }

    async fn finish_load(&self) -> StoreResult<()> {
        gate::finish_load(self).await
    }
}
