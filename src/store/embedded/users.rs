//! Users on SQLite: one row per profile; renames bump `version` in the same statement,
//! every counter write `counter_version` (see `Counted`).

use async_trait::async_trait;
use rusqlite::{Connection, OptionalExtension, params};

use super::leases::check_fence;
use super::name_words;
use super::timelines::{names, versions};
use super::{EmbeddedStore, IN_CHUNK, placeholders, post_id_at, record_change, rows_in};
use crate::domain::{AccountView, AuthorView, ChangeOp, Fence, NewUser, PostId, User};
use crate::store::users::prefix_end;
use crate::store::{Counted, NameWord, Recount, StoreError, StoreResult, UserStore};

/// One user's counters' version and counts from the sources, read in one statement (one
/// snapshot), when the user needs a write: `counted_seq` below the recount's seq and,
/// unless `always`, a stored count that differs.
const COUNT_SOURCES: &str = "
SELECT counter_version, posts, following, followers
FROM (SELECT counter_version, counted_seq, posts_count, following_count, followers_count,
             (SELECT count(*) FROM posts WHERE author = ?1) AS posts,
             (SELECT count(*) FROM follows WHERE follower = ?1) AS following,
             (SELECT count(*) FROM follows WHERE followee = ?1) AS followers
      FROM users WHERE id = ?1)
WHERE counted_seq < ?2
  AND (?3 OR posts_count <> posts OR following_count <> following
       OR followers_count <> followers)";

/// A recount's write, only where the counters' version is still the one read.
const WRITE_COUNTS: &str = "
UPDATE users SET posts_count = ?3, following_count = ?4, followers_count = ?5,
                 counted_seq = ?6, counter_version = counter_version + 1
WHERE id = ?1 AND counter_version = ?2";

/// Every user's counts from the sources, one index range count each, and `counted_seq`
/// at least `seq`. Shared by the counters worker's rebuild and the bulk loader.
pub(super) fn recount_every_user(tx: &Connection, seq: i64) -> rusqlite::Result<usize> {
    tx.execute(
        "UPDATE users SET
           posts_count = (SELECT count(*) FROM posts WHERE author = users.id),
           following_count = (SELECT count(*) FROM follows WHERE follower = users.id),
           followers_count = (SELECT count(*) FROM follows WHERE followee = users.id),
           counted_seq = max(counted_seq, ?1),
           counter_version = counter_version + 1",
        [seq],
    )
}

pub(super) fn user_from_row(row: &rusqlite::Row<'_>) -> rusqlite::Result<User> {
    Ok(User {
        id: row.get(0)?,
        display_name: row.get(1)?,
        followers_count: row.get::<_, i64>(2)? as u64,
        following_count: row.get::<_, i64>(3)? as u64,
        posts_count: row.get::<_, i64>(4)? as u64,
        created_at_ms: row.get(5)?,
        version: row.get::<_, i64>(6)? as u64,
    })
}

pub(super) const USER_COLUMNS: &str =
    "id, display_name, followers_count, following_count, posts_count, created_at, version";

/// A user's profile, then the id of their newest post and of their newest repost: one
/// seek of `posts_by_author` and one of `reposts_by_user_id` per user (`plans.rs` checks
/// that they seek).
static ACCOUNT_COLUMNS: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
    format!(
        "{USER_COLUMNS},
         (SELECT id FROM posts WHERE author = users.id ORDER BY id DESC LIMIT 1),
         (SELECT id FROM reposts WHERE user = users.id ORDER BY id DESC LIMIT 1)"
    )
});

/// The accounts of `n` ids.
pub(super) fn accounts_sql(n: usize) -> String {
    format!(
        "SELECT {} FROM users WHERE id IN ({})",
        *ACCOUNT_COLUMNS,
        placeholders(n)
    )
}

/// The accounts in a range of the id index, by id (`plans.rs` checks that it seeks).
pub(super) static ACCOUNTS_BY_PREFIX: std::sync::LazyLock<String> =
    std::sync::LazyLock::new(|| {
        format!(
            "SELECT {} FROM users WHERE id >= ?1 AND id < ?2 ORDER BY id LIMIT ?3",
            *ACCOUNT_COLUMNS
        )
    });

