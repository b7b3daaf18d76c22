//! A dismissal's or clear's taking of notifications out of their groups on MongoDB, as
//! a claim kept on each group it moves, so that a taking killed at any point is finished
//! by whoever comes next, and none is applied twice:
//!
//! 1. the intent: on each group, `takings.<token>: {ids, at}`, the ids (`id`, unique to
//!    one making of a notification: a notification made again gets another) of the
//!    standing notifications it takes there, and in the same write `taking_at` lowered
//!    to `at` (`$min`);
//! 2. the take: those ids made tombstones carrying `taken: token`, where they still
//!    stand (one write; a tombstone has no `id`, so it can never match again);
//! 3. the move, per group: how many of its notifications carry the token, then
//!    `$inc count -n` and `$unset takings.<token>` in one write that matches only while
//!    the intent is there; then `takings` and `taking_at` removed if that left it empty
//!    (a filtered `$unset` matching only `takings: {}`, so a claim written meanwhile
//!    keeps them), and the token dropped from those notifications.
//!
//! So `taking_at` is on a group exactly while `takings` holds a claim, and is never
//! later than the oldest claim's `at` (a move leaves it as it was: older than the
//! claims left, until a settler sets it to their oldest `at`, conditional on `takings`
//! being what it read).
//!
//! A settler finds intents older than a cutoff and runs 2 and 3 for them: one user's
//! (`settle_takings`, run first by each dismissal or clear) or everyone's
//! (`sweep_takings`, the notifications worker's upkeep), the latter a bounded batch at
//! a time through the sparse index on `taking_at` (small, and only the groups with a
//! claim), as a range below the cutoff, oldest first: each group it settles leaves the
//! range (its `taking_at` removed, or set to a claim younger than the cutoff), so the
//! next batch reads the ones after, and the worker asks again while a batch comes back
//! full. A database written by an earlier version (claims without `taking_at`, the
//! sparse index on `takings` itself) is brought to this at connect ([`migrate`]).
//! Step 2 by a settler and by the writer are the same write, so after the
//! settler's no later one can take anything more under the token; step 3 moves the
//! group only together with removing the intent, so of the writer and the settler only
//! the first moves it. A writer paused anywhere and resumed after a settler finds its
//! intent gone and moves nothing. A rebuild drops the intents with their groups: it
//! writes counts from the sources, where the dismissal or clear already stands.

use std::collections::BTreeMap;

use futures::TryStreamExt;

use mongodb::bson::{Bson, Document, doc, oid::ObjectId};

use super::{group_key, opt_post, post_bson};
use crate::domain::{NotificationType, PostId, now_ms};
use crate::store::mongo::{MongoStore, all, db_error, int, is_duplicate_key};
use crate::store::{StoreError, StoreResult, SweptTakings};

/// A taking in flight on one group: its notifications' ids.
pub(super) type Taking = BTreeMap<(NotificationType, Option<PostId>), Vec<Bson>>;

/// How old an intent must be before a dismissal or clear settles it: requests finish
/// well within it.
pub(super) const TAKING_TAKEOVER_MS: i64 = 2_000;

/// On a group while it holds a claim: no later than the oldest claim's `at`.
pub(super) const TAKING_AT: &str = "taking_at";

