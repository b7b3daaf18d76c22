//! Blocks and mutes on MongoDB: one document per relation,
//! `blocks {_id: "user/other", user, other, created_ms}` and
//! `mutes {_id: "user/other", user, other, created_ms, notifications, until_ms}`, both
//! sharded on `user` (the blocker or muter), which every write carries in its filter.
//! "Who blocks me" is a find on the `{other, user}` index of `blocks`: a scatter to
//! every shard under the `user` key, one per timeline page (see docs/mongodb.md).
//!
//! No multi-document transactions (see ARCHITECTURE.md), so a block and a follow are
//! ordered instead (`intents`): a block stores its document, then waits out the
//! follows that declared an intent on the pair before it deletes the edges; a follow
//! declares its intent, then looks for a block before it inserts its edge. Whichever way
//! they interleave, either the follow sees the block and writes nothing, or the block
//! sees the intent and deletes the edge once it stands.
//!
//! MongoDB keeps no cache versions, so no page is kept over this store (see
//! `TimelineStore::cache_version`): nothing to move here.

use async_trait::async_trait;
use mongodb::bson::{Bson, Document, doc};

use super::{IndexSpec, MongoStore, all, db_error, index, insert_new, int};
use crate::domain::relations::{Hidden, MuteSettings, Relation};
use crate::store::relations::{Blocked, RelationCursor};
use crate::store::{GraphStore, RelationStore, StoreError, StoreResult};

pub(super) const BLOCKS: &str = "blocks";
pub(super) const MUTES: &str = "mutes";

pub(super) fn indexes() -> Vec<IndexSpec> {
    vec![
        (BLOCKS, index(doc! { "user": 1, "other": 1 }, true)),
        (BLOCKS, index(doc! { "other": 1, "user": 1 }, false)),
        (
            BLOCKS,
            index(doc! { "user": 1, "created_ms": -1, "other": -1 }, false),
        ),
        (MUTES, index(doc! { "user": 1, "other": 1 }, true)),
        (
            MUTES,
            index(doc! { "user": 1, "created_ms": -1, "other": -1 }, false),
        ),
    ]
}

/// The `_id` of a relation between a pair, and of a follow intent on it (`intents`).
pub(super) fn key(user: &str, other: &str) -> String {
    format!("{user}/{other}")
}

/// The filter of the keyset page after `after`, newest first.
fn page_filter(user: &str, after: Option<RelationCursor>) -> Document {
    cursor_filter(user, after, "$lt")
}

/// `user`'s relations beyond the cursor by `op`: `$lt` older, `$gt` newer.
fn cursor_filter(user: &str, after: Option<RelationCursor>, op: &str) -> Document {
    let mut filter = doc! { "user": user };
    if let Some((ms, other)) = after {
        filter.insert(
            "$or",
            vec![
                doc! { "created_ms": { op: ms } },
                doc! { "created_ms": ms, "other": { op: other } },
            ],
        );
    }
    filter
}

fn mute_settings(doc: &Document) -> MuteSettings {
    MuteSettings {
        notifications: doc.get_bool("notifications").unwrap_or(true),
        until_ms: match doc.get("until_ms") {
            Some(Bson::Int64(ms)) => Some(*ms),
            Some(Bson::Int32(ms)) => Some(i64::from(*ms)),
            _ => None,
        },
    }
}

fn standing(now_ms: i64) -> Document {
    doc! { "$or": [ { "until_ms": Bson::Null }, { "until_ms": { "$gt": now_ms } } ] }
}

impl MongoStore {
    /// One page of blocks or mutes (`coll`) by `filter`, on the index `{user: 1,
    /// created_ms: -1, other: -1}`: newest first (`order` -1) or oldest first (1).
    async fn relation_page(
        &self,
        coll: &str,
        filter: Document,
        order: i32,
        limit: usize,
    ) -> StoreResult<Vec<Relation>> {
        let docs = all(self
            .collection(coll)
            .find(filter)
            .sort(doc! { "created_ms": order, "other": order })
            .limit(limit as i64))
        .await?;
        Ok(docs
            .iter()
            .filter_map(|d| {
                Some(Relation {
                    other: d.get_str("other").ok()?.to_owned(),
                    created_ms: int(d, "created_ms"),
                    mute: (coll == MUTES).then(|| mute_settings(d)),
                })
            })
            .collect())
    }

    /// Whether a block stands between `a` and `b`, either way (two shard-targeted
    /// `_id` lookups in one find).
    pub(super) async fn blocked_between(&self, a: &str, b: &str) -> StoreResult<bool> {
        let filter = doc! { "$or": [
            { "user": a, "_id": key(a, b) },
            { "user": b, "_id": key(b, a) },
        ] };
        super::exists(&self.collection(BLOCKS), filter).await
    }

    async fn known(&self, ids: [&str; 2]) -> StoreResult<()> {
        for id in ids {
            if !self.exists("users", doc! { "_id": id }).await? {
                return Err(StoreError::NotFound(format!("user {id}")));
            }
        }
        Ok(())
    }
}

