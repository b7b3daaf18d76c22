//! The follow graph on SQLite: one `follows` row per edge, indexed both ways, so the
//! two directions can never disagree; counters move in the same transaction.

use async_trait::async_trait;
use rusqlite::{OptionalExtension, params};
use serde::Serialize;

use super::relations;
use super::timelines::{retractions, versions};
use super::{EmbeddedStore, add_to_counter, record_change, user_exists};
use crate::domain::ChangeOp;
use crate::store::{EdgeState, GraphStore, StoreError, StoreResult};

#[derive(Serialize)]
struct FollowDoc<'a> {
    follower: &'a str,
    followee: &'a str,
}

#[async_trait]
impl GraphStore for EmbeddedStore {
    async fn follow(&self, follower: &str, followee: &str, now_ms: i64) -> StoreResult<bool> {
        // Where MongoDB's follow has looked for a block and not yet written: here the
        // look is inside the transaction below, so a block that lands now still counts.
        crate::faults::gate("follow.checked", follower).await;
        let (follower, followee) = (follower.to_owned(), followee.to_owned());
        self.write(move |tx| {
            for id in [&follower, &followee] {
                if !user_exists(tx, id)? {
                    return Err(StoreError::NotFound(format!("user {id}")));
                }
            }
            // Checked in the follow's own transaction: no block can land in between.
            if relations::blocked_between(tx, &follower, &followee)? {
                return Err(crate::store::relations::refused(&follower, &followee));
            }
            let added = tx
                .prepare_cached(
                    "INSERT OR IGNORE INTO follows (follower, followee, created_at, merged)
                     VALUES (?1, ?2, ?3, (SELECT merged FROM users WHERE id = ?2))",
                )?
                .execute(params![follower, followee, now_ms])?;
            if added == 0 {
                return Ok(false);
            }
            retractions::clear_unfollow(tx, &follower, &followee)?;
            // Always, not only for a merged followee: which replies a page of the
            // follower's shows depends on whom they follow (`reply_visible`), so a kept
            // page must not outlive any follow or unfollow of theirs.
            versions::bump_version(tx, &follower)?;
            add_to_counter(tx, "following_count", &follower, 1)?;
            add_to_counter(tx, "followers_count", &followee, 1)?;
            let doc = FollowDoc {
                follower: &follower,
                followee: &followee,
            };
            record_change(
                tx,
                "follows",
                ChangeOp::Insert,
                &format!("{follower}/{followee}"),
                Some(&doc),
            )?;
            Ok(true)
        })
        .await
    }

    async fn unfollow(&self, follower: &str, followee: &str) -> StoreResult<bool> {
        let (follower, followee) = (follower.to_owned(), followee.to_owned());
        self.write(move |tx| remove_edge(tx, &follower, &followee))
            .await
    }

    async fn edge(&self, follower: &str, followee: &str) -> StoreResult<Option<EdgeState>> {
        let (follower, followee) = (follower.to_owned(), followee.to_owned());
        self.read_inline(move |conn| {
            Ok(conn
                .prepare_cached(
                    "SELECT created_at, backfilled FROM follows
                     WHERE follower = ?1 AND followee = ?2",
                )?
                .query_row([&follower, &followee], |row| {
                    Ok(EdgeState {
                        created_ms: row.get(0)?,
                        backfilled: row.get(1)?,
                    })
                })
                .optional()?)
        })
        .await
    }

    /// Not a change of the graph: nothing is recorded in the feed.
    async fn mark_backfilled(
        &self,
        follower: &str,
        followee: &str,
        created_ms: i64,
    ) -> StoreResult<()> {
        let (follower, followee) = (follower.to_owned(), followee.to_owned());
        self.write(move |tx| {
            tx.prepare_cached(
                "UPDATE follows SET backfilled = 1
                 WHERE follower = ?1 AND followee = ?2 AND created_at = ?3",
            )?
            .execute(params![follower, followee, created_ms])?;
            Ok(())
        })
        .await
    }

    async fn unbackfilled(
        &self,
        after: Option<(&str, &str)>,
        limit: usize,
    ) -> StoreResult<Vec<(String, String)>> {
        let (from, to) = after.unwrap_or(("", ""));
        let (from, to) = (from.to_owned(), to.to_owned());
        self.read(move |conn| {
            let rows = conn
                .prepare_cached(
                    "SELECT follower, followee FROM follows
                     WHERE (follower, followee) > (?1, ?2) AND NOT backfilled
                     ORDER BY follower, followee LIMIT ?3",
                )?
                .query_map(params![from, to, limit as i64], |row| {
                    Ok((row.get(0)?, row.get(1)?))
                })?
                .collect::<rusqlite::Result<_>>()?;
            Ok(rows)
        })
        .await
    }

    async fn celebrity(&self, author: &str) -> StoreResult<bool> {
        let author = author.to_owned();
        self.read_inline(move |conn| {
            let flag: Option<bool> = conn
                .prepare_cached("SELECT celebrity FROM users WHERE id = ?1")?
                .query_row([&author], |row| row.get(0))
                .optional()?;
            Ok(flag.unwrap_or(false))
        })
        .await
    }

