//! Notifications on SQLite: one row per notification keyed (user, type, actor, post), and
//! one group row per (user, type, post) with the count, the latest few actors and the
//! latest notification's id and time. Every effect is one transaction that checks the
//! fence first, inserts or deletes by key (so a replay finds nothing to do), and moves the
//! group by the rows it actually inserted or deleted, re-reading the group's latest few
//! from `notifications_by_group` (at most `GROUP_ACTORS` rows). `post` is the empty blob
//! for follows, so the key is unique (NULLs never collide).

use async_trait::async_trait;
use rusqlite::{Connection, OptionalExtension, params};

pub(in crate::store::embedded) mod dismissals;
mod read;

use super::EmbeddedStore;
use super::leases::check_fence;
use super::rows::{post_id_at, user_exists};
use crate::domain::{
    Dismissals, Fence, GROUP_ACTORS, Notification, NotificationFilter, NotificationGroup,
    NotificationType, NotifySources, PostId, group_notifications, mention_counts, notification_id,
    notifies,
};
use crate::store::notifications::{
    NotificationEffect, NotificationStore, RebuildBounds, Recipient,
};
use crate::store::{PostRange, StoreError, StoreResult};

pub(super) const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS notifications (
    user  TEXT NOT NULL,
    type  TEXT NOT NULL,
    actor TEXT NOT NULL,
    post  BLOB NOT NULL,
    id    BLOB NOT NULL,
    at    INTEGER NOT NULL,
    PRIMARY KEY (user, type, actor, post)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS notifications_by_id ON notifications (user, id);
CREATE INDEX IF NOT EXISTS notifications_by_type ON notifications (user, type, id);
CREATE INDEX IF NOT EXISTS notifications_by_group ON notifications (user, type, post, id);
CREATE INDEX IF NOT EXISTS notifications_by_post ON notifications (post, type, actor);

CREATE TABLE IF NOT EXISTS notification_groups (
    user      TEXT NOT NULL,
    type      TEXT NOT NULL,
    post      BLOB NOT NULL,
    count     INTEGER NOT NULL,
    actors    TEXT NOT NULL,
    latest_id BLOB NOT NULL,
    latest_at INTEGER NOT NULL,
    PRIMARY KEY (user, type, post)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS notification_groups_by_latest ON notification_groups (user, latest_id);
CREATE INDEX IF NOT EXISTS notification_groups_by_type ON notification_groups (user, type, latest_id);
CREATE INDEX IF NOT EXISTS notification_groups_by_post ON notification_groups (post);
";

fn post_key(post: Option<PostId>) -> Vec<u8> {
    post.map_or_else(Vec::new, |p| p.bytes().to_vec())
}

fn post_of(row: &rusqlite::Row<'_>, idx: usize) -> rusqlite::Result<Option<PostId>> {
    if row.get_ref(idx)?.as_blob()?.is_empty() {
        Ok(None)
    } else {
        post_id_at(row, idx).map(Some)
    }
}

fn kind_of(kind: &str) -> rusqlite::Result<NotificationType> {
    NotificationType::parse(kind).ok_or_else(|| {
        rusqlite::Error::FromSqlConversionFailure(
            1,
            rusqlite::types::Type::Text,
            format!("unknown notification type {kind:?}").into(),
        )
    })
}

/// The recipient's id, or `None` when there is none to notify.
fn resolve(tx: &Connection, to: &Recipient) -> StoreResult<Option<String>> {
    Ok(match to {
        Recipient::User(user) => user_exists(tx, user)?.then(|| user.clone()),
        Recipient::Mentioned { user, post_ms } => tx
            .prepare_cached("SELECT created_at FROM users WHERE id = ?1")?
            .query_row([user], |row| row.get::<_, i64>(0))
            .optional()?
            .filter(|created| mention_counts(*created, *post_ms))
            .map(|_| user.clone()),
        Recipient::AuthorOf(post) => tx
            .prepare_cached("SELECT author FROM posts WHERE id = ?1")?
            .query_row([&post.bytes()[..]], |row| row.get(0))
            .optional()?,
    })
}

/// Moves the group of (user, type, post) by `delta` and re-reads its latest few; drops it
/// at zero.
fn move_group(tx: &Connection, user: &str, kind: &str, post: &[u8], delta: i64) -> StoreResult<()> {
    let latest: Vec<(String, Vec<u8>, i64)> = tx
        .prepare_cached(
            "SELECT actor, id, at FROM notifications WHERE user = ?1 AND type = ?2 AND post = ?3
             ORDER BY id DESC LIMIT ?4",
        )?
        .query_map(params![user, kind, post, GROUP_ACTORS as i64], |row| {
            Ok((row.get(0)?, row.get(1)?, row.get(2)?))
        })?
        .collect::<rusqlite::Result<_>>()?;
    let Some((_, latest_id, latest_at)) = latest.first().cloned() else {
        tx.prepare_cached(
            "DELETE FROM notification_groups WHERE user = ?1 AND type = ?2 AND post = ?3",
        )?
        .execute(params![user, kind, post])?;
        return Ok(());
    };
    let actors: Vec<&String> = latest.iter().map(|(a, _, _)| a).collect();
    let actors = serde_json::to_string(&actors).map_err(|e| StoreError::Backend(e.into()))?;
    tx.prepare_cached(
        "INSERT INTO notification_groups (user, type, post, count, actors, latest_id, latest_at)
         VALUES (?1, ?2, ?3, max(?4, 0), ?5, ?6, ?7)
         ON CONFLICT (user, type, post) DO UPDATE SET count = count + ?4, actors = ?5,
             latest_id = ?6, latest_at = ?7",
    )?
    .execute(params![
        user, kind, post, delta, actors, latest_id, latest_at
    ])?;
    Ok(())
}

fn remove_one(
    tx: &Connection,
    user: &str,
    kind: &str,
    actor: &str,
    post: &[u8],
) -> StoreResult<()> {
    let removed = tx
        .prepare_cached(
            "DELETE FROM notifications WHERE user = ?1 AND type = ?2 AND actor = ?3 AND post = ?4",
        )?
        .execute(params![user, kind, actor, post])?;
    if removed > 0 {
        move_group(tx, user, kind, post, -1)?;
    }
    Ok(())
}

fn apply(tx: &Connection, seq: u64, effect: &NotificationEffect) -> StoreResult<()> {
    match effect {
        NotificationEffect::Add {
            to,
            kind,
            actor,
            post,
            at_ms,
        } => {
            let Some(user) = resolve(tx, to)? else {
                return Ok(());
            };
            if !notifies(&user, actor) {
                return Ok(());
            }
            let (kind, post) = (kind.as_str(), post_key(*post));
            // A dismissed or cleared cause is not notified again (see `dismissals`).
            if dismissals::hidden(tx, &user, kind, actor, &post, *at_ms)? {
                return Ok(());
            }
            let id = notification_id(*at_ms, seq);
            let added = tx
                .prepare_cached(
                    "INSERT OR IGNORE INTO notifications (user, type, actor, post, id, at)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                )?
                .execute(params![user, kind, actor, post, &id.bytes()[..], at_ms])?;
            if added > 0 {
                move_group(tx, &user, kind, &post, 1)?;
            }
        }
        NotificationEffect::Remove {
            user,
            kind,
            actor,
            post,
        } => {
            let (kind, post) = (kind.as_str(), post_key(*post));
            let users: Vec<String> = match user {
                Some(user) => vec![user.clone()],
                None => tx
                    .prepare_cached(
                        "SELECT user FROM notifications WHERE post = ?1 AND type = ?2 AND actor = ?3",
                    )?
                    .query_map(params![post, kind, actor], |row| row.get(0))?
                    .collect::<rusqlite::Result<_>>()?,
            };
            for user in users {
                remove_one(tx, &user, kind, actor, &post)?;
            }
        }
        NotificationEffect::RemovePost(post) => {
            let post = &post.bytes()[..];
            tx.prepare_cached("DELETE FROM notifications WHERE post = ?1")?
                .execute([post])?;
            tx.prepare_cached("DELETE FROM notification_groups WHERE post = ?1")?
                .execute([post])?;
        }
    }
    Ok(())
}

pub(in crate::store::embedded) fn insert_all(
    tx: &Connection,
    notifications: &[Notification],
) -> StoreResult<()> {
    let mut insert = tx.prepare_cached(
        "INSERT OR IGNORE INTO notifications (user, type, actor, post, id, at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
    )?;
    for n in notifications {
        insert.execute(params![
            n.user,
            n.kind.as_str(),
            n.actor,
            post_key(n.post),
            &n.id.bytes()[..],
            n.at_ms
        ])?;
    }
    let mut by_user: std::collections::BTreeMap<&str, Vec<Notification>> = Default::default();
    for n in notifications {
        by_user.entry(&n.user).or_default().push(n.clone());
    }
    let mut group = tx.prepare_cached(
        "INSERT INTO notification_groups (user, type, post, count, actors, latest_id, latest_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
    )?;
    for (user, items) in by_user {
        for g in group_notifications(&items) {
            let actors =
                serde_json::to_string(&g.actors).map_err(|e| StoreError::Backend(e.into()))?;
            group.execute(params![
                user,
                g.kind.as_str(),
                post_key(g.post),
                g.count as i64,
                actors,
                &g.latest_id.bytes()[..],
                g.latest_at_ms
            ])?;
        }
    }
    Ok(())
}

#[async_trait]
impl NotificationStore for EmbeddedStore {
    async fn apply_notification(
        &self,
        fence: &Fence,
        seq: u64,
        effect: &NotificationEffect,
    ) -> StoreResult<()> {
        crate::faults::gate("notification.fenced", effect.gate_key()).await;
        let (fence, effect) = (fence.clone(), effect.clone());
        self.write(move |tx| {
            check_fence(tx, &fence.lease, &fence.holder, fence.version)?;
            apply(tx, seq, &effect)
        })
        .await
    }

    async fn notification_sources(&self) -> StoreResult<NotifySources> {
        self.read(read::sources).await
    }

    async fn rebuild_notifications(
        &self,
        fence: &Fence,
        bounds: RebuildBounds,
    ) -> StoreResult<u64> {
        super::bulk::notifications::rebuild(self, fence, bounds).await
    }

    async fn notifications(
        &self,
        user: &str,
        filter: &NotificationFilter,
        before: Option<PostId>,
        limit: usize,
    ) -> StoreResult<Vec<Notification>> {
        let (user, filter) = (user.to_owned(), filter.clone());
        let range = PostRange::Older(before);
        self.read_inline(move |conn| read::page(conn, &user, &filter, range, limit))
            .await
    }

    async fn notification_groups(
        &self,
        user: &str,
        filter: &NotificationFilter,
        before: Option<PostId>,
        limit: usize,
    ) -> StoreResult<Vec<NotificationGroup>> {
        let (user, filter) = (user.to_owned(), filter.clone());
        let range = PostRange::Older(before);
        self.read_inline(move |conn| read::groups_page(conn, &user, &filter, range, limit))
            .await
    }

    async fn notifications_after(
        &self,
        user: &str,
        filter: &NotificationFilter,
        after: PostId,
        limit: usize,
    ) -> StoreResult<Vec<Notification>> {
        let (user, filter) = (user.to_owned(), filter.clone());
        let range = PostRange::Newer(after);
        self.read_inline(move |conn| read::page(conn, &user, &filter, range, limit))
            .await
    }

    async fn notification_groups_after(
        &self,
        user: &str,
        filter: &NotificationFilter,
        after: PostId,
        limit: usize,
    ) -> StoreResult<Vec<NotificationGroup>> {
        let (user, filter) = (user.to_owned(), filter.clone());
        let range = PostRange::Newer(after);
        self.read_inline(move |conn| read::groups_page(conn, &user, &filter, range, limit))
            .await
    }

    async fn notification(&self, user: &str, id: PostId) -> StoreResult<Option<Notification>> {
        let user = user.to_owned();
        self.read_inline(move |conn| dismissals::one(conn, &user, id))
            .await
    }

    async fn dismissals(&self, user: &str) -> StoreResult<Dismissals> {
        let user = user.to_owned();
        self.read_inline(move |conn| dismissals::dismissals_of(conn, &user))
            .await
    }

    async fn dismiss_notification(
        &self,
        user: &str,
        kind: NotificationType,
        actor: &str,
        post: Option<PostId>,
        upto_ms: i64,
    ) -> StoreResult<()> {
        let (user, actor) = (user.to_owned(), actor.to_owned());
        self.write(move |tx| dismissals::dismiss(tx, &user, kind, &actor, post, upto_ms))
            .await
    }

    async fn clear_notifications(&self, user: &str, upto_ms: i64) -> StoreResult<()> {
        let user = user.to_owned();
        self.write(move |tx| dismissals::clear(tx, &user, upto_ms))
            .await
    }
}
