//! Reposts on SQLite: `reposts (id, user, post, post_author)`, one row per (user, post)
//! (unique index `reposts_by_user`), with `posts.reposts_count` moved in the transaction
//! that inserts or deletes a repost. Indexes: `(user, id)` for a user's reposts (their
//! post list, fanout on read) and `(post, id)` for the reposts of a post (a delete's
//! removal, a timeline page's seen-once check). Format 7 (`reposts_schema`).

use async_trait::async_trait;
use rusqlite::{OptionalExtension, Transaction, params};

use super::{
    EmbeddedStore, IN_CHUNK, placeholders, post_before, post_id_at, record_change, rows_in,
};
use crate::domain::{ChangeOp, NameStamp, PostId, REPOSTS, ReplyTo, Repost};
use crate::store::{RepostStore, Reposted, StoreError, StoreResult};

/// The table, its indexes and the count column, created by the format-7 migration.
pub(super) fn reposts_schema(conn: &rusqlite::Connection) -> rusqlite::Result<()> {
    super::schema::add_column(conn, "posts", "reposts_count", "INTEGER NOT NULL DEFAULT 0")?;
    conn.execute_batch(
        "CREATE TABLE IF NOT EXISTS reposts (
             id          BLOB PRIMARY KEY,
             user        TEXT NOT NULL,
             post        BLOB NOT NULL,
             post_author TEXT NOT NULL
         ) WITHOUT ROWID;
         CREATE UNIQUE INDEX IF NOT EXISTS reposts_by_user ON reposts (user, post);
         CREATE INDEX IF NOT EXISTS reposts_by_user_id ON reposts (user, id);
         CREATE INDEX IF NOT EXISTS reposts_by_post ON reposts (post, id);",
    )
}

pub(super) mod merged;

use merged::{REPOST_IDS_BY_USER, merged_reposters};

const COLUMNS: &str = "id, user, post, post_author";

/// A post's reposts, newest first, below `?2` (`RepostStore::reposts_of_post`): a paged
/// read (`plans.rs`).
pub(super) const REPOSTS_OF_POST: &str = "SELECT id, user, post, post_author FROM reposts
     INDEXED BY reposts_by_post WHERE post = ?1 AND id < ?2 ORDER BY id DESC LIMIT ?3";
/// The same range the other way: the reposts just above `?2`, the nearest first.
pub(super) const REPOSTS_OF_POST_NEWER: &str = "SELECT id, user, post, post_author FROM reposts
     INDEXED BY reposts_by_post WHERE post = ?1 AND id > ?2 ORDER BY id LIMIT ?3";

/// Fanout on read: the newest reposts below `?2`, at most `?3`, by the user and
/// everyone they follow, through the `(user, id)` index (as `content::HOME_POSTS`).
pub(super) const HOME_REPOSTS: &str = "SELECT id, user, post, post_author FROM reposts
     WHERE user IN (SELECT followee FROM follows WHERE follower = ?1 UNION ALL SELECT ?1)
       AND id < ?2 ORDER BY id DESC LIMIT ?3";

fn repost_from_row(row: &rusqlite::Row<'_>) -> rusqlite::Result<Repost> {
    Ok(Repost {
        id: post_id_at(row, 0)?,
        user: row.get(1)?,
        post: ReplyTo {
            post: post_id_at(row, 2)?,
            author: row.get(3)?,
        },
    })
}

/// Moves the repost count of `post` by `delta`; nothing when it no longer exists.
fn count_repost(tx: &Transaction<'_>, post: PostId, delta: i64) -> StoreResult<()> {
    tx.prepare_cached("UPDATE posts SET reposts_count = reposts_count + ?2 WHERE id = ?1")?
        .execute(params![&post.bytes()[..], delta])?;
    Ok(())
}

/// Sets every post's `reposts_count` that differs from the reposts standing of it: the
/// counters' rebuild (`UserStore::recount_all`). Returns how many it wrote.
pub(super) fn recount_every_repost(tx: &rusqlite::Connection) -> rusqlite::Result<usize> {
    tx.execute(
        "UPDATE posts SET reposts_count =
             (SELECT count(*) FROM reposts r WHERE r.post = posts.id)
         WHERE reposts_count != (SELECT count(*) FROM reposts r WHERE r.post = posts.id)",
        [],
    )
}

fn record(tx: &Transaction<'_>, op: ChangeOp, repost: &Repost) -> StoreResult<()> {
    record_change(tx, REPOSTS, op, &repost.id.to_string(), Some(repost))
}

