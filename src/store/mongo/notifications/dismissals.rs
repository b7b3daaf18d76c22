//! What users took away from their notifications, on MongoDB: a source in two
//! collections, both sharded on `user` (`_id` for clears), never derived:
//! - `notification_clears` `{_id: user, upto}`;
//! - `notification_dismissals` `{_id: "<user>/<type>/<actor>/<post hex or ->", user,
//!   type, actor, post, upto}`, indexed `{user: 1}`.
//!
//! A dismissal or clear is written first (an upsert moving `upto` up with `$max`), then
//! the notifications it hides are taken away. The worker reads the recipient's before
//! inserting and again after; when a dismissal landed in between it takes away what it
//! inserted, so whichever of the two runs last removes the notification.
//!
//! Groups are never recounted: a count is the sum of `$inc`s, and each notification is
//! taken out of its group exactly once, by whoever's conditional write turned it from
//! standing into a tombstone (the filter `removed: {$ne: true}` lets one writer win):
//! the worker's removal (`effects.rs`, its own `seq` on the tombstone) or a dismissal
//! (here, the notification's `seq` kept and a `taken` token of its own, so that a clear,
//! which takes many with one `update_many`, finds which ones it took). The worker's
//! add owes its one to the group whether or not a dismissal took the notification since
//! (its `seq` stays); a dismissal's `-1` may land first, and the group reads as empty
//! (`count` not above 0) until the add's lands. So a group's count equals its standing
//! notifications once the moves on their way have landed, in every interleaving. A
//! dismissal or clear killed between its tombstone and its move leaves the group one
//! high (its token stays on the tombstone) until the audit's repair or a rebuild.

use std::collections::BTreeMap;

use futures::TryStreamExt;
use mongodb::bson::{Document, doc, oid::ObjectId};

use super::{group_key, key, opt_post, post_bson};
use crate::domain::{Dismissals, NotificationType, PostId};
use crate::store::mongo::{IndexSpec, MongoStore, all, db_error, index, int, is_duplicate_key};
use crate::store::{StoreError, StoreResult};

pub(super) const CLEARS: &str = "notification_clears";
pub(super) const DISMISSALS: &str = "notification_dismissals";

pub(super) fn indexes() -> Vec<IndexSpec> {
    vec![(DISMISSALS, index(doc! { "user": 1 }, false))]
}

impl MongoStore {
    /// `user`'s dismissals and clear: two reads.
    pub(super) async fn dismissals_of(&self, user: &str) -> StoreResult<Dismissals> {
        let cleared_ms = self
            .collection(CLEARS)
            .find_one(doc! { "_id": user })
            .await
            .map_err(db_error)?
            .map(|d| int(&d, "upto"));
        let mut dismissed = BTreeMap::new();
        for d in all(self.collection(DISMISSALS).find(doc! { "user": user })).await? {
            let kind = d.get_str("type").unwrap_or_default();
            let kind = NotificationType::parse(kind).ok_or_else(|| {
                StoreError::Backend(anyhow::anyhow!("unknown notification type {kind:?}"))
            })?;
            let actor = d.get_str("actor").unwrap_or_default().to_owned();
            dismissed.insert((kind, actor, opt_post(&d, "post")), int(&d, "upto"));
        }
        Ok(Dismissals {
            cleared_ms,
            dismissed,
        })
    }

    /// Every user's dismissals (for `NotificationStore::notification_sources`).
    pub(super) async fn every_dismissal(&self) -> StoreResult<BTreeMap<String, Dismissals>> {
        let mut users: Vec<String> = Vec::new();
        for coll in [CLEARS, DISMISSALS] {
            let mut found = self
                .collection(coll)
                .find(doc! {})
                .projection(doc! { "_id": 1, "user": 1 })
                .await
                .map_err(db_error)?;
            while let Some(d) = found.try_next().await.map_err(db_error)? {
                let user = d.get_str("user").or_else(|_| d.get_str("_id"));
                users.extend(user.ok().map(str::to_owned));
            }
        }
        users.sort();
        users.dedup();
        let mut out = BTreeMap::new();
        for user in users {
            let d = self.dismissals_of(&user).await?;
            out.insert(user, d);
        }
        Ok(out)
    }