fn account_from_row(row: &rusqlite::Row<'_>) -> rusqlite::Result<AccountView> {
    let newest = |idx: usize| -> rusqlite::Result<Option<PostId>> {
        match row.get_ref(idx)? {
            rusqlite::types::ValueRef::Null => Ok(None),
            _ => post_id_at(row, idx).map(Some),
        }
    };
    Ok(AccountView {
        user: user_from_row(row)?,
        last_status: newest(7)?.max(newest(8)?),
    })
}

fn get_user(conn: &Connection, id: &str) -> rusqlite::Result<Option<User>> {
    conn.prepare_cached(&format!("SELECT {USER_COLUMNS} FROM users WHERE id = ?1"))?
        .query_row([id], user_from_row)
        .optional()
}

#[async_trait]
impl UserStore for EmbeddedStore {
    async fn create_user(&self, user: &NewUser) -> StoreResult<User> {
        let user = user.clone();
        self.write(move |tx| {
            let inserted = tx
                .prepare_cached(
                    "INSERT INTO users (id, display_name, created_at) VALUES (?1, ?2, ?3)
                     ON CONFLICT (id) DO NOTHING",
                )?
                .execute(params![user.id, user.display_name, user.created_at_ms])?;
            if inserted == 0 {
                return Err(StoreError::Conflict(format!("user {}", user.id)));
            }
            let created = get_user(tx, &user.id)?
                .ok_or_else(|| StoreError::NotFound(format!("user {}", user.id)))?;
            name_words::write_words(tx, &created.id, &created.display_name)?;
            record_change(tx, "users", ChangeOp::Insert, &created.id, Some(&created))?;
            Ok(created)
        })
        .await
    }

    async fn user(&self, id: &str) -> StoreResult<Option<User>> {
        let id = id.to_owned();
        self.read_inline(move |conn| Ok(get_user(conn, &id)?)).await
    }

