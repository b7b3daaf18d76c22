//! Reads of the embedded notifications: a page either way (per type through
//! `notifications_by_type`, then merged), a page of groups either way (refilled while
//! hidden actors empty groups out), and the sources a rebuild derives from.

use rusqlite::{Connection, params};

use super::{kind_of, post_of};
use crate::domain::{
    Notification, NotificationFilter, NotificationGroup, NotifyPost, NotifySources, PostId,
};
use crate::store::embedded::rows::{post_after, post_before, post_id_at};
use crate::store::{PostRange, StoreResult};

pub(super) fn notification_from(row: &rusqlite::Row<'_>) -> rusqlite::Result<Notification> {
    let kind: String = row.get(1)?;
    Ok(Notification {
        user: row.get(0)?,
        kind: kind_of(&kind)?,
        actor: row.get(2)?,
        post: post_of(row, 3)?,
        id: post_id_at(row, 4)?,
        at_ms: row.get(5)?,
    })
}

/// The JSON list of `items`, bound as one parameter and read with `json_each`.
fn json_list<T: AsRef<str>>(items: &[T]) -> String {
    let items: Vec<&str> = items.iter().map(AsRef::as_ref).collect();
    serde_json::to_string(&items).unwrap_or_else(|_| "[]".into())
}

/// The bound, comparison and order of a read in `range`: below `before` newest first,
/// or above `after` oldest first (the same index walked the other way).
fn keyset(range: PostRange) -> (Vec<u8>, &'static str, &'static str) {
    match range {
        PostRange::Older(before) => (post_before(before), "<", "DESC"),
        PostRange::Newer(after) => (post_after(Some(after)), ">", "ASC"),
    }
}

/// `user`'s notifications in `range`, at most `limit`, in its order.
pub(super) fn page(
    conn: &Connection,
    user: &str,
    filter: &NotificationFilter,
    range: PostRange,
    limit: usize,
) -> StoreResult<Vec<Notification>> {
    let hidden = json_list(&filter.hidden);
    let (bound, cmp, order) = keyset(range);
    let mut out = Vec::new();
    // Per type through `notifications_by_type` (at most `limit` rows each), then merged:
    // a filter never makes a read walk the other types' rows.
    let kinds: Vec<Option<&str>> = if filter.types.is_empty() {
        vec![None]
    } else {
        filter.types.iter().map(|t| Some(t.as_str())).collect()
    };
    for kind in kinds {
        let sql = match kind {
            None => format!(
                "SELECT user, type, actor, post, id, at FROM notifications
                 WHERE user = ?1 AND id {cmp} ?2 AND ?3 IS NULL
                   AND actor NOT IN (SELECT value FROM json_each(?4))
                 ORDER BY id {order} LIMIT ?5"
            ),
            Some(_) => format!(
                "SELECT user, type, actor, post, id, at FROM notifications
                 WHERE user = ?1 AND type = ?3 AND id {cmp} ?2
                   AND actor NOT IN (SELECT value FROM json_each(?4))
                 ORDER BY id {order} LIMIT ?5"
            ),
        };
        let rows = conn
            .prepare_cached(&sql)?
            .query_map(
                params![user, bound, kind, hidden, limit as i64],
                notification_from,
            )?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        out.extend(rows);
    }
    match range {
        PostRange::Older(_) => out.sort_by_key(|n| std::cmp::Reverse(n.id)),
        PostRange::Newer(_) => out.sort_by_key(|n| n.id),
    }
    out.truncate(limit);
    Ok(out)
}

