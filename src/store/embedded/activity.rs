//! The activity log on SQLite. The head row plays the primary document's counters; the
//! write transaction makes "take the next sequence number and place the entry" atomic,
//! as the conditional `findOneAndUpdate` and the `$inc` counter do on MongoDB.

use async_trait::async_trait;
use rusqlite::{Connection, OptionalExtension, params};

use super::leases::check_fence;
use super::rows::post_id_at;
use super::{EmbeddedStore, likers, record_change, user_exists};
use crate::domain::{
    Activity, ActivityLayout, ActivityLimits, ActivityPage, ActivityType, ChangeOp, Fence, PostId,
    Slot, window,
};
use crate::store::{ActivityStore, Liker, StoreError, StoreResult};

/// Whether one like stands (the primary key).
pub(super) const LIKE_HELD: &str = "SELECT 1 FROM likes WHERE user = ?1 AND post = ?2";

struct Head {
    limits: ActivityLimits,
    primary_count: u64,
    overflow_count: u64,
    /// The feed order of the last change the activity worker applied; -1 for none.
    applied: i64,
    /// The newest entry's time.
    last_ts: i64,
}

fn head(conn: &rusqlite::Connection, user: &str) -> rusqlite::Result<Option<Head>> {
    conn.prepare_cached(
        "SELECT primary_limit, page_size, primary_count, overflow_count, applied, last_ts
         FROM activity_logs WHERE user = ?1",
    )?
    .query_row([user], |row| {
        Ok(Head {
            limits: ActivityLimits {
                primary_limit: row.get(0)?,
                page_size: row.get(1)?,
            },
            primary_count: row.get::<_, i64>(2)? as u64,
            overflow_count: row.get::<_, i64>(3)? as u64,
            applied: row.get(4)?,
            last_ts: row.get(5)?,
        })
    })
    .optional()
}

/// The user's log head, creating the log with `limits` unless it exists. `NotFound` for
/// unknown users.
fn log_head(tx: &Connection, user: &str, limits: ActivityLimits) -> StoreResult<Head> {
    if !user_exists(tx, user)? {
        return Err(StoreError::NotFound(format!("user {user}")));
    }
    tx.prepare_cached(
        "INSERT OR IGNORE INTO activity_logs (user, primary_limit, page_size) VALUES (?1, ?2, ?3)",
    )?
    .execute(params![user, limits.primary_limit, limits.page_size])?;
    head(tx, user)?.ok_or_else(|| StoreError::NotFound(format!("activity log of {user}")))
}

