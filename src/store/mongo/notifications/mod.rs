//! Notifications on MongoDB, both collections sharded on `user` (the notified user):
//! - `notifications` `{_id: "<user>/<type>/<actor>/<post hex or ->", user, type, actor,
//!   post: ObjectId|null, id: ObjectId, at, seq}`, indexed `{user, id}`, `{user, type, id}`,
//!   `{user, type, post, id}` (a group's latest few) and `{post, type, actor}` (an unlike
//!   and a post's deletion, which do not know the notified user: they go to every shard);
//! - `notification_groups` `{_id: "<user>/<type>/<post hex or ->", user, type, post, count,
//!   actors, latest_id, latest_at, seq}`, indexed `{user, latest_id}`,
//!   `{user, type, latest_id}` and `{post}`.
//!
//! Effects (no multi-document transaction): the fence is checked just before each
//! effect, as the event log's appends do. A notification is inserted once by its `_id`
//! (`insert_new`) carrying the `seq` of the change that made it; its group moves by
//! `$inc`, guarded by the group's `seq` watermark (`seq < change`, set in the same
//! command), and only when the notification was made by this change, so a replay after a
//! crash between the two moves it exactly once. A removal moves the group first (same
//! guard) and deletes the notification after, so a replay finds the notification still
//! there and the group already moved. The latest actors are then re-read from the
//! notifications (at most `GROUP_ACTORS`), which is idempotent. A rebuild writes `seq` 0
//! everywhere, so a change replayed after it moves a group only by what it removes.

use async_trait::async_trait;
use mongodb::bson::{Bson, Document, doc};
use mongodb::{Collection, IndexModel};

mod dismissals;
mod read;
mod rebuild;
mod spill;

use super::leases::LEASES;
use super::{IndexSpec, MongoStore, all, db_error, index, insert_new, int, is_duplicate_key, oid};
use crate::domain::{
    Dismissals, Fence, GROUP_ACTORS, Notification, NotificationFilter, NotificationGroup,
    NotificationType, NotifySources, PostId, group_notifications, mention_counts, notification_id,
    notifies,
};
use crate::store::notifications::{
    NotificationEffect, NotificationStore, RebuildBounds, Recipient,
};
use crate::store::{StoreError, StoreResult};

const NOTIFICATIONS: &str = "notifications";
const GROUPS: &str = "notification_groups";

pub(super) fn indexes() -> Vec<IndexSpec> {
    let desc = |keys: Document| -> IndexModel { index(keys, false) };
    vec![
        (NOTIFICATIONS, desc(doc! { "user": 1, "id": -1 })),
        (NOTIFICATIONS, desc(doc! { "user": 1, "type": 1, "id": -1 })),
        (
            NOTIFICATIONS,
            desc(doc! { "user": 1, "type": 1, "post": 1, "id": -1 }),
        ),
        (
            NOTIFICATIONS,
            desc(doc! { "post": 1, "type": 1, "actor": 1 }),
        ),
        (GROUPS, desc(doc! { "user": 1, "latest_id": -1 })),
        (GROUPS, desc(doc! { "user": 1, "type": 1, "latest_id": -1 })),
        (GROUPS, desc(doc! { "post": 1 })),
    ]
    .into_iter()
    .chain(dismissals::indexes())
    .collect()
}

fn post_part(post: Option<PostId>) -> String {
    post.map_or_else(|| "-".to_owned(), |p| p.to_string())
}

fn post_bson(post: Option<PostId>) -> Bson {
    post.map_or(Bson::Null, |p| Bson::ObjectId(oid(p)))
}

pub(in crate::store::mongo) fn key(
    user: &str,
    kind: NotificationType,
    actor: &str,
    post: Option<PostId>,
) -> String {
    format!("{user}/{}/{actor}/{}", kind.as_str(), post_part(post))
}

fn group_key(user: &str, kind: NotificationType, post: Option<PostId>) -> String {
    format!("{user}/{}/{}", kind.as_str(), post_part(post))
}

