//! Notifications on MongoDB, both collections sharded on `user` (the notified user):
//! - `notifications` `{_id: "<user>/<type>/<actor>/<post hex or ->", user, type, actor,
//!   post: ObjectId|null, id: ObjectId, at, seq}`, indexed `{user, id}`, `{user, type, id}`,
//!   `{user, type, post, id}` (a group's latest few) and `{post, type, actor}` (an unlike
//!   and a post's deletion, which do not know the notified user: they go to every shard);
//! - `notification_groups` `{_id: "<user>/<type>/<post hex or ->", user, type, post, count,
//!   actors, latest_id, latest_at, seq, v, takings, taking_at}` (`takings`: the claims
//!   of dismissals and clears under way, see `takings.rs`; `taking_at` no later than
//!   the oldest one's time; both absent when there are none), indexed `{user,
//!   latest_id}`, `{user, type, latest_id}`, `{post}` and, sparse, `{taking_at}` (the
//!   groups with a claim, oldest first, for the sweep).
//!
//! Effects (no multi-document transaction): the fence is checked just before each
//! effect, as the event log's appends do. That check is an optimisation; the guarantee
//! is that every write is guarded by the `seq` watermark of the document it changes, so
//! a write that lands late (from a holder that passed the check and then stalled, or a
//! request of a `kill -9`ed process that the server runs after its successor's) changes
//! nothing its successor already moved past:
//! - a notification is made by its `_id` carrying the `seq` of the change that made it,
//!   only where none stands and no later change touched the key; a removal leaves a
//!   tombstone (`removed: true`, its `seq`, no `id`) instead of deleting, so that a late
//!   add of an earlier change finds the key taken;
//! - its group moves by `$inc`, guarded by the group's `seq` watermark (`seq < change`,
//!   set in the same command), and only when the notification was made by this change,
//!   so a replay after a crash between the two moves it exactly once; an emptied group
//!   stays as a tombstone (`count` 0, no actors) for the same reason;
//! - a removal marks the notification first (a conditional write from standing to a
//!   tombstone with its `seq`) and moves the group after (same guard) only when its own
//!   write did the marking, so a replay finds its mark and moves the group once, and a
//!   notification a dismissal took first (`dismissals.rs`) is not taken out twice: each
//!   notification leaves its group once, by whoever made it a tombstone;
//! - a group's count is only ever moved by `$inc`s, never set, so none of these moves
//!   can be lost under another (see `dismissals.rs`);
//! - the latest actors are re-read from the notifications (at most `GROUP_ACTORS`) and
//!   written only while the group's watermark is not past the change, so a late refresh
//!   cannot name an actor a later change removed.
//!
//! Reads leave tombstones out. A rebuild deletes everything, tombstones included, and
//! writes `seq` 0, so a change replayed after it moves a group only by what it removes.

use async_trait::async_trait;
use mongodb::bson::{Bson, Document, doc};
use mongodb::{Collection, IndexModel};

mod dismissals;
mod effects;
mod read;
mod rebuild;
mod spill;
mod taking_index;
mod takings;

pub(super) use taking_index::migrate;

use super::leases::LEASES;
use super::{IndexSpec, MongoStore, db_error, index, int, oid};
use crate::domain::{
    Dismissals, Fence, Notification, NotificationFilter, NotificationGroup, NotificationType,
    NotifySources, PostId,
};
use crate::store::notifications::{
    NotificationEffect, NotificationStore, RebuildBounds, SweptTakings,
};
use crate::store::{PostRange, StoreError, StoreResult};

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
        (GROUPS, taking_index::index()),
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

    async fn check_notification_fence(&self, fence: &Fence) -> StoreResult<()> {
        let held =
            doc! { "_id": &fence.lease, "holder": &fence.holder, "version": fence.version as i64 };
        if super::exists(&self.db.collection(LEASES), held).await? {
            Ok(())
        } else {
            Err(StoreError::Fenced(fence.lease.clone()))
        }
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
        crate::faults::gate("notification.fenced", effect.gate_key()).await;
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
            NotificationEffect::RemovePost(post) => self.remove_post(seq, *post).await,
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
        let range = PostRange::Older(before);
        self.notifications_page(user, filter, range, limit).await
    }

    async fn notification_groups(
        &self,
        user: &str,
        filter: &NotificationFilter,
        before: Option<PostId>,
        limit: usize,
    ) -> StoreResult<Vec<NotificationGroup>> {
        let range = PostRange::Older(before);
        self.groups_page(user, filter, range, limit).await
    }

    async fn notifications_after(
        &self,
        user: &str,
        filter: &NotificationFilter,
        after: PostId,
        limit: usize,
    ) -> StoreResult<Vec<Notification>> {
        let range = PostRange::Newer(after);
        self.notifications_page(user, filter, range, limit).await
    }

    async fn notification_groups_after(
        &self,
        user: &str,
        filter: &NotificationFilter,
        after: PostId,
        limit: usize,
    ) -> StoreResult<Vec<NotificationGroup>> {
        let range = PostRange::Newer(after);
        self.groups_page(user, filter, range, limit).await
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

    async fn settle_notification_takings(
        &self,
        user: &str,
        stale_before_ms: i64,
    ) -> StoreResult<u64> {
        self.settle_takings(user, stale_before_ms).await
    }

    async fn sweep_notification_takings(
        &self,
        stale_before_ms: i64,
        limit: usize,
    ) -> StoreResult<SweptTakings> {
        self.sweep_takings(stale_before_ms, limit).await
    }
}