/// Takes the next sequence number after `head` (just read by [`log_head`]) and writes
/// the entry in its slot, in the caller's transaction.
fn append(
    tx: &Connection,
    user: &str,
    head: &Head,
    kind: ActivityType,
    reference: String,
    ts_ms: i64,
) -> StoreResult<Activity> {
    let fixed = head.limits;
    let (seq, slot) = if head.primary_count < u64::from(fixed.primary_limit) {
        tx.prepare_cached(
            "UPDATE activity_logs SET primary_count = primary_count + 1 WHERE user = ?1",
        )?
        .execute([&user])?;
        (head.primary_count, Slot::Primary)
    } else {
        let seq = u64::from(fixed.primary_limit) + head.overflow_count;
        let slot = fixed.slot(seq);
        let Slot::Page(page) = slot else {
            unreachable!("past the primary limit")
        };
        tx.prepare_cached(
            "UPDATE activity_logs SET overflow_count = overflow_count + 1,
                         overflow_pages = max(overflow_pages, ?2) WHERE user = ?1",
        )?
        .execute(params![user, page as i64 + 1])?;
        (seq, slot)
    };
    let page = match slot {
        Slot::Primary => -1,
        Slot::Page(page) => page as i64,
    };
    tx.prepare_cached(
                "INSERT INTO activity_entries (user, seq, page, type, ts, ref) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            )?
            .execute(params![user, seq as i64, page, kind.as_str(), ts_ms, reference])?;
    Ok(Activity {
        seq,
        kind,
        ts_ms,
        reference,
    })
}

/// Adds the columns the activity worker's watermark needs to logs made before it.
pub(super) fn migrate(conn: &Connection) -> rusqlite::Result<()> {
    let has_applied = conn
        .prepare("SELECT 1 FROM pragma_table_info('activity_logs') WHERE name = 'applied'")?
        .exists([])?;
    if !has_applied {
        conn.execute_batch(
            "ALTER TABLE activity_logs ADD COLUMN applied INTEGER NOT NULL DEFAULT -1;
             ALTER TABLE activity_logs ADD COLUMN last_ts INTEGER NOT NULL DEFAULT 0;",
        )?;
    }
    Ok(())
}

#[async_trait]
impl ActivityStore for EmbeddedStore {
    async fn record_activity(
        &self,
        user: &str,
        kind: ActivityType,
        reference: &str,
        ts_ms: i64,
        limits: ActivityLimits,
    ) -> StoreResult<Activity> {
        let (user, reference) = (user.to_owned(), reference.to_owned());
        self.write(move |tx| {
            let head = log_head(tx, &user, limits)?;
            append(tx, &user, &head, kind, reference, ts_ms)
        })
        .await
    }

    async fn apply_activity(
        &self,
        fence: &Fence,
        seq: u64,
        user: &str,
        kind: ActivityType,
        reference: &str,
        ts_ms: i64,
        limits: ActivityLimits,
    ) -> StoreResult<Option<Activity>> {
        let (fence, user, reference) = (fence.clone(), user.to_owned(), reference.to_owned());
        self.write(move |tx| {
            // Fence: the lease, checked in the transaction that writes the entry.
            check_fence(tx, &fence.lease, &fence.holder, fence.version)?;
            let head = log_head(tx, &user, limits)?;
            // Replay: this change, or a later one, is already in the log.
            if head.applied >= seq as i64 {
                return Ok(None);
            }
            let ts_ms = ts_ms.max(head.last_ts);
            let activity = append(tx, &user, &head, kind, reference, ts_ms)?;
            tx.prepare_cached(
                "UPDATE activity_logs SET applied = ?2, last_ts = ?3 WHERE user = ?1",
            )?
            .execute(params![user, seq as i64, ts_ms])?;
            Ok(Some(activity))
        })
        .await
    }

    /// One transaction: the fence, the old logs out, every log built again from the
    /// sources set-based (see `bulk/activity.rs`), so no reader ever sees a half-rebuilt
    /// log. Every change up to the newest this transaction sees is in the sources read:
    /// the worker, continuing from the head it took before, skips those.
    async fn rebuild_activity(&self, fence: &Fence, limits: ActivityLimits) -> StoreResult<()> {
        let fence = fence.clone();
        self.write(move |tx| {
            check_fence(tx, &fence.lease, &fence.holder, fence.version)?;
            tx.execute_batch("DELETE FROM activity_entries; DELETE FROM activity_logs;")?;
            let newest: Option<i64> =
                tx.query_row("SELECT max(pos) FROM changes", [], |row| row.get(0))?;
            super::bulk::build_logs(tx, "", None, limits, newest.unwrap_or(-1))?;
            Ok(())
        })
        .await
    }

    async fn activities(&self, user: &str, skip: u64, limit: u64) -> StoreResult<ActivityPage> {
        let user = user.to_owned();
        self.read(move |conn| {
            if !user_exists(conn, &user)? {
                return Err(StoreError::NotFound(format!("user {user}")));
            }
            let Some(head) = head(conn, &user)? else {
                return Ok(ActivityPage {
                    items: Vec::new(),
                    total: 0,
                });
            };
            let total = head.primary_count + head.overflow_count;
            let Some(range) = window(total, skip, limit) else {
                return Ok(ActivityPage {
                    items: Vec::new(),
                    total,
                });
            };
            let mut stmt = conn.prepare_cached(
                "SELECT seq, type, ts, ref FROM activity_entries
                 WHERE user = ?1 AND seq BETWEEN ?2 AND ?3 ORDER BY seq DESC",
            )?;
            let rows = stmt.query_map(
                params![user, *range.start() as i64, *range.end() as i64],
                |row| {
                    let kind: String = row.get(1)?;
                    Ok((row.get::<_, i64>(0)?, kind, row.get(2)?, row.get(3)?))
                },
            )?;
            let mut items = Vec::new();
            for row in rows {
                let (seq, kind, ts_ms, reference) = row?;
                let kind = ActivityType::parse(&kind).ok_or_else(|| {
                    StoreError::Backend(anyhow::anyhow!("unknown activity type {kind:?}"))
                })?;
                items.push(Activity {
                    seq: seq as u64,
                    kind,
                    ts_ms,
                    reference,
                });
            }
            Ok(ActivityPage { items, total })
        })
        .await
    }

    async fn activity_layout(&self, user: &str) -> StoreResult<ActivityLayout> {
        let user = user.to_owned();
        self.read(move |conn| {
            let mut layout = ActivityLayout::default();
            let mut stmt = conn.prepare_cached(
                "SELECT page, count(*) FROM activity_entries WHERE user = ?1 GROUP BY page ORDER BY page",
            )?;
            let rows = stmt.query_map([&user], |row| Ok((row.get::<_, i64>(0)?, row.get::<_, i64>(1)?)))?;
            for row in rows {
                let (page, count) = row?;
                if page < 0 {
                    layout.primary = count as u64;
                } else {
                    layout.pages.push((page as u64, count as u64));
                }
            }
            Ok(layout)
        })
        .await
    }

    async fn like(&self, user: &str, post: PostId, now_ms: i64) -> StoreResult<bool> {
        let user = user.to_owned();
        self.write(move |tx| {
            if !user_exists(tx, &user)? {
                return Err(StoreError::NotFound(format!("user {user}")));
            }
            let exists = tx
                .prepare_cached("SELECT 1 FROM posts WHERE id = ?1")?
                .exists([&post.bytes()[..]])?;
            if !exists {
                return Err(StoreError::NotFound(format!("post {post}")));
            }
            let added = tx
                .prepare_cached(
                    "INSERT OR IGNORE INTO likes (user, post, created_at) VALUES (?1, ?2, ?3)",
                )?
                .execute(params![user, &post.bytes()[..], now_ms])?;
            if added > 0 {
                let doc = serde_json::json!({ "user": user, "post": post.to_string() });
                record_change(
                    tx,
                    "likes",
                    ChangeOp::Insert,
                    &format!("{user}/{post}"),
                    Some(&doc),
                )?;
            }
            Ok(added > 0)
        })
        .await
    }

    async fn unlike(&self, user: &str, post: PostId) -> StoreResult<bool> {
        let user = user.to_owned();
        self.write(move |tx| {
            let removed = tx
                .prepare_cached("DELETE FROM likes WHERE user = ?1 AND post = ?2")?
                .execute(params![user, &post.bytes()[..]])?;
            if removed > 0 {
                record_change::<()>(
                    tx,
                    "likes",
                    ChangeOp::Delete,
                    &format!("{user}/{post}"),
                    None,
                )?;
            }
            Ok(removed > 0)
        })
        .await
    }

    async fn likes_standing(
        &self,
        likes: &[(String, PostId)],
    ) -> StoreResult<Vec<(String, PostId)>> {
        let likes = likes.to_vec();
        self.read(move |conn| {
            let mut stmt = conn.prepare_cached(LIKE_HELD)?;
            let mut held = Vec::new();
            for (user, post) in likes {
                let found = stmt
                    .query_row(params![user, &post.bytes()[..]], |_| Ok(()))
                    .optional()?;
                if found.is_some() {
                    held.push((user, post));
                }
            }
            Ok(held)
        })
        .await
    }

    async fn likers(
        &self,
        post: PostId,
        before: Option<&Liker>,
        limit: usize,
    ) -> StoreResult<Vec<Liker>> {
        match before {
            None => self.likers_page(likers::LIKERS, post, None, limit).await,
            Some(b) => {
                self.likers_page(likers::LIKERS_BEFORE, post, Some(b), limit)
                    .await
            }
        }
    }

    async fn likers_newer(
        &self,
        post: PostId,
        after: &Liker,
        limit: usize,
    ) -> StoreResult<Vec<Liker>> {
        self.likers_page(likers::LIKERS_AFTER, post, Some(after), limit)
            .await
    }

    async fn like_counts(&self, posts: &[PostId]) -> StoreResult<Vec<(PostId, u64)>> {
        let posts: Vec<Vec<u8>> = posts.iter().map(|p| p.bytes().to_vec()).collect();
        if posts.is_empty() {
            return Ok(Vec::new());
        }
        self.read(move |conn| {
            let marks = vec!["?"; posts.len()].join(",");
            let sql = format!(
                "SELECT post, COUNT(*) FROM likes INDEXED BY likes_by_post \
                 WHERE post IN ({marks}) GROUP BY post"
            );
            let mut stmt = conn.prepare(&sql)?;
            let rows = stmt.query_map(rusqlite::params_from_iter(&posts), |row| {
                Ok((post_id_at(row, 0)?, row.get::<_, i64>(1)?.max(0) as u64))
            })?;
            Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
        })
        .await
    }
}

/// A post's likers, newest first (`ActivityStore::likers`), from the start and from a
/// cursor: paged reads (`plans.rs`).
/// Format 11: the likes of a post by time, for its likers list
/// (`ActivityStore::likers`).
pub(super) fn likes_by_post_schema(conn: &Connection) -> rusqlite::Result<()> {
    conn.execute_batch(
        "CREATE INDEX IF NOT EXISTS likes_by_post ON likes (post, created_at, user);",
    )
}