fn opt_post(doc: &Document, field: &str) -> Option<PostId> {
    match doc.get(field) {
        Some(Bson::ObjectId(id)) => Some(PostId::from_bytes(id.bytes())),
        _ => None,
    }
}

fn backend(what: String) -> StoreError {
    StoreError::Backend(anyhow::anyhow!(what))
}

fn notification_from(doc: &Document) -> StoreResult<Notification> {
    let kind = doc.get_str("type").unwrap_or_default();
    Ok(Notification {
        id: opt_post(doc, "id")
            .ok_or_else(|| backend(format!("notification without id: {doc}")))?,
        user: doc.get_str("user").unwrap_or_default().to_owned(),
        kind: NotificationType::parse(kind)
            .ok_or_else(|| backend(format!("unknown notification type {kind:?}")))?,
        actor: doc.get_str("actor").unwrap_or_default().to_owned(),
        post: opt_post(doc, "post"),
        at_ms: int(doc, "at"),
    })
}

fn notification_doc(n: &Notification, seq: u64) -> Document {
    doc! {
        "_id": key(&n.user, n.kind, &n.actor, n.post),
        "user": &n.user, "type": n.kind.as_str(), "actor": &n.actor,
        "post": post_bson(n.post), "id": oid(n.id), "at": n.at_ms, "seq": seq as i64,
    }
}

impl MongoStore {
    fn notifications_coll(&self) -> Collection<Document> {
        self.db.collection(NOTIFICATIONS)
    }

    fn groups_coll(&self) -> Collection<Document> {
        self.db.collection(GROUPS)
    }

    /// Deletes every notification and group (a rebuild's or a bulk load's first step).
    /// Inserts rebuilt notifications (`seq` 0) and the groups they make, per user.
    pub(in crate::store::mongo) async fn insert_rebuilt(
        &self,
        notifications: &[Notification],
    ) -> StoreResult<()> {
        for chunk in notifications.chunks(super::bulk::WRITE_BATCH) {
            let docs: Vec<Document> = chunk.iter().map(|n| notification_doc(n, 0)).collect();
            self.notifications_coll()
                .insert_many(docs)
                .await
                .map_err(db_error)?;
        }
        let mut by_user: std::collections::BTreeMap<&str, Vec<Notification>> = Default::default();
        for n in notifications {
            by_user.entry(&n.user).or_default().push(n.clone());
        }
        let mut groups = Vec::new();
        for (user, items) in by_user {
            for g in group_notifications(&items) {
                groups.push(doc! {
                    "_id": group_key(user, g.kind, g.post), "user": user,
                    "type": g.kind.as_str(), "post": post_bson(g.post), "count": g.count as i64,
                    "actors": g.actors, "latest_id": oid(g.latest_id),
                    "latest_at": g.latest_at_ms, "seq": 0_i64,
                });
            }
        }
        for chunk in groups.chunks(super::bulk::WRITE_BATCH) {
            self.groups_coll()
                .insert_many(chunk.to_vec())
                .await
                .map_err(db_error)?;
        }
        Ok(())
    }

    async fn check_notification_fence(&self, fence: &Fence) -> StoreResult<()> {
        let held =
            doc! { "_id": &fence.lease, "holder": &fence.holder, "version": fence.version as i64 };
        if super::exists(&self.db.collection(LEASES), held).await? {
            Ok(())
        } else {
            Err(StoreError::Fenced(fence.lease.clone()))
        }
    }

    async fn resolve(&self, to: &Recipient) -> StoreResult<Option<String>> {
        Ok(match to {
            Recipient::User(user) => self
                .exists("users", doc! { "_id": user })
                .await?
                .then(|| user.clone()),
            Recipient::Mentioned { user, post_ms } => self
                .users_coll()
                .find_one(doc! { "_id": user })
                .projection(doc! { "created_at": 1 })
                .await
                .map_err(db_error)?
                .filter(|u| mention_counts(int(u, "created_at"), *post_ms))
                .map(|_| user.clone()),
            Recipient::AuthorOf(post) => self
                .content_coll()
                .find_one(doc! { "_id": oid(*post) })
                .projection(doc! { "author": 1 })
                .await
                .map_err(db_error)?
                .and_then(|p| p.get_str("author").ok().map(str::to_owned)),
        })
    }

