//! What users took away from their notifications, on SQLite (format 11): a source in
//! two tables, `notification_clears (user, upto)` and `notification_dismissals (user,
//! type, actor, post, upto)`. A dismissal or a clear records itself and removes the
//! notifications it hides, with their groups, in one transaction; the worker's effect
//! reads them in its own transaction before it inserts, and every rebuild reads a
//! recipient's before ranking their notifications.

use std::collections::BTreeMap;

use rusqlite::{Connection, OptionalExtension, params};

use super::{kind_of, move_group, post_key, post_of, read};
use crate::domain::{Dismissals, Notification, NotificationType, PostId, group_notifications};
use crate::store::{StoreError, StoreResult};

pub(in crate::store::embedded) const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS notification_clears (
    user TEXT PRIMARY KEY,
    upto INTEGER NOT NULL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS notification_dismissals (
    user  TEXT NOT NULL,
    type  TEXT NOT NULL,
    actor TEXT NOT NULL,
    post  BLOB NOT NULL,
    upto  INTEGER NOT NULL,
    PRIMARY KEY (user, type, actor, post)
) WITHOUT ROWID;
";

/// `user`'s dismissals and clear.
pub(in crate::store::embedded) fn dismissals_of(
    conn: &Connection,
    user: &str,
) -> StoreResult<Dismissals> {
    let cleared_ms = conn
        .prepare_cached("SELECT upto FROM notification_clears WHERE user = ?1")?
        .query_row([user], |row| row.get(0))
        .optional()?;
    let mut dismissed = BTreeMap::new();
    let mut stmt = conn.prepare_cached(
        "SELECT type, actor, post, upto FROM notification_dismissals WHERE user = ?1",
    )?;
    let rows = stmt.query_map([user], |row| {
        let kind: String = row.get(0)?;
        Ok((
            (kind_of(&kind)?, row.get::<_, String>(1)?, post_of(row, 2)?),
            row.get::<_, i64>(3)?,
        ))
    })?;
    for row in rows {
        let (key, upto) = row?;
        dismissed.insert(key, upto);
    }
    Ok(Dismissals {
        cleared_ms,
        dismissed,
    })
}

/// Every user's dismissals (for `NotificationStore::notification_sources`).
pub(super) fn every_dismissal(conn: &Connection) -> StoreResult<BTreeMap<String, Dismissals>> {
    let mut users: Vec<String> = conn
        .prepare(
            "SELECT user FROM notification_clears UNION SELECT user FROM notification_dismissals",
        )?
        .query_map([], |row| row.get(0))?
        .collect::<rusqlite::Result<_>>()?;
    users.sort();
    let mut out = BTreeMap::new();
    for user in users {
        let d = dismissals_of(conn, &user)?;
        out.insert(user, d);
    }
    Ok(out)
}

/// Whether `user`'s dismissals hide the notification of this cause made at `at_ms`:
/// two primary-key reads.
pub(super) fn hidden(
    conn: &Connection,
    user: &str,
    kind: &str,
    actor: &str,
    post: &[u8],
    at_ms: i64,
) -> StoreResult<bool> {
    let cleared = conn
        .prepare_cached("SELECT 1 FROM notification_clears WHERE user = ?1 AND upto >= ?2")?
        .exists(params![user, at_ms])?;
    Ok(cleared
        || conn
            .prepare_cached(
                "SELECT 1 FROM notification_dismissals
                  WHERE user = ?1 AND type = ?2 AND actor = ?3 AND post = ?4 AND upto >= ?5",
            )?
            .exists(params![user, kind, actor, post, at_ms])?)
}

pub(super) fn dismiss(
    tx: &Connection,
    user: &str,
    kind: NotificationType,
    actor: &str,
    post: Option<PostId>,
    upto_ms: i64,
) -> StoreResult<()> {
    let (kind, post) = (kind.as_str(), post_key(post));
    tx.prepare_cached(
        "INSERT INTO notification_dismissals (user, type, actor, post, upto)
         VALUES (?1, ?2, ?3, ?4, ?5)
         ON CONFLICT (user, type, actor, post) DO UPDATE SET upto = max(upto, ?5)",
    )?
    .execute(params![user, kind, actor, post, upto_ms])?;
    let removed = tx
        .prepare_cached(
            "DELETE FROM notifications
              WHERE user = ?1 AND type = ?2 AND actor = ?3 AND post = ?4 AND at <= ?5",
        )?
        .execute(params![user, kind, actor, post, upto_ms])?;
    if removed > 0 {
        move_group(tx, user, kind, &post, -1)?;
    }
    Ok(())
}

pub(super) fn clear(tx: &Connection, user: &str, upto_ms: i64) -> StoreResult<()> {
    tx.prepare_cached(
        "INSERT INTO notification_clears (user, upto) VALUES (?1, ?2)
         ON CONFLICT (user) DO UPDATE SET upto = max(upto, ?2)",
    )?
    .execute(params![user, upto_ms])?;
    tx.prepare_cached("DELETE FROM notification_dismissals WHERE user = ?1 AND upto <= ?2")?
        .execute(params![user, upto_ms])?;
    tx.prepare_cached("DELETE FROM notifications WHERE user = ?1 AND at <= ?2")?
        .execute(params![user, upto_ms])?;
    // The user's groups, from what is left of their notifications.
    tx.prepare_cached("DELETE FROM notification_groups WHERE user = ?1")?
        .execute([user])?;
    let left = read::of_user(tx, user)?;
    let mut insert = tx.prepare_cached(
        "INSERT INTO notification_groups (user, type, post, count, actors, latest_id, latest_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
    )?;
    for g in group_notifications(&left) {
        let actors = serde_json::to_string(&g.actors).map_err(|e| StoreError::Backend(e.into()))?;
        insert.execute(params![
            user,
            g.kind.as_str(),
            post_key(g.post),
            g.count as i64,
            actors,
            &g.latest_id.bytes()[..],
            g.latest_at_ms
        ])?;
    }
    Ok(())
}

/// `user`'s notification `id`, through `notifications_by_id`.
pub(super) fn one(conn: &Connection, user: &str, id: PostId) -> StoreResult<Option<Notification>> {
    Ok(conn
        .prepare_cached(
            "SELECT user, type, actor, post, id, at FROM notifications INDEXED BY notifications_by_id
              WHERE user = ?1 AND id = ?2",
        )?
        .query_row(params![user, &id.bytes()[..]], read::notification_from)
        .optional()?)
}