#[async_trait]
impl RelationStore for MongoStore {
    async fn block(&self, user: &str, other: &str, now_ms: i64) -> StoreResult<Blocked> {
        self.known([user, other]).await?;
        let block = doc! {
            "_id": key(user, other), "user": user, "other": other, "created_ms": now_ms,
        };
        let added = insert_new(&self.collection(BLOCKS), block, &["user"]).await?;
        // Between the block and the removal of the edges: a follow that passed its look
        // has an intent this block waits out.
        crate::faults::gate("block.stored", user).await;
        let mut removed = Vec::new();
        let intents = self.collection(super::intents::INTENTS);
        for (from, to) in [(user, other), (other, user)] {
            super::intents::wait_out(&intents, from, to).await?;
            if self.unfollow(from, to).await? {
                removed.push((from.to_owned(), to.to_owned()));
            }
        }
        Ok(Blocked { added, removed })
    }

    async fn unblock(&self, user: &str, other: &str) -> StoreResult<bool> {
        let deleted = self
            .collection(BLOCKS)
            .delete_one(doc! { "user": user, "_id": key(user, other) })
            .await
            .map_err(db_error)?;
        Ok(deleted.deleted_count > 0)
    }

    async fn blocks(&self, user: &str, other: &str) -> StoreResult<bool> {
        super::exists(
            &self.collection(BLOCKS),
            doc! { "user": user, "_id": key(user, other) },
        )
        .await
    }

    async fn blocks_among(&self, pairs: &[(String, String)]) -> StoreResult<Vec<(String, String)>> {
        if pairs.is_empty() {
            return Ok(Vec::new());
        }
        let keys: Vec<String> = pairs.iter().map(|(u, o)| key(u, o)).collect();
        let found = all(self
            .collection(BLOCKS)
            .find(doc! { "_id": { "$in": keys } })
            .projection(doc! { "user": 1, "other": 1 }))
        .await?;
        found
            .iter()
            .map(|d| {
                let field = |k: &str| {
                    d.get_str(k)
                        .map(str::to_owned)
                        .map_err(|e| StoreError::Backend(e.into()))
                };
                Ok((field("user")?, field("other")?))
            })
            .collect()
    }

    async fn mute(
        &self,
        user: &str,
        other: &str,
        settings: MuteSettings,
        now_ms: i64,
    ) -> StoreResult<bool> {
        self.known([user, other]).await?;
        let until = settings.until_ms.map_or(Bson::Null, Bson::Int64);
        let done = self
            .collection(MUTES)
            .update_one(
                doc! { "user": user, "_id": key(user, other) },
                doc! { "$set": {
                    "other": other, "created_ms": now_ms,
                    "notifications": settings.notifications, "until_ms": until,
                } },
            )
            .upsert(true)
            .await
            .map_err(db_error)?;
        Ok(done.upserted_id.is_some())
    }

    async fn unmute(&self, user: &str, other: &str) -> StoreResult<bool> {
        let deleted = self
            .collection(MUTES)
            .delete_one(doc! { "user": user, "_id": key(user, other) })
            .await
            .map_err(db_error)?;
        Ok(deleted.deleted_count > 0)
    }

    async fn block_list(
        &self,
        user: &str,
        after: Option<RelationCursor>,
        limit: usize,
    ) -> StoreResult<Vec<Relation>> {
        self.relation_page(BLOCKS, page_filter(user, after), -1, limit)
            .await
    }

    async fn mute_list(
        &self,
        user: &str,
        after: Option<RelationCursor>,
        now_ms: i64,
        limit: usize,
    ) -> StoreResult<Vec<Relation>> {
        let filter = doc! { "$and": [page_filter(user, after), standing(now_ms)] };
        self.relation_page(MUTES, filter, -1, limit).await
    }

    async fn block_list_newer(
        &self,
        user: &str,
        after: RelationCursor,
        limit: usize,
    ) -> StoreResult<Vec<Relation>> {
        let filter = cursor_filter(user, Some(after), "$gt");
        self.relation_page(BLOCKS, filter, 1, limit).await
    }

    async fn mute_list_newer(
        &self,
        user: &str,
        after: RelationCursor,
        now_ms: i64,
        limit: usize,
    ) -> StoreResult<Vec<Relation>> {
        let filter = doc! { "$and": [cursor_filter(user, Some(after), "$gt"), standing(now_ms)] };
        self.relation_page(MUTES, filter, 1, limit).await
    }

    /// Two finds at once: the blocks either way (`$or` over the `user` and `other`
    /// indexes) and the reader's standing mutes (targeted).
    async fn hidden(&self, reader: &str, now_ms: i64) -> StoreResult<Hidden> {
        let (blocks_coll, mutes_coll) = (self.collection(BLOCKS), self.collection(MUTES));
        let blocks = all(blocks_coll
            .find(doc! { "$or": [ { "user": reader }, { "other": reader } ] })
            .projection(doc! { "user": 1, "other": 1 }));
        let mutes = all(mutes_coll
            .find(doc! { "$and": [ { "user": reader }, standing(now_ms) ] })
            .projection(doc! { "other": 1, "notifications": 1, "until_ms": 1 }));
        let (blocks, mutes) = tokio::try_join!(blocks, mutes)?;
        let mut hidden = Hidden::default();
        for b in &blocks {
            let (Ok(user), Ok(other)) = (b.get_str("user"), b.get_str("other")) else {
                continue;
            };
            hidden.add_block(if user == reader { other } else { user }.to_owned());
        }
        for m in &mutes {
            if let Ok(other) = m.get_str("other") {
                hidden.add_mute(other.to_owned(), mute_settings(m));
            }
        }
        Ok(hidden)
    }
}
