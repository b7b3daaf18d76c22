//! What users took away from their notifications, on MongoDB: a source in two
//! collections, both sharded on `user` (`_id` for clears), never derived:
//! - `notification_clears` `{_id: user, upto}`;
//! - `notification_dismissals` `{_id: "<user>/<type>/<actor>/<post hex or ->", user,
//!   type, actor, post, upto}`, indexed `{user: 1}`.
//!
//! A dismissal or clear is written first (an upsert moving `upto` up with `$max`), then
//! the notifications it hides are deleted and their groups recounted. The worker reads
//! the recipient's before inserting and again after; when a dismissal landed in between
//! it deletes what it inserted (and recounts the group), so whichever of the two runs
//! last removes the notification. A group's count recounted while the worker moves it
//! may trail by one until the next move or rebuild, as counts trail elsewhere.

use std::collections::BTreeMap;

use futures::TryStreamExt;
use mongodb::bson::{Bson, Document, doc};

use super::{NOTIFICATIONS, group_key, key, opt_post, post_bson};
use crate::domain::{Dismissals, NotificationType, PostId};
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

    /// Sets the group's count to the notifications it holds and its latest few, or drops
    /// it when none is left.
    pub(super) async fn recount_group(
        &self,
        user: &str,
        kind: NotificationType,
        post: Option<PostId>,
    ) -> StoreResult<()> {
        let count = self
            .notifications_coll()
            .count_documents(doc! { "user": user, "type": kind.as_str(), "post": post_bson(post) })
            .await
            .map_err(db_error)?;
        self.groups_coll()
            .update_one(
                doc! { "_id": group_key(user, kind, post), "user": user },
                doc! { "$set": { "count": count as i64 } },
            )
            .await
            .map_err(db_error)?;
        self.refresh_group(user, kind, post).await
    }

    /// Deletes `user`'s notification of this cause if stored at or before `upto_ms`, and
    /// recounts its group.
    pub(super) async fn take_away(
        &self,
        user: &str,
        kind: NotificationType,
        actor: &str,
        post: Option<PostId>,
        upto_ms: i64,
    ) -> StoreResult<()> {
        let deleted = self
            .notifications_coll()
            .delete_one(doc! {
                "_id": key(user, kind, actor, post), "user": user, "at": { "$lte": upto_ms },
            })
            .await
            .map_err(db_error)?;
        if deleted.deleted_count > 0 {
            self.recount_group(user, kind, post).await?;
        }
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
        self.db
            .collection::<Document>(NOTIFICATIONS)
            .delete_many(doc! { "user": user, "at": { "$lte": upto_ms } })
            .await
            .map_err(db_error)?;
        let groups = all(self
            .groups_coll()
            .find(doc! { "user": user })
            .projection(doc! { "type": 1, "post": 1 }))
        .await?;
        for g in groups {
            let Some(kind) = NotificationType::parse(g.get_str("type").unwrap_or_default()) else {
                continue;
            };
            let post = match g.get("post") {
                Some(Bson::ObjectId(_)) => opt_post(&g, "post"),
                _ => None,
            };
            self.recount_group(user, kind, post).await?;
        }
        Ok(())
    }
}
