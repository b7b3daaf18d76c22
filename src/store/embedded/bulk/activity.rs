//! Activity logs built from the sources, set-based: for a range of users, one ordered
//! read each of their posts (the `(author, id)` index), follows (the primary key) and
//! likes (the primary key), one stable sort by (user, time), and one insert per entry
//! through one prepared statement, in primary-key order. The entries, their order and
//! layout are those of appending every event oldest first: within a millisecond posts
//! come before follows before likes, each in key order, as the MongoDB rebuild orders
//! them too. The activity worker's rebuild and the bulk loader both build logs here.

use rusqlite::{Connection, params};

use super::{ChunkRead, chunk_users};
use crate::domain::{ActivityLimits, ActivityType, PostId, Slot};
use crate::store::StoreResult;
use crate::store::embedded::{post_id_at, text_at};

/// A chunk's posts, follows and likes, each in its user's key order.
pub(in crate::store::embedded) const LOG_POSTS: ChunkRead = ChunkRead {
    column: "author",
    sql: "SELECT author, id FROM posts WHERE {chunk} ORDER BY author, id",
};
pub(in crate::store::embedded) const LOG_FOLLOWS: ChunkRead = ChunkRead {
    column: "follower",
    sql: "SELECT follower, followee, created_at FROM follows WHERE {chunk}
          ORDER BY follower, followee",
};
pub(in crate::store::embedded) const LOG_LIKES: ChunkRead = ChunkRead {
    column: "user",
    sql: "SELECT user, post, created_at FROM likes WHERE {chunk} ORDER BY user, post",
};

/// One entry before it is numbered. A follow's followee is a range of the chunk's
/// `followees` buffer, so reading entries allocates nothing per row.
struct Item {
    user: u32,
    ts: i64,
    kind: ActivityType,
    post: PostId,
    followee: (u32, u32),
}

/// 24 lowercase hex digits of `id`, as its `Display` writes them, without allocating.
pub(super) fn hex(id: PostId, out: &mut [u8; 24]) -> &str {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    for (pair, byte) in out.chunks_exact_mut(2).zip(id.bytes()) {
        pair[0] = DIGITS[usize::from(byte >> 4)];
        pair[1] = DIGITS[usize::from(byte & 0xf)];
    }
    std::str::from_utf8(out).unwrap_or_default()
}

/// The index of `user` in the sorted `users`, moving `cursor` forward (rows arrive in
/// user order); `None` for a row of a user that does not exist.
fn locate(users: &[String], cursor: &mut usize, user: &str) -> Option<u32> {
    while *cursor < users.len() && users[*cursor].as_str() < user {
        *cursor += 1;
    }
    (users.get(*cursor).map(String::as_str) == Some(user)).then_some(*cursor as u32)
}

/// Writes the logs of the users with ids in `(after, through]` (`None`: no upper bound)
/// from the sources, with `applied` as their workers' watermark. The caller has removed
/// their old logs. Returns the entries written.
pub(in crate::store::embedded) fn build_logs(
    tx: &Connection,
    after: &str,
    through: Option<&str>,
    limits: ActivityLimits,
    applied: i64,
) -> StoreResult<u64> {
    let users = chunk_users(tx, after, through)?;
    let mut items: Vec<Item> = Vec::new();
    let mut followees = String::new();
    let range = params![after, through];
    let mut cursor = 0;
    let mut posts = tx.prepare_cached(&LOG_POSTS.sql(through))?;
    let mut rows = posts.query(range)?;
    while let Some(row) = rows.next()? {
        let Some(user) = locate(&users, &mut cursor, text_at(row, 0)?) else {
            continue;
        };
        let post = post_id_at(row, 1)?;
        let (ts, kind) = (post.timestamp_ms(), ActivityType::Post);
        items.push(Item {
            user,
            ts,
            kind,
            post,
            followee: (0, 0),
        });
    }
    cursor = 0;
    let mut follows = tx.prepare_cached(&LOG_FOLLOWS.sql(through))?;
    let mut rows = follows.query(range)?;
    while let Some(row) = rows.next()? {
        let Some(user) = locate(&users, &mut cursor, text_at(row, 0)?) else {
            continue;
        };
        let start = followees.len() as u32;
        followees.push_str(text_at(row, 1)?);
        let followee = (start, followees.len() as u32);
        let (ts, kind, post) = (row.get(2)?, ActivityType::Follow, PostId::MIN);
        items.push(Item {
            user,
            ts,
            kind,
            post,
            followee,
        });
    }
    cursor = 0;
    let mut likes = tx.prepare_cached(&LOG_LIKES.sql(through))?;
    let mut rows = likes.query(range)?;
    while let Some(row) = rows.next()? {
        let Some(user) = locate(&users, &mut cursor, text_at(row, 0)?) else {
            continue;
        };
        let (post, ts, kind) = (post_id_at(row, 1)?, row.get(2)?, ActivityType::Like);
        items.push(Item {
            user,
            ts,
            kind,
            post,
            followee: (0, 0),
        });
    }
    // Stable: within a user and a millisecond, posts, then follows, then likes.
    items.sort_by_key(|item| (item.user, item.ts));
    let mut entry = tx.prepare_cached(
        "INSERT INTO activity_entries (user, seq, page, type, ts, ref)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
    )?;
    let mut log = tx.prepare_cached(
        "INSERT INTO activity_logs (user, primary_limit, page_size, primary_count,
                                    overflow_count, overflow_pages, applied, last_ts)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
    )?;
    let mut hex_buf = [0u8; 24];
    for one_user in items.chunk_by(|a, b| a.user == b.user) {
        let user = users[one_user[0].user as usize].as_str();
        let mut pages = 0;
        for (seq, item) in one_user.iter().enumerate() {
            let page = match limits.slot(seq as u64) {
                Slot::Primary => -1,
                Slot::Page(page) => {
                    pages = page as i64 + 1;
                    page as i64
                }
            };
            let reference = match item.kind {
                ActivityType::Follow => {
                    &followees[item.followee.0 as usize..item.followee.1 as usize]
                }
                _ => hex(item.post, &mut hex_buf),
            };
            let kind = item.kind.as_str();
            entry.execute(params![user, seq as i64, page, kind, item.ts, reference])?;
        }
        let total = one_user.len() as u64;
        let primary = total.min(u64::from(limits.primary_limit));
        let last_ts = one_user.last().map_or(0, |item| item.ts);
        log.execute(params![
            user,
            limits.primary_limit,
            limits.page_size,
            primary as i64,
            (total - primary) as i64,
            pages,
            applied,
            last_ts
        ])?;
    }
    Ok(items.len() as u64)
}