    async fn users(&self, ids: &[String]) -> StoreResult<Vec<User>> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let ids = ids.to_vec();
        self.read_inline(move |conn| {
            let sql = |n| {
                format!(
                    "SELECT {USER_COLUMNS} FROM users WHERE id IN ({})",
                    placeholders(n)
                )
            };
            Ok(rows_in(conn, &ids, sql, user_from_row)?)
        })
        .await
    }

    async fn accounts(&self, ids: &[String]) -> StoreResult<Vec<AccountView>> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let ids = ids.to_vec();
        self.read_inline(move |conn| Ok(rows_in(conn, &ids, accounts_sql, account_from_row)?))
            .await
    }

    async fn accounts_by_prefix(
        &self,
        prefix: &str,
        limit: usize,
    ) -> StoreResult<Vec<AccountView>> {
        let (from, to) = (prefix.to_owned(), prefix_end(prefix));
        self.read_inline(move |conn| {
            let mut stmt = conn.prepare_cached(&ACCOUNTS_BY_PREFIX)?;
            let rows = stmt.query_map(params![from, to, limit as i64], account_from_row)?;
            Ok(rows.collect::<rusqlite::Result<_>>()?)
        })
        .await
    }

    async fn name_word_entries(
        &self,
        prefix: &str,
        after: Option<&NameWord>,
        limit: usize,
    ) -> StoreResult<Vec<NameWord>> {
        self.read_inline(|conn| Ok(name_words::entries(conn, prefix, after, limit)?))
            .await
    }

    async fn name_words_of(&self, users: &[String]) -> StoreResult<Vec<NameWord>> {
        self.read_inline(|conn| Ok(name_words::of_users(conn, users)?))
            .await
    }

    /// Nothing to mend: every write of a name writes its words in its transaction; the
    /// sync checks anyway, in one transaction.
    async fn sync_name_words(&self, users: &[String]) -> StoreResult<u64> {
        let users = users.to_vec();
        self.write(move |tx| Ok(name_words::sync(tx, &users)?))
            .await
    }

    async fn rebuild_name_words(&self) -> StoreResult<u64> {
        self.write(|tx| Ok(name_words::rebuild(tx)?)).await
    }

    async fn rename_user(&self, id: &str, display_name: &str) -> StoreResult<Option<User>> {
        let (id, name) = (id.to_owned(), display_name.to_owned());
        self.write(move |tx| {
            let changed = tx
                .prepare_cached(
                    "UPDATE users SET display_name = ?1, version = version + 1 WHERE id = ?2",
                )?
                .execute(params![name, id])?;
            if changed == 0 {
                return Ok(None);
            }
            name_words::write_words(tx, &id, &name)?;
            names::record_rename(tx, &id)?;
            versions::bump_merge_version(tx, &id)?;
            versions::bump_below_clock(tx)?;
            let user = get_user(tx, &id)?;
            record_change(tx, "users", ChangeOp::Update, &id, user.as_ref())?;
            Ok(user)
        })
        .await
    }

    async fn authors(&self, reader: &str, authors: &[String]) -> StoreResult<Vec<AuthorView>> {
        let (reader, authors) = (reader.to_owned(), authors.to_vec());
        self.read_inline(move |conn| {
            let mut found = Vec::with_capacity(authors.len());
            for chunk in authors.chunks(IN_CHUNK) {
                let sql = format!(
                    "SELECT u.id, u.display_name, u.version,
                            EXISTS (SELECT 1 FROM follows f WHERE f.follower = ? AND f.followee = u.id)
                     FROM users u WHERE u.id IN ({})",
                    placeholders(chunk.len())
                );
                let mut stmt = conn.prepare_cached(&sql)?;
                let params = std::iter::once(&reader).chain(chunk);
                let rows = stmt.query_map(rusqlite::params_from_iter(params), |row| {
                    Ok(AuthorView {
                        id: row.get(0)?,
                        display_name: row.get(1)?,
                        version: row.get::<_, i64>(2)?.max(0) as u64,
                        followed: row.get(3)?,
                    })
                })?;
                for row in rows {
                    found.push(row?);
                }
            }
            Ok(found)
        })
        .await
    }

    /// One read transaction, one statement per user.
    async fn count_sources(&self, users: &[Recount]) -> StoreResult<Vec<Counted>> {
        let users = users.to_vec();
        self.read(move |conn| {
            let mut stmt = conn.prepare_cached(COUNT_SOURCES)?;
            let mut counted = Vec::with_capacity(users.len());
            for recount in users {
                let params = params![recount.user, recount.seq as i64, recount.always];
                let row = stmt
                    .query_row(params, |row| {
                        Ok([row.get::<_, i64>(0)?, row.get(1)?, row.get(2)?, row.get(3)?])
                    })
                    .optional()?;
                if let Some([version, posts, following, followers]) = row {
                    counted.push(Counted {
                        user: recount.user,
                        seq: recount.seq,
                        posts: posts as u64,
                        following: following as u64,
                        followers: followers as u64,
                        version: version as u64,
                    });
                }
            }
            Ok(counted)
        })
        .await
    }

    /// One transaction, one conditional `UPDATE` per user.
    async fn write_counts(&self, counted: &[Counted]) -> StoreResult<Vec<String>> {
        let counted = counted.to_vec();
        self.write(move |tx| {
            let mut stmt = tx.prepare_cached(WRITE_COUNTS)?;
            let mut refused = Vec::new();
            for c in counted {
                let written = stmt.execute(params![
                    c.user,
                    c.version as i64,
                    c.posts as i64,
                    c.following as i64,
                    c.followers as i64,
                    c.seq as i64,
                ])?;
                if written == 0 {
                    refused.push(c.user);
                }
            }
            Ok(refused)
        })
        .await
    }

    /// One transaction over every user, fenced by the lease; `counted_seq` becomes the
    /// newest change the transaction sees, since every change up to it is counted, and
    /// every version moves, so an incremental recount read before it is refused.
    async fn recount_all(&self, fence: &Fence) -> StoreResult<u64> {
        let fence = fence.clone();
        self.write(move |tx| {
            check_fence(tx, &fence.lease, &fence.holder, fence.version)?;
            let newest: Option<i64> =
                tx.query_row("SELECT max(pos) FROM changes", [], |row| row.get(0))?;
            let users = recount_every_user(tx, newest.unwrap_or(-1))?;
            // Every post's `replies_count` and `reposts_count` too, in the same
            // transaction.
            let replies = super::threads::recount_every_reply(tx)?;
            let reposts = super::reposts::recount_every_repost(tx)?;
            Ok((users + replies + reposts) as u64)
        })
        .await
    }
}
