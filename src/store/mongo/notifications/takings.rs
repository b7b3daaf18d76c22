//! A dismissal's or clear's taking of notifications out of their groups on MongoDB, as
//! a claim kept on each group it moves, so that a taking killed at any point is finished
//! by whoever comes next, and none is applied twice:
//!
//! 1. the intent: on each group, `takings.<token>: {ids, at}`, the ids (`id`, unique to
//!    one making of a notification: a notification made again gets another) of the
//!    standing notifications it takes there;
//! 2. the take: those ids made tombstones carrying `taken: token`, where they still
//!    stand (one write; a tombstone has no `id`, so it can never match again);
//! 3. the move, per group: how many of its notifications carry the token, then
//!    `$inc count -n` and `$unset takings.<token>` in one write that matches only while
//!    the intent is there; then the token dropped from those notifications.
//!
//! A settler (`settle_takings`) finds intents older than a cutoff and runs 2 and 3 for
//! them. Step 2 by a settler and by the writer are the same write, so after the
//! settler's no later one can take anything more under the token; step 3 moves the
//! group only together with removing the intent, so of the writer and the settler only
//! the first moves it. A writer paused anywhere and resumed after a settler finds its
//! intent gone and moves nothing. A rebuild drops the intents with their groups: it
//! writes counts from the sources, where the dismissal or clear already stands.

use std::collections::BTreeMap;

use mongodb::bson::{Bson, Document, doc, oid::ObjectId};

use super::{group_key, opt_post, post_bson};
use crate::domain::{NotificationType, PostId, now_ms};
use crate::store::mongo::{MongoStore, all, db_error, int, is_duplicate_key};
use crate::store::{StoreError, StoreResult};

/// A taking in flight on one group: its notifications' ids.
pub(super) type Taking = BTreeMap<(NotificationType, Option<PostId>), Vec<Bson>>;

/// How old an intent must be before a dismissal or clear settles it: requests finish
/// well within it.
pub(super) const TAKING_TAKEOVER_MS: i64 = 2_000;

fn field(token: ObjectId) -> String {
    format!("takings.{}", token.to_hex())
}

fn kind_of(d: &Document) -> StoreResult<NotificationType> {
    let kind = d.get_str("type").unwrap_or_default();
    NotificationType::parse(kind)
        .ok_or_else(|| StoreError::Backend(anyhow::anyhow!("unknown notification type {kind:?}")))
}

impl MongoStore {
    /// Takes the standing notifications `filter` finds (within `user`'s) out of their
    /// groups under one new token, steps 1 to 3 above.
    pub(super) async fn take(&self, user: &str, mut filter: Document) -> StoreResult<()> {
        filter.insert("user", user);
        filter.insert("removed", doc! { "$ne": true });
        let found = all(self
            .notifications_coll()
            .find(filter)
            .projection(doc! { "id": 1, "type": 1, "post": 1 }))
        .await?;
        let mut taking = Taking::new();
        for d in &found {
            let Some(id) = d.get("id").cloned() else {
                continue;
            };
            taking
                .entry((kind_of(d)?, opt_post(d, "post")))
                .or_default()
                .push(id);
        }
        if taking.is_empty() {
            return Ok(());
        }
        let token = ObjectId::new();
        for ((kind, post), ids) in &taking {
            self.intend(user, *kind, *post, token, ids).await?;
        }
        let ids: Vec<Bson> = taking.values().flatten().cloned().collect();
        crate::faults::gate("notification.intended", user).await;
        self.take_ids(user, token, ids).await?;
        crate::faults::gate("notification.taken", user).await;
        for (kind, post) in taking.keys() {
            self.move_taken(user, *kind, *post, token).await?;
        }
        Ok(())
    }