    /// One transaction: the three steps of becoming a celebrity cannot be seen apart.
    async fn reclassify(
        &self,
        author: &str,
        enter_above: u64,
        leave_below: u64,
    ) -> StoreResult<Option<bool>> {
        let author = author.to_owned();
        self.write(move |tx| {
            let found: Option<(i64, bool)> = tx
                .prepare_cached("SELECT followers_count, celebrity FROM users WHERE id = ?1")?
                .query_row([&author], |row| Ok((row.get(0)?, row.get(1)?)))
                .optional()?;
            let Some((followers, celebrity)) = found else {
                return Ok(None);
            };
            let followers = followers.max(0) as u64;
            if !celebrity && followers > enter_above {
                tx.prepare_cached(
                    "UPDATE follows SET merged = 1 WHERE followee = ?1 AND NOT merged",
                )?
                .execute([&author])?;
                tx.prepare_cached("UPDATE users SET merged = 1, celebrity = 1 WHERE id = ?1")?
                    .execute([&author])?;
                versions::enter_merged(tx, &author)?;
                return Ok(Some(true));
            }
            if celebrity && followers < leave_below {
                tx.prepare_cached("UPDATE users SET celebrity = 0 WHERE id = ?1")?
                    .execute([&author])?;
                return Ok(Some(false));
            }
            Ok(None)
        })
        .await
    }

    async fn following(
        &self,
        user: &str,
        after: Option<&str>,
        limit: usize,
    ) -> StoreResult<Vec<String>> {
        self.neighbours(FOLLOWING, user, after, limit).await
    }

    async fn followers(
        &self,
        user: &str,
        after: Option<&str>,
        limit: usize,
    ) -> StoreResult<Vec<String>> {
        self.neighbours(FOLLOWERS, user, after, limit).await
    }

    async fn following_below(
        &self,
        user: &str,
        below: &str,
        limit: usize,
    ) -> StoreResult<Vec<String>> {
        self.neighbours(FOLLOWING_BELOW, user, Some(below), limit)
            .await
    }

    async fn followers_below(
        &self,
        user: &str,
        below: &str,
        limit: usize,
    ) -> StoreResult<Vec<String>> {
        self.neighbours(FOLLOWERS_BELOW, user, Some(below), limit)
            .await
    }
}

/// Removes the edge `follower` → `followee` in `tx`, with what an unfollow does beside
/// it: the retraction mark, the merged version, the counters and the change-feed entry
/// (a block's removals are these unfollows too). Returns whether an edge was removed.
pub(super) fn remove_edge(
    tx: &rusqlite::Transaction<'_>,
    follower: &str,
    followee: &str,
) -> StoreResult<bool> {
    let removed = tx
        .prepare_cached("DELETE FROM follows WHERE follower = ?1 AND followee = ?2")?
        .execute(params![follower, followee])?;
    if removed == 0 {
        return Ok(false);
    }
    retractions::mark_unfollow(tx, follower, followee)?;
    // As for a follow: the replies a kept page shows depend on the edge.
    versions::bump_version(tx, follower)?;
    add_to_counter(tx, "following_count", follower, -1)?;
    add_to_counter(tx, "followers_count", followee, -1)?;
    record_change::<()>(
        tx,
        "follows",
        ChangeOp::Delete,
        &format!("{follower}/{followee}"),
        None,
    )?;
    Ok(true)
}

/// One direction of the graph: the query for the ids on the far side of `user`'s edges.
pub(super) const FOLLOWING: &str =
    "SELECT followee FROM follows WHERE follower = ?1 AND followee > ?2
                         ORDER BY followee LIMIT ?3";
pub(super) const FOLLOWERS: &str =
    "SELECT follower FROM follows WHERE followee = ?1 AND follower > ?2
                         ORDER BY follower LIMIT ?3";
/// The same ranges read the other way: the ids just below `?2`, the nearest first.
pub(super) const FOLLOWING_BELOW: &str = "SELECT followee FROM follows
     WHERE follower = ?1 AND followee < ?2 ORDER BY followee DESC LIMIT ?3";
pub(super) const FOLLOWERS_BELOW: &str = "SELECT follower FROM follows
     WHERE followee = ?1 AND follower < ?2 ORDER BY follower DESC LIMIT ?3";

impl EmbeddedStore {
    /// Ids across `user`'s edges in one direction, from `query` bounded by `after`.
    async fn neighbours(
        &self,
        query: &'static str,
        user: &str,
        after: Option<&str>,
        limit: usize,
    ) -> StoreResult<Vec<String>> {
        let (user, after) = (user.to_owned(), after.unwrap_or("").to_owned());
        self.read(move |conn| {
            let mut stmt = conn.prepare_cached(query)?;
            let rows = stmt.query_map(params![user, after, limit as i64], |row| row.get(0))?;
            Ok(rows.collect::<rusqlite::Result<_>>()?)
        })
        .await
    }
}