/// `user`'s groups in `range` (by their latest notification), at most `limit`, in its
/// order.
pub(super) fn groups_page(
    conn: &Connection,
    user: &str,
    filter: &NotificationFilter,
    mut range: PostRange,
    limit: usize,
) -> StoreResult<Vec<NotificationGroup>> {
    let mut out = Vec::new();
    let types = json_list(&filter.types.iter().map(|t| t.as_str()).collect::<Vec<_>>());
    let any = filter.types.is_empty();
    // Refilled while hidden actors empty groups out, one page of rows per round.
    loop {
        let (bound, cmp, order) = keyset(range);
        let rows: Vec<NotificationGroup> = conn
            .prepare_cached(&format!(
                "SELECT type, post, count, actors, latest_id, latest_at FROM notification_groups
                 WHERE user = ?1 AND latest_id {cmp} ?2
                   AND (?3 OR type IN (SELECT value FROM json_each(?4)))
                 ORDER BY latest_id {order} LIMIT ?5"
            ))?
            .query_map(params![user, bound, any, types, limit as i64], |row| {
                let kind: String = row.get(0)?;
                let actors: String = row.get(3)?;
                Ok(NotificationGroup {
                    kind: kind_of(&kind)?,
                    post: post_of(row, 1)?,
                    count: row.get::<_, i64>(2)?.max(0) as u64,
                    actors: serde_json::from_str(&actors).unwrap_or_default(),
                    latest_id: post_id_at(row, 4)?,
                    latest_at_ms: row.get(5)?,
                })
            })?
            .collect::<rusqlite::Result<_>>()?;
        let full = rows.len() == limit;
        if let Some(last) = rows.last() {
            range = match range {
                PostRange::Older(_) => PostRange::Older(Some(last.latest_id)),
                PostRange::Newer(_) => PostRange::Newer(last.latest_id),
            };
        }
        for mut g in rows {
            g.actors.retain(|a| !filter.hidden.contains(a));
            if !g.actors.is_empty() && out.len() < limit {
                out.push(g);
            }
        }
        if !full || out.len() >= limit {
            return Ok(out);
        }
    }
}

/// Everything notifications derive from, in one read transaction.
pub(super) fn sources(conn: &Connection) -> StoreResult<NotifySources> {
    let mut s = NotifySources::default();
    for row in conn
        .prepare("SELECT id, created_at FROM users")?
        .query_map([], |row| Ok((row.get(0)?, row.get(1)?)))?
    {
        let (id, at): (String, i64) = row?;
        s.users.insert(id, at);
    }
    for row in conn
        .prepare("SELECT follower, followee, created_at FROM follows")?
        .query_map([], |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)))?
    {
        let (a, b, at): (String, String, i64) = row?;
        s.follows.insert((a, b), at);
    }
    for row in conn
        .prepare("SELECT user, post, created_at FROM likes")?
        .query_map([], |row| {
            Ok((row.get(0)?, post_id_at(row, 1)?, row.get(2)?))
        })?
    {
        let (user, post, at): (String, PostId, i64) = row?;
        s.likes.insert((user, post), at);
    }
    for row in conn
        .prepare("SELECT user, post, id FROM reposts")?
        .query_map([], |row| {
            Ok((row.get(0)?, post_id_at(row, 1)?, post_id_at(row, 2)?))
        })?
    {
        let (user, post, id): (String, PostId, PostId) = row?;
        s.reposts.insert((user, post), id.timestamp_ms());
    }
    for row in conn
        .prepare(&format!(
            "SELECT {} FROM posts",
            crate::store::embedded::rows::POST_COLUMNS
        ))?
        .query_map([], crate::store::embedded::rows::post_from_row)?
    {
        let post = row?;
        s.posts.insert(
            post.id,
            NotifyPost {
                id: post.id,
                author: post.author,
                text: post.text,
                reply_to: post.reply_to,
            },
        );
    }
    s.dismissals = super::dismissals::every_dismissal(conn)?;
    Ok(s)
}

/// Every notification of `user`, by `notifications_by_id`.
pub(super) fn of_user(conn: &Connection, user: &str) -> StoreResult<Vec<Notification>> {
    let mut stmt = conn.prepare_cached(
        "SELECT user, type, actor, post, id, at FROM notifications WHERE user = ?1 ORDER BY id",
    )?;
    let rows = stmt.query_map([user], notification_from)?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}