    /// Step 1 on one group, made (empty, `seq` 0) if the add's own move has not landed.
    async fn intend(
        &self,
        user: &str,
        kind: NotificationType,
        post: Option<PostId>,
        token: ObjectId,
        ids: &[Bson],
    ) -> StoreResult<()> {
        let filter = doc! { "_id": group_key(user, kind, post), "user": user };
        let update = doc! {
            "$set": { field(token): { "ids": ids, "at": now_ms() } },
            "$setOnInsert": {
                "type": kind.as_str(), "post": post_bson(post), "actors": [], "seq": 0_i64,
                "count": 0_i64,
            },
        };
        let groups = self.groups_coll();
        if let Err(error) = groups
            .update_one(filter.clone(), update.clone())
            .upsert(true)
            .await
        {
            // Two upserts of a missing group at once: one made it, this one marks it.
            if !is_duplicate_key(&error) {
                return Err(db_error(error));
            }
            groups.update_one(filter, update).await.map_err(db_error)?;
        }
        Ok(())
    }

    /// Step 2: the notifications `ids` made tombstones under `token` where they stand.
    async fn take_ids(&self, user: &str, token: ObjectId, ids: Vec<Bson>) -> StoreResult<()> {
        self.notifications_coll()
            .update_many(
                doc! { "user": user, "id": { "$in": ids }, "removed": { "$ne": true } },
                doc! {
                    "$set": { "removed": true, "taken": token },
                    "$unset": { "id": "", "at": "" },
                },
            )
            .await
            .map_err(db_error)?;
        Ok(())
    }

    /// Step 3 on one group: moved by how many carry `token`, together with removing the
    /// intent (so once, by whoever comes first), then the token dropped from them.
    async fn move_taken(
        &self,
        user: &str,
        kind: NotificationType,
        post: Option<PostId>,
        token: ObjectId,
    ) -> StoreResult<()> {
        let mine = doc! {
            "user": user, "type": kind.as_str(), "post": post_bson(post), "taken": token,
        };
        let n = self
            .notifications_coll()
            .count_documents(mine.clone())
            .await
            .map_err(db_error)? as i64;
        crate::faults::gate("notification.counted", user).await;
        self.groups_coll()
            .update_one(
                doc! {
                    "_id": group_key(user, kind, post), "user": user,
                    field(token): { "$exists": true },
                },
                doc! { "$inc": { "count": -n, "v": 1 }, "$unset": { field(token): "" } },
            )
            .await
            .map_err(db_error)?;
        self.refresh_group(user, kind, post, i64::MAX as u64)
            .await?;
        self.notifications_coll()
            .update_many(mine, doc! { "$unset": { "taken": "" } })
            .await
            .map_err(db_error)?;
        Ok(())
    }

    /// Finishes `user`'s takings whose intent was written before `stale_before_ms`
    /// (steps 2 and 3). Idempotent. Returns how many group intents it settled.
    pub(super) async fn settle_takings(
        &self,
        user: &str,
        stale_before_ms: i64,
    ) -> StoreResult<u64> {
        let groups = all(self
            .groups_coll()
            .find(doc! { "user": user, "takings": { "$exists": true, "$ne": {} } })
            .projection(doc! { "type": 1, "post": 1, "takings": 1 }))
        .await?;
        let mut settled = 0;
        for g in &groups {
            let (kind, post) = (kind_of(g)?, opt_post(g, "post"));
            let Ok(takings) = g.get_document("takings") else {
                continue;
            };
            for (token, taking) in takings {
                let (Ok(token), Some(taking)) = (ObjectId::parse_str(token), taking.as_document())
                else {
                    continue;
                };
                if int(taking, "at") >= stale_before_ms {
                    continue;
                }
                let ids = taking.get_array("ids").cloned().unwrap_or_default();
                tracing::warn!(user, token = %token, "settling a notification taking left unfinished");
                self.take_ids(user, token, ids).await?;
                self.move_taken(user, kind, post, token).await?;
                settled += 1;
            }
        }
        Ok(settled)
    }
}