/// Removes every repost of `post` in the caller's transaction (a post's delete), each
/// with its change and its retraction mark. The caller moves the below clock (a kept
/// page with reposts stands on every repost of its originals, `feed::reposts`).
pub(super) fn remove_of(tx: &Transaction<'_>, post: PostId) -> StoreResult<Vec<Repost>> {
    let removed: Vec<Repost> = tx
        .prepare_cached(&format!(
            "DELETE FROM reposts WHERE post = ?1 RETURNING {COLUMNS}"
        ))?
        .query_map([&post.bytes()[..]], repost_from_row)?
        .collect::<rusqlite::Result<_>>()?;
    for repost in &removed {
        super::timelines::retractions::mark_delete(tx, repost.id)?;
        // As an unrepost: a merged reposter's entries are served by `hybrid`'s merge.
        super::timelines::versions::bump_merge_version(tx, &repost.user)?;
        record(tx, ChangeOp::Delete, repost)?;
    }
    Ok(removed)
}

#[async_trait]
impl RepostStore for EmbeddedStore {
    async fn repost(&self, user: &str, post: PostId, now_ms: i64) -> StoreResult<Reposted> {
        let user = user.to_owned();
        self.write(move |tx| {
            let found: Option<(i64, String, i64)> = tx
                .prepare_cached(
                    "SELECT followers_count, display_name, version FROM users WHERE id = ?1",
                )?
                .query_row([&user], |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)))
                .optional()?;
            let Some((followers, display_name, version)) = found else {
                return Err(StoreError::NotFound(format!("user {user}")));
            };
            let reposter_followers = followers.max(0) as u64;
            let reposter_name = NameStamp {
                display_name,
                version: version.max(0) as u64,
            };
            let standing = tx
                .prepare_cached(&format!(
                    "SELECT {COLUMNS} FROM reposts WHERE user = ?1 AND post = ?2"
                ))?
                .query_row(params![user, &post.bytes()[..]], repost_from_row)
                .optional()?;
            if let Some(repost) = standing {
                return Ok(Reposted {
                    repost,
                    created: false,
                    reposter_followers,
                    reposter_name,
                });
            }
            let original = super::threads::parent(tx, post)?;
            let id = super::content::next_post_id(tx, now_ms)?;
            tx.prepare_cached(
                "INSERT INTO reposts (id, user, post, post_author) VALUES (?1, ?2, ?3, ?4)",
            )?
            .execute(params![
                &id.bytes()[..],
                user,
                &post.bytes()[..],
                original.author
            ])?;
            count_repost(tx, post, 1)?;
            // A reposter's entries are theirs in `hybrid`'s merge as their posts are.
            super::timelines::versions::bump_merge_version(tx, &user)?;
            let repost = Repost {
                id,
                user,
                post: original,
            };
            record(tx, ChangeOp::Insert, &repost)?;
            Ok(Reposted {
                repost,
                created: true,
                reposter_followers,
                reposter_name,
            })
        })
        .await
    }

    async fn unrepost(&self, user: &str, post: PostId) -> StoreResult<Option<Repost>> {
        let user = user.to_owned();
        self.write(move |tx| {
            let removed = tx
                .prepare_cached(&format!(
                    "DELETE FROM reposts WHERE user = ?1 AND post = ?2 RETURNING {COLUMNS}"
                ))?
                .query_row(params![user, &post.bytes()[..]], repost_from_row)
                .optional()?;
            if let Some(repost) = &removed {
                count_repost(tx, post, -1)?;
                super::timelines::retractions::mark_delete(tx, repost.id)?;
                super::timelines::versions::bump_merge_version(tx, &repost.user)?;
                // A kept page with reposts stands on every repost of its originals,
                // not only on those its owner's cache holds (`feed::reposts`).
                super::timelines::versions::bump_below_clock(tx)?;
                record(tx, ChangeOp::Delete, repost)?;
            }
            Ok(removed)
        })
        .await
    }

    async fn remove_reposts_of(&self, post: PostId) -> StoreResult<Vec<Repost>> {
        self.write(move |tx| {
            let removed = remove_of(tx, post)?;
            if !removed.is_empty() {
                super::timelines::versions::bump_below_clock(tx)?;
            }
            Ok(removed)
        })
        .await
    }

    async fn reposts_by(
        &self,
        user: &str,
        before: Option<PostId>,
        limit: usize,
    ) -> StoreResult<Vec<Repost>> {
        let (user, before) = (user.to_owned(), post_before(before));
        self.read(move |conn| {
            let mut stmt = conn.prepare_cached(&format!(
                "SELECT {COLUMNS} FROM reposts INDEXED BY reposts_by_user_id
                 WHERE user = ?1 AND id < ?2 ORDER BY id DESC LIMIT ?3"
            ))?;
            let rows = stmt.query_map(params![user, before, limit as i64], repost_from_row)?;
            Ok(rows.collect::<rusqlite::Result<_>>()?)
        })
        .await
    }

    async fn home_reposts(
        &self,
        user: &str,
        before: Option<PostId>,
        limit: usize,
    ) -> StoreResult<Vec<Repost>> {
        let (user, before) = (user.to_owned(), post_before(before));
        self.read(move |conn| {
            let mut stmt = conn.prepare_cached(HOME_REPOSTS)?;
            let rows = stmt.query_map(params![user, before, limit as i64], repost_from_row)?;
            Ok(rows.collect::<rusqlite::Result<_>>()?)
        })
        .await
    }

    /// Bounded by the page, so read inline like a cache page. The flagged edges are
    /// looked at first in one statement (its own read transaction): a reader whose
    /// celebrities have no repost between the bounds (most readers) pays nothing more.
    async fn merged_reposts(
        &self,
        user: &str,
        before: Option<PostId>,
        above: Option<PostId>,
        limit: usize,
    ) -> StoreResult<Vec<Repost>> {
        if limit == 0 {
            return Ok(Vec::new());
        }
        let (user, before) = (user.to_owned(), post_before(before));
        let probe = self
            .read_statement_inline(|conn| merged_reposters(conn, &user, &before, above))
            .await?;
        if probe.is_empty() {
            return Ok(Vec::new());
        }
        // An empty blob is below every id.
        let above_key = above.map_or_else(Vec::new, |id| id.bytes().to_vec());
        self.read_inline(move |conn| {
            // Again inside the walk's transaction, so that its ids and rows agree.
            let mut reposters = merged_reposters(conn, &user, &before, above)?;
            let keys = super::content::home::merge_newest_of(
                conn,
                REPOST_IDS_BY_USER,
                &mut reposters,
                String::as_str,
                &before,
                &above_key,
                limit,
            )?;
            let mut by_id =
                conn.prepare_cached(&format!("SELECT {COLUMNS} FROM reposts WHERE id = ?1"))?;
            let mut reposts = Vec::with_capacity(keys.len());
            for (id, _) in keys {
                reposts.push(by_id.query_row([id.bytes()], repost_from_row)?);
            }
            Ok(reposts)
        })
        .await
    }

    async fn reposts_by_ids(&self, ids: &[PostId]) -> StoreResult<Vec<Repost>> {
        let ids: Vec<Vec<u8>> = ids.iter().map(|id| id.bytes().to_vec()).collect();
        self.read(move |conn| {
            let sql = |n| {
                format!(
                    "SELECT {COLUMNS} FROM reposts WHERE id IN ({})",
                    placeholders(n)
                )
            };
            Ok(rows_in(conn, &ids, sql, repost_from_row)?)
        })
        .await
    }

    async fn reposts_of(
        &self,
        posts: &[PostId],
        reposters: &[String],
        below: PostId,
    ) -> StoreResult<Vec<Repost>> {
        if posts.is_empty() || reposters.is_empty() {
            return Ok(Vec::new());
        }
        let posts: Vec<Vec<u8>> = posts.iter().map(|id| id.bytes().to_vec()).collect();
        let reposters = reposters.to_vec();
        let below = below.bytes().to_vec();
        self.read(move |conn| {
            // Both sets in the statement, so that only the matching rows are read
            // (from the unique `(user, post)` index or the `(post, id)` one, as the
            // planner finds cheaper), whatever number of reposts a post has.
            const CHUNK: usize = IN_CHUNK / 2;
            let mut found = Vec::new();
            for posts in posts.chunks(CHUNK) {
                for users in reposters.chunks(CHUNK) {
                    let sql = format!(
                        "SELECT {COLUMNS} FROM reposts
                         WHERE post IN ({}) AND user IN ({}) AND id < ?",
                        placeholders(posts.len()),
                        placeholders(users.len())
                    );
                    let mut stmt = conn.prepare_cached(&sql)?;
                    let mut params: Vec<&dyn rusqlite::ToSql> = Vec::new();
                    params.extend(posts.iter().map(|p| p as &dyn rusqlite::ToSql));
                    params.extend(users.iter().map(|u| u as &dyn rusqlite::ToSql));
                    params.push(&below);
                    let rows = stmt.query_map(params.as_slice(), repost_from_row)?;
                    for row in rows {
                        found.push(row?);
                    }
                }
            }
            Ok(found)
        })
        .await
    }

    async fn reposts_of_post(
        &self,
        post: PostId,
        before: Option<PostId>,
        limit: usize,
    ) -> StoreResult<Vec<Repost>> {
        let before = post_before(before);
        self.reposts_of_post_page(REPOSTS_OF_POST, post, before, limit)
            .await
    }

    async fn reposts_of_post_newer(
        &self,
        post: PostId,
        after: PostId,
        limit: usize,
    ) -> StoreResult<Vec<Repost>> {
        let after = after.bytes().to_vec();
        self.reposts_of_post_page(REPOSTS_OF_POST_NEWER, post, after, limit)
            .await
    }
}

impl EmbeddedStore {
    /// One page of a post's reposts by `sql`, from the id `bound`.
    async fn reposts_of_post_page(
        &self,
        sql: &'static str,
        post: PostId,
        bound: Vec<u8>,
        limit: usize,
    ) -> StoreResult<Vec<Repost>> {
        self.read_inline(move |conn| {
            let mut stmt = conn.prepare_cached(sql)?;
            let rows = stmt.query_map(
                params![&post.bytes()[..], bound, limit as i64],
                repost_from_row,
            )?;
            Ok(rows.collect::<rusqlite::Result<_>>()?)
        })
        .await
    }
}