    /// Moves the group by `delta` unless it already applied change `seq` or a later one.
    async fn move_group(
        &self,
        user: &str,
        kind: NotificationType,
        post: Option<PostId>,
        seq: u64,
        delta: i64,
        first: Option<&Notification>,
    ) -> StoreResult<()> {
        let filter = doc! {
            "_id": group_key(user, kind, post), "user": user, "seq": { "$lt": seq as i64 },
        };
        let update = doc! {
            "$inc": { "count": delta },
            "$set": { "seq": seq as i64 },
        };
        let mut update = update;
        // A new group is complete from its first write: its one notification.
        if let Some(n) = first {
            update.insert(
                "$setOnInsert",
                doc! { "type": kind.as_str(), "post": post_bson(post), "actors": [&n.actor],
                "latest_id": oid(n.id), "latest_at": n.at_ms },
            );
        }
        match self
            .groups_coll()
            .update_one(filter, update)
            .upsert(first.is_some())
            .await
        {
            Ok(_) => Ok(()),
            // The group exists with a watermark at or past `seq`: already applied.
            Err(error) if is_duplicate_key(&error) => Ok(()),
            Err(error) => Err(db_error(error)),
        }
    }

    /// Sets the group's latest few from the notifications, or drops it when none is left.
    async fn refresh_group(
        &self,
        user: &str,
        kind: NotificationType,
        post: Option<PostId>,
    ) -> StoreResult<()> {
        let id = group_key(user, kind, post);
        let latest = all(self
            .notifications_coll()
            .find(doc! { "user": user, "type": kind.as_str(), "post": post_bson(post) })
            .sort(doc! { "id": -1 })
            .limit(GROUP_ACTORS as i64)
            .projection(doc! { "actor": 1, "id": 1, "at": 1 }))
        .await?;
        let groups = self.groups_coll();
        let Some(first) = latest.first() else {
            groups
                .delete_one(doc! { "_id": &id, "user": user })
                .await
                .map_err(db_error)?;
            return Ok(());
        };
        let actors: Vec<&str> = latest
            .iter()
            .map(|d| d.get_str("actor").unwrap_or_default())
            .collect();
        groups
            .update_one(
                doc! { "_id": &id, "user": user },
                doc! { "$set": {
                    "actors": actors, "latest_id": first.get("id").cloned().unwrap_or(Bson::Null),
                    "latest_at": int(first, "at"),
                } },
            )
            .await
            .map_err(db_error)?;
        Ok(())
    }

    async fn add(
        &self,
        seq: u64,
        to: &Recipient,
        kind: NotificationType,
        actor: &str,
        post: Option<PostId>,
        at_ms: i64,
    ) -> StoreResult<()> {
        let Some(user) = self.resolve(to).await? else {
            return Ok(());
        };
        if !notifies(&user, actor) {
            return Ok(());
        }
        // A dismissed or cleared cause is not notified again (see `dismissals`).
        if self
            .dismissals_of(&user)
            .await?
            .hides(kind, actor, post, at_ms)
        {
            return Ok(());
        }
        let n = Notification {
            id: notification_id(at_ms, seq),
            user: user.clone(),
            kind,
            actor: actor.to_owned(),
            post,
            at_ms,
        };
        let doc = notification_doc(&n, seq);
        let inserted = insert_new(&self.notifications_coll(), doc, &["user"]).await?;
        // Made by this change (now, or before a crash that this is the replay of).
        let made_here = inserted || {
            let found = self
                .notifications_coll()
                .find_one(doc! { "_id": key(&user, kind, actor, post), "user": &user })
                .projection(doc! { "seq": 1 })
                .await
                .map_err(db_error)?;
            found.is_some_and(|d| int(&d, "seq") == seq as i64)
        };
        if made_here {
            self.move_group(&user, kind, post, seq, 1, Some(&n)).await?;
            self.refresh_group(&user, kind, post).await?;
            // A dismissal that landed since the read above found nothing to remove.
            if self
                .dismissals_of(&user)
                .await?
                .hides(kind, actor, post, at_ms)
            {
                self.take_away(&user, kind, actor, post, at_ms).await?;
            }
        }
        Ok(())
    }

