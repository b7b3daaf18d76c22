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
//! or clear (`takings.rs`: the notification's `seq` kept and a `taken` token of its own,
//! the group moved under a claim kept on the group). The worker's add owes its one to
//! the group whether or not a dismissal took the notification since (its `seq` stays);
//! a dismissal's `-1` may land first, and the group reads as empty (`count` not above 0)
//! until the add's lands. So a group's count equals its standing notifications once the
//! moves on their way have landed, in every interleaving. A dismissal or clear killed
//! part way leaves its claim on the group; the user's next dismissal or clear settles
//! claims older than `TAKING_TAKEOVER_MS` before its own (`settle_takings`), and so may
//! `NotificationStore::settle_notification_takings`.

use std::collections::BTreeMap;

use futures::TryStreamExt;
use mongodb::bson::doc;

use super::takings::TAKING_TAKEOVER_MS;
use super::{key, opt_post, post_bson};
use crate::domain::{Dismissals, NotificationType, PostId, now_ms};
use crate::store::mongo::{IndexSpec, MongoStore, all, db_error, index, int};
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

    /// Makes `user`'s notification of this cause a tombstone if it stands, stored at or
    /// before `upto_ms`, and takes it out of its group (see `takings`).
    pub(super) async fn take_away(
        &self,
        user: &str,
        kind: NotificationType,
        actor: &str,
        post: Option<PostId>,
        upto_ms: i64,
    ) -> StoreResult<()> {
        let filter = doc! { "_id": key(user, kind, actor, post), "at": { "$lte": upto_ms } };
        self.take(user, filter).await
    }

    pub(super) async fn dismiss(
        &self,
        user: &str,
        kind: NotificationType,
        actor: &str,
        post: Option<PostId>,
        upto_ms: i64,
    ) -> StoreResult<()> {
        self.settle_takings(user, now_ms() - TAKING_TAKEOVER_MS)
            .await?;
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
        self.settle_takings(user, now_ms() - TAKING_TAKEOVER_MS)
            .await?;
        self.collection(CLEARS)
            .update_one(doc! { "_id": user }, doc! { "$max": { "upto": upto_ms } })
            .upsert(true)
            .await
            .map_err(db_error)?;
        self.collection(DISMISSALS)
            .delete_many(doc! { "user": user, "upto": { "$lte": upto_ms } })
            .await
            .map_err(db_error)?;
        self.take(user, doc! { "at": { "$lte": upto_ms } }).await
    }
}