/// What a settler reads of a group.
fn projection() -> Document {
    doc! { "_id": 1, "user": 1, "type": 1, "post": 1, "takings": 1, TAKING_AT: 1 }
}

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
        let at = now_ms();
        let update = doc! {
            "$set": { field(token): { "ids": ids, "at": at } },
            "$min": { TAKING_AT: at },
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
        self.drop_empty_takings(user, kind, post).await?;
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
        self.settle_found(
            doc! { "user": user, "takings": { "$exists": true } },
            stale_before_ms,
        )
        .await
    }

    /// Every user's takings older than `stale_before_ms`, finished as
    /// [`MongoStore::settle_takings`] does, on at most `limit` groups: one batch of the
    /// sweep. The groups are the oldest with `taking_at` below the cutoff, a range of
    /// the sparse index on it; each one settled leaves that range, so the next call
    /// reads the ones after. Returns how many group intents it settled, and whether the
    /// batch was full (more may be waiting).
    pub(super) async fn sweep_takings(
        &self,
        stale_before_ms: i64,
        limit: usize,
    ) -> StoreResult<SweptTakings> {
        let limit = limit.max(1);
        let groups = all(self
            .groups_coll()
            .find(doc! { TAKING_AT: { "$lt": stale_before_ms } })
            .sort(doc! { TAKING_AT: 1 })
            .limit(limit as i64)
            .projection(projection()))
        .await?;
        let mut settled = 0;
        for g in &groups {
            settled += self.settle_group(g, stale_before_ms).await?;
        }
        Ok(SweptTakings {
            settled,
            more: groups.len() >= limit,
        })
    }

    async fn settle_found(&self, filter: Document, stale_before_ms: i64) -> StoreResult<u64> {
        let mut groups = self
            .groups_coll()
            .find(filter)
            .projection(projection())
            .await
            .map_err(db_error)?;
        let mut settled = 0;
        while let Some(g) = groups.try_next().await.map_err(db_error)? {
            settled += self.settle_group(&g, stale_before_ms).await?;
        }
        Ok(settled)
    }

    /// The stale takings on one group found with its `user`, `type`, `post` and
    /// `takings`; an empty `takings` left by a move killed before its tidy is removed.
    async fn settle_group(&self, g: &Document, stale_before_ms: i64) -> StoreResult<u64> {
        let user = g.get_str("user").unwrap_or_default();
        let (kind, post) = (kind_of(g)?, opt_post(g, "post"));
        let Ok(takings) = g.get_document("takings") else {
            if g.contains_key(TAKING_AT) {
                self.groups_coll()
                    .update_one(
                        doc! { "_id": g.get("_id"), "takings": { "$exists": false } },
                        doc! { "$unset": { TAKING_AT: "" } },
                    )
                    .await
                    .map_err(db_error)?;
            }
            return Ok(0);
        };
        if takings.is_empty() {
            self.drop_empty_takings(user, kind, post).await?;
            return Ok(0);
        }
        let mut settled = 0;
        let mut left = Document::new();
        let mut oldest = None::<i64>;
        for (name, taking) in takings {
            let (Ok(token), Some(claim)) = (ObjectId::parse_str(name), taking.as_document()) else {
                tracing::warn!(
                    user,
                    name,
                    "a notification taking that is not a claim, left"
                );
                left.insert(name, taking.clone());
                continue;
            };
            let at = int(claim, "at");
            if at >= stale_before_ms {
                left.insert(name, taking.clone());
                oldest = Some(oldest.map_or(at, |o| o.min(at)));
                continue;
            }
            let ids = claim.get_array("ids").cloned().unwrap_or_default();
            tracing::warn!(user, token = %token, "settling a notification taking left unfinished");
            self.take_ids(user, token, ids).await?;
            self.move_taken(user, kind, post, token).await?;
            settled += 1;
        }
        if !left.is_empty() && g.get(TAKING_AT).and_then(Bson::as_i64) != oldest {
            // Between the read of the group and the write resting on it: a claim written
            // here (a new intent) must make the write miss.
            crate::faults::gate("notification.settled", user).await;
            self.set_taking_at(user, kind, post, left, oldest).await?;
        }
        Ok(settled)
    }

    /// Sets the group's `taking_at` to `oldest`, the oldest `at` of the claims `left`
    /// (removed if none of them is a claim, so a sweep does not read it again), only
    /// while `takings` is still `left`: a claim written or settled meanwhile makes it
    /// miss, and `taking_at` stays no later than every claim's `at` (claims' `at` come
    /// from their writers' clocks, so a claim left may be later than one written after
    /// the read). Gate `notification.settled`, keyed by user, holds a settler just before.
    async fn set_taking_at(
        &self,
        user: &str,
        kind: NotificationType,
        post: Option<PostId>,
        left: Document,
        oldest: Option<i64>,
    ) -> StoreResult<()> {
        let update = match oldest {
            Some(at) => doc! { "$set": { TAKING_AT: at } },
            None => doc! { "$unset": { TAKING_AT: "" } },
        };
        self.groups_coll()
            .update_one(
                doc! { "_id": group_key(user, kind, post), "user": user, "takings": left },
                update,
            )
            .await
            .map_err(db_error)?;
        Ok(())
    }

    /// Removes the group's `takings` and `taking_at` if no claim is left in it: the
    /// filter matches only the empty document, so a claim written meanwhile keeps both
    /// (and this matches nothing).
    async fn drop_empty_takings(
        &self,
        user: &str,
        kind: NotificationType,
        post: Option<PostId>,
    ) -> StoreResult<()> {
        self.groups_coll()
            .update_one(
                doc! { "_id": group_key(user, kind, post), "user": user, "takings": {} },
                doc! { "$unset": { "takings": "", TAKING_AT: "" } },
            )
            .await
            .map_err(db_error)?;
        Ok(())
    }
}