    async fn remove(
        &self,
        seq: u64,
        user: Option<&str>,
        kind: NotificationType,
        actor: &str,
        post: Option<PostId>,
    ) -> StoreResult<()> {
        let filter = match user {
            Some(user) => doc! { "_id": key(user, kind, actor, post), "user": user },
            None => doc! { "post": post_bson(post), "type": kind.as_str(), "actor": actor },
        };
        let found = all(self
            .notifications_coll()
            .find(filter)
            .projection(doc! { "user": 1 }))
        .await?;
        for doc in found {
            let user = doc.get_str("user").unwrap_or_default().to_owned();
            self.move_group(&user, kind, post, seq, -1, None).await?;
            self.notifications_coll()
                .delete_one(
                    doc! { "_id": doc.get("_id").cloned().unwrap_or(Bson::Null), "user": &user },
                )
                .await
                .map_err(db_error)?;
            self.refresh_group(&user, kind, post).await?;
        }
        Ok(())
    }
}

#[async_trait]
impl NotificationStore for MongoStore {
    async fn apply_notification(
        &self,
        fence: &Fence,
        seq: u64,
        effect: &NotificationEffect,
    ) -> StoreResult<()> {
        self.check_notification_fence(fence).await?;
        match effect {
            NotificationEffect::Add {
                to,
                kind,
                actor,
                post,
                at_ms,
            } => self.add(seq, to, *kind, actor, *post, *at_ms).await,
            NotificationEffect::Remove {
                user,
                kind,
                actor,
                post,
            } => self.remove(seq, user.as_deref(), *kind, actor, *post).await,
            NotificationEffect::RemovePost(post) => {
                let filter = doc! { "post": oid(*post) };
                self.notifications_coll()
                    .delete_many(filter.clone())
                    .await
                    .map_err(db_error)?;
                self.groups_coll()
                    .delete_many(filter)
                    .await
                    .map_err(db_error)?;
                Ok(())
            }
        }
    }

    async fn notification_sources(&self) -> StoreResult<NotifySources> {
        self.sources().await
    }

    async fn rebuild_notifications(
        &self,
        fence: &Fence,
        bounds: RebuildBounds,
    ) -> StoreResult<u64> {
        self.rebuild_all_notifications(Some(fence), bounds).await
    }

    async fn notifications(
        &self,
        user: &str,
        filter: &NotificationFilter,
        before: Option<PostId>,
        limit: usize,
    ) -> StoreResult<Vec<Notification>> {
        self.notifications_page(user, filter, before, limit).await
    }

    async fn notification_groups(
        &self,
        user: &str,
        filter: &NotificationFilter,
        before: Option<PostId>,
        limit: usize,
    ) -> StoreResult<Vec<NotificationGroup>> {
        self.groups_page(user, filter, before, limit).await
    }

    async fn notification(&self, user: &str, id: PostId) -> StoreResult<Option<Notification>> {
        self.notifications_coll()
            .find_one(doc! { "user": user, "id": oid(id) })
            .await
            .map_err(db_error)?
            .as_ref()
            .map(notification_from)
            .transpose()
    }

    async fn dismissals(&self, user: &str) -> StoreResult<Dismissals> {
        self.dismissals_of(user).await
    }

    async fn dismiss_notification(
        &self,
        user: &str,
        kind: NotificationType,
        actor: &str,
        post: Option<PostId>,
        upto_ms: i64,
    ) -> StoreResult<()> {
        self.dismiss(user, kind, actor, post, upto_ms).await
    }

    async fn clear_notifications(&self, user: &str, upto_ms: i64) -> StoreResult<()> {
        self.clear(user, upto_ms).await
    }
}