    /// Takes `n` notifications that a dismissal made tombstones out of their group, and
    /// refreshes its latest few. Not a change of the feed: no watermark to keep to, and
    /// none needed, as only the dismissal that took a notification moves it. The group
    /// is made (empty, `seq` 0) if the add's own move has not landed yet.
    async fn uncount(
        &self,
        user: &str,
        kind: NotificationType,
        post: Option<PostId>,
        n: i64,
    ) -> StoreResult<()> {
        let filter = doc! { "_id": group_key(user, kind, post), "user": user };
        let update = doc! {
            "$inc": { "count": -n, "v": 1 },
            "$setOnInsert": {
                "type": kind.as_str(), "post": post_bson(post), "actors": [], "seq": 0_i64,
            },
        };
        let groups = self.groups_coll();
        if let Err(error) = groups
            .update_one(filter.clone(), update.clone())
            .upsert(true)
            .await
        {
            // Two upserts of a missing group at once: one made it, the other moves it.
            if !is_duplicate_key(&error) {
                return Err(db_error(error));
            }
            groups.update_one(filter, update).await.map_err(db_error)?;
        }
        self.refresh_group(user, kind, post, i64::MAX as u64).await
    }

    /// Makes `user`'s notification of this cause a tombstone if it stands, stored at or
    /// before `upto_ms`, and, when this call's write is the one that did, takes it out of
    /// its group.
    pub(super) async fn take_away(
        &self,
        user: &str,
        kind: NotificationType,
        actor: &str,
        post: Option<PostId>,
        upto_ms: i64,
    ) -> StoreResult<()> {
        let token = ObjectId::new();
        let taken = self
            .notifications_coll()
            .update_one(
                doc! {
                    "_id": key(user, kind, actor, post), "user": user,
                    "removed": { "$ne": true }, "at": { "$lte": upto_ms },
                },
                taken_by(token),
            )
            .await
            .map_err(db_error)?;
        if taken.modified_count == 1 {
            crate::faults::gate("notification.taken", user).await;
            self.uncount(user, kind, post, 1).await?;
            self.settled(
                doc! { "_id": key(user, kind, actor, post), "user": user },
                token,
            )
            .await?;
        }
        Ok(())
    }

    /// Drops the token of a taking whose group moves have all landed, from the
    /// notifications `filter` names.
    async fn settled(&self, mut filter: Document, token: ObjectId) -> StoreResult<()> {
        filter.insert("taken", token);
        self.notifications_coll()
            .update_many(filter, doc! { "$unset": { "taken": "" } })
            .await
            .map_err(db_error)?;
        Ok(())
    }

    pub(super) async fn dismiss(
        &self,
        user: &str,
        kind: NotificationType,
        actor: &str,
        post: Option<PostId>,
        upto_ms: i64,
    ) -> StoreResult<()> {
        self.collection(DISMISSALS)
            .update_one(
                doc! { "_id": key(user, kind, actor, post), "user": user },
                doc! {
                    "$max": { "upto": upto_ms },
                    "$setOnInsert": { "type": kind.as_str(), "actor": actor, "post": post_bson(post) },
                },
            )
            .upsert(true)
            .await
            .map_err(db_error)?;
        self.take_away(user, kind, actor, post, upto_ms).await
    }

    pub(super) async fn clear(&self, user: &str, upto_ms: i64) -> StoreResult<()> {
        self.collection(CLEARS)
            .update_one(doc! { "_id": user }, doc! { "$max": { "upto": upto_ms } })
            .upsert(true)
            .await
            .map_err(db_error)?;
        self.collection(DISMISSALS)
            .delete_many(doc! { "user": user, "upto": { "$lte": upto_ms } })
            .await
            .map_err(db_error)?;
        // Every standing one up to `upto_ms` made a tombstone with this clear's token in
        // one write; then the ones that carry it are exactly those this clear took.
        let token = ObjectId::new();
        self.notifications_coll()
            .update_many(
                doc! { "user": user, "removed": { "$ne": true }, "at": { "$lte": upto_ms } },
                taken_by(token),
            )
            .await
            .map_err(db_error)?;
        crate::faults::gate("notification.taken", user).await;
        let taken = all(self
            .notifications_coll()
            .find(doc! { "user": user, "taken": token })
            .projection(doc! { "type": 1, "post": 1 }))
        .await?;
        let mut moves: BTreeMap<(NotificationType, Option<PostId>), i64> = BTreeMap::new();
        for d in &taken {
            let kind = d.get_str("type").unwrap_or_default();
            let kind = NotificationType::parse(kind).ok_or_else(|| {
                StoreError::Backend(anyhow::anyhow!("unknown notification type {kind:?}"))
            })?;
            *moves.entry((kind, opt_post(d, "post"))).or_default() += 1;
        }
        for ((kind, post), n) in moves {
            self.uncount(user, kind, post, n).await?;
        }
        self.settled(doc! { "user": user }, token).await
    }
}

/// A notification taken away by a dismissal or clear: a tombstone that keeps the `seq` of
/// the change that made it (that change still owes its group its one) and names the
/// taking by `token`.
fn taken_by(token: ObjectId) -> Document {
    doc! {
        "$set": { "removed": true, "taken": token },
        "$unset": { "id": "", "at": "" },
    }
}
