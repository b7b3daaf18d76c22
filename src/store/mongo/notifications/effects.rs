//! The notifications' effects on MongoDB, each write guarded by the `seq` watermark of
//! the document it changes (see the module above).

use std::collections::BTreeMap;

use mongodb::bson::{Bson, Document, doc};

use super::{group_key, key, oid, post_bson};
use crate::domain::{
    GROUP_ACTORS, Notification, NotificationType, PostId, mention_counts, notification_id, notifies,
};
use crate::store::StoreResult;
use crate::store::mongo::{MongoStore, all, db_error, int, is_duplicate_key};
use crate::store::notifications::Recipient;

/// A removed notification: marked with the removing change's `seq`, out of every read.
fn tombstone(seq: u64) -> Document {
    doc! {
        "$set": { "removed": true, "seq": seq as i64 },
        "$unset": { "id": "", "at": "" },
    }
}

/// A group left with no notification standing: no actors, no latest, out of every read
/// (its `count`, moved only by `$inc`s, is 0 by then). Its count is never set here: a
/// count is exact only as the sum of the moves of those who made and took away its
/// notifications.
fn emptied_group() -> Document {
    doc! { "$set": { "actors": [] }, "$unset": { "latest_id": "", "latest_at": "" } }
}

impl MongoStore {
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
            "$inc": { "count": delta, "v": 1 },
            "$set": { "seq": seq as i64 },
        };
        let mut update = update;
        // A new group is complete from its first write: its one notification; one made
        // again over a tombstone has its latest from this write, its actors from the
        // refresh that follows.
        if let Some(n) = first {
            update.insert(
                "$setOnInsert",
                doc! { "type": kind.as_str(), "post": post_bson(post), "actors": [&n.actor] },
            );
            update.insert(
                "$max",
                doc! { "latest_id": oid(n.id), "latest_at": n.at_ms },
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

    /// Sets the group's latest few from the notifications, or empties it to a tombstone
    /// when none is left and its count is down to 0 (else a move still on its way, whose
    /// own refresh follows it, holds it); written only while no change after `seq` moved
    /// the group, and only while no move at all (`v`, which every move steps, a
    /// dismissal's too) landed since it read: a refresh that read before another's
    /// notification was taken then leaves the write to that one's own refresh, which
    /// follows its move. So the last refresh to write read after every move.
    pub(super) async fn refresh_group(
        &self,
        user: &str,
        kind: NotificationType,
        post: Option<PostId>,
        seq: u64,
    ) -> StoreResult<()> {
        let id = group_key(user, kind, post);
        let Some(group) = self
            .groups_coll()
            .find_one(doc! { "_id": &id, "user": user })
            .projection(doc! { "v": 1 })
            .await
            .map_err(db_error)?
        else {
            return Ok(());
        };
        let moved = match group.get("v") {
            Some(v) => v.clone(),
            None => Bson::Document(doc! { "$exists": false }),
        };
        let latest = all(self
            .notifications_coll()
            .find(doc! {
                "user": user, "type": kind.as_str(), "post": post_bson(post),
                "removed": { "$ne": true },
            })
            .sort(doc! { "id": -1 })
            .limit(GROUP_ACTORS as i64)
            .projection(doc! { "actor": 1, "id": 1, "at": 1 }))
        .await?;
        crate::faults::gate("notification.refresh", user).await;
        let mut filter = doc! {
            "_id": &id, "user": user, "seq": { "$lte": seq as i64 }, "v": moved,
        };
        let update = match latest.first() {
            None => {
                filter.insert("count", doc! { "$lte": 0_i64 });
                emptied_group()
            }
            Some(first) => {
                let actors: Vec<&str> = latest
                    .iter()
                    .map(|d| d.get_str("actor").unwrap_or_default())
                    .collect();
                doc! { "$set": {
                    "actors": actors, "latest_id": first.get("id").cloned().unwrap_or(Bson::Null),
                    "latest_at": int(first, "at"),
                } }
            }
        };
        self.groups_coll()
            .update_one(filter, update)
            .await
            .map_err(db_error)?;
        Ok(())
    }

    pub(super) async fn add(
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
        // A dismissed or cleared cause is not notified again (see `dismissals`): not
        // made, though a making by this change before a crash is still moved (below).
        let hidden = self
            .dismissals_of(&user)
            .await?
            .hides(kind, actor, post, at_ms);
        let n = Notification {
            id: notification_id(at_ms, seq),
            user: user.clone(),
            kind,
            actor: actor.to_owned(),
            post,
            at_ms,
        };
        let id = key(&user, kind, actor, post);
        let made_now = !hidden && self.make(&id, &n, seq).await?;
        // Made by this change (now, or before a crash that this is the replay of), and
        // perhaps dismissed since: a dismissal keeps the `seq` of the change that made
        // the notification and takes its own one away from the group, so this change
        // owes its one all the same (moved once, by the group's watermark), even when
        // that dismissal now hides it from being made again.
        let made_here = made_now || self.marked_by(&id, &user, seq).await?;
        if made_here {
            crate::faults::gate("notification.made", &user).await;
            self.move_group(&user, kind, post, seq, 1, Some(&n)).await?;
            self.refresh_group(&user, kind, post, seq).await?;
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

    /// Makes notification `n` under key `id` for change `seq` where none stands: new, or
    /// over the tombstone of an earlier change's removal (a key that stands, or that a
    /// later change touched, is taken). Whether this write made it.
    async fn make(&self, id: &str, n: &Notification, seq: u64) -> StoreResult<bool> {
        let made = self
            .notifications_coll()
            .update_one(
                doc! {
                    "_id": id, "user": &n.user, "removed": true, "seq": { "$lt": seq as i64 },
                },
                doc! { "$set": {
                    "type": n.kind.as_str(), "actor": &n.actor, "post": post_bson(n.post),
                    "id": oid(n.id), "at": n.at_ms, "seq": seq as i64, "removed": false,
                } },
            )
            .upsert(true)
            .await;
        match made {
            Ok(result) => Ok(result.upserted_id.is_some() || result.modified_count == 1),
            Err(error) if is_duplicate_key(&error) => Ok(false),
            Err(error) => Err(db_error(error)),
        }
    }

    /// Whether notification `id` carries change `seq`'s mark: made by it (standing or
    /// dismissed since) or removed by it.
    async fn marked_by(&self, id: &str, user: &str, seq: u64) -> StoreResult<bool> {
        let found = self
            .notifications_coll()
            .find_one(doc! { "_id": id, "user": user })
            .projection(doc! { "seq": 1 })
            .await
            .map_err(db_error)?;
        Ok(found.is_some_and(|d| int(&d, "seq") == seq as i64))
    }

    /// Takes the notification of this key away: the group moves by one only when this
    /// change's own conditional write made it a tombstone (now, or before a crash that
    /// this is the replay of). A dismissal that took it first moved the group itself, so
    /// each notification leaves its group exactly once, whoever takes it.
    pub(super) async fn remove(
        &self,
        seq: u64,
        user: Option<&str>,
        kind: NotificationType,
        actor: &str,
        post: Option<PostId>,
    ) -> StoreResult<()> {
        let mut filter = match user {
            Some(user) => doc! { "_id": key(user, kind, actor, post), "user": user },
            None => doc! { "post": post_bson(post), "type": kind.as_str(), "actor": actor },
        };
        // Standing and made by an earlier change, or taken away by this one already.
        filter.insert(
            "$or",
            vec![
                doc! { "removed": { "$ne": true }, "seq": { "$lt": seq as i64 } },
                doc! { "removed": true, "seq": seq as i64 },
            ],
        );
        let found = all(self
            .notifications_coll()
            .find(filter)
            .projection(doc! { "user": 1 }))
        .await?;
        for doc in found {
            let user = doc.get_str("user").unwrap_or_default().to_owned();
            let id = doc.get_str("_id").unwrap_or_default().to_owned();
            crate::faults::gate("notification.found", &user).await;
            let standing = doc! {
                "_id": &id, "user": &user,
                "removed": { "$ne": true }, "seq": { "$lt": seq as i64 },
            };
            let taken = self
                .notifications_coll()
                .update_one(standing, tombstone(seq))
                .await
                .map_err(db_error)?;
            if taken.modified_count == 1 || self.marked_by(&id, &user, seq).await? {
                self.move_group(&user, kind, post, seq, -1, None).await?;
            }
            self.refresh_group(&user, kind, post, seq).await?;
        }
        Ok(())
    }

    /// Every notification about `post` (deleted) made a tombstone marked with this
    /// change, and each group moved by as many as this change marked in it (so a replay
    /// moves nothing twice, and one a dismissal took first is not counted again).
    pub(super) async fn remove_post(&self, seq: u64, post: PostId) -> StoreResult<()> {
        self.notifications_coll()
            .update_many(
                doc! {
                    "post": oid(post), "removed": { "$ne": true }, "seq": { "$lt": seq as i64 },
                },
                tombstone(seq),
            )
            .await
            .map_err(db_error)?;
        let marked = all(self
            .notifications_coll()
            .find(doc! { "post": oid(post), "removed": true, "seq": seq as i64 })
            .projection(doc! { "user": 1, "type": 1 }))
        .await?;
        let mut moves: BTreeMap<(String, String), i64> = BTreeMap::new();
        for d in &marked {
            let at = (
                d.get_str("user").unwrap_or_default().to_owned(),
                d.get_str("type").unwrap_or_default().to_owned(),
            );
            *moves.entry(at).or_default() += 1;
        }
        for ((user, kind), n) in moves {
            let Some(kind) = NotificationType::parse(&kind) else {
                continue;
            };
            self.move_group(&user, kind, Some(post), seq, -n, None)
                .await?;
            self.refresh_group(&user, kind, Some(post), seq).await?;
        }
        Ok(())
    }
}
