//! What a load's sources imply of each other, made true before anything is derived from
//! them: blocks and mutes written, the follows beside a block removed (no follow stands
//! beside a block, as the API's block removes them both ways), and replies completed
//! (each reply's parent author, every post's `replies_count`), and every post's
//! `reposts_count` counted from the reposts.

use rusqlite::{Connection, params};

use crate::store::StoreResult;
use crate::store::bulk::{RelationRow, RepostRow, Rows};

/// One batch of blocks and mutes; rows whose key is stored are skipped.
pub(super) fn insert_relations(tx: &Connection, rows: &Rows<RelationRow>) -> StoreResult<u64> {
    let mut block = tx.prepare_cached(
        "INSERT INTO blocks (user, other, created_ms) VALUES (?1, ?2, ?3)
         ON CONFLICT DO NOTHING",
    )?;
    let mut mute = tx.prepare_cached(
        "INSERT INTO mutes (user, other, created_ms, notifications, until_ms)
         VALUES (?1, ?2, ?3, ?4, ?5) ON CONFLICT DO NOTHING",
    )?;
    let mut added = 0;
    for row in rows.rows() {
        let (user, other) = (rows.str(row.user), rows.str(row.other));
        added += match row.mute {
            None => block.execute(params![user, other, row.created_at_ms])?,
            Some(m) => mute.execute(params![
                user,
                other,
                row.created_at_ms,
                m.notifications,
                m.until_ms
            ])?,
        };
    }
    Ok(added as u64)
}

/// Removes every follow, either way, between two users one of whom blocks the other.
pub(super) fn remove_blocked_follows(tx: &Connection) -> StoreResult<u64> {
    let removed = tx.execute(
        "DELETE FROM follows WHERE (follower, followee) IN
            (SELECT user, other FROM blocks UNION ALL SELECT other, user FROM blocks)",
        [],
    )?;
    Ok(removed as u64)
}

/// Fills in the parent author of every loaded reply and recounts every post's replies.
pub(super) fn complete_replies(tx: &Connection) -> StoreResult<()> {
    tx.execute_batch(
        "UPDATE posts SET reply_to_author =
                (SELECT parent.author FROM posts AS parent WHERE parent.id = posts.reply_to)
          WHERE reply_to IS NOT NULL AND reply_to_author IS NULL;
         UPDATE posts SET replies_count = 0 WHERE replies_count <> 0;
         UPDATE posts SET replies_count = counted.n
           FROM (SELECT reply_to AS parent, count(*) AS n FROM posts
                  WHERE reply_to IS NOT NULL GROUP BY reply_to) AS counted
          WHERE posts.id = counted.parent;",
    )?;
    Ok(())
}

/// One batch of reposts, each with its original's author from the stored post; rows
/// whose id or (user, post) is stored, or whose post is not, are skipped.
pub(super) fn insert_reposts(tx: &Connection, rows: &Rows<RepostRow>) -> StoreResult<u64> {
    let mut insert = tx.prepare_cached(
        "INSERT INTO reposts (id, user, post, post_author)
         SELECT ?1, ?2, id, author FROM posts WHERE id = ?3
         ON CONFLICT DO NOTHING",
    )?;
    let mut added = 0;
    for row in rows.rows() {
        added += insert.execute(params![
            &row.id.bytes()[..],
            rows.str(row.user),
            &row.post.bytes()[..]
        ])?;
    }
    Ok(added as u64)
}

/// Recounts every post's reposts.
pub(super) fn count_reposts(tx: &Connection) -> StoreResult<()> {
    tx.execute_batch(
        "UPDATE posts SET reposts_count = 0 WHERE reposts_count <> 0;
         UPDATE posts SET reposts_count = counted.n
           FROM (SELECT post, count(*) AS n FROM reposts GROUP BY post) AS counted
          WHERE posts.id = counted.post;",
    )?;
    Ok(())
}
