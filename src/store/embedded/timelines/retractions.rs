//! Pending retractions: which cache entries a read may have to hide, so that the common
//! read hides nothing and checks nothing.
//!
//! A cache entry must not be served once its post is deleted or its author unfollowed,
//! from the 2xx on, although the timelines worker removes it only later. Checking every
//! entry against the follow graph and the posts costs two index seeks per entry, about
//! 40 per page. Instead the store keeps this invariant, in every write transaction:
//!
//! > every cache entry's post exists or is in `pending_deletes`, and its author is the
//! > owner, is followed by the owner, or is in `pending_unfollows` with the owner.
//!
//! A repost's entry stands for the repost (its id), which "exists" while the repost
//! does: an unrepost, and a delete of the original (which removes its reposts in its
//! transaction), mark the repost's id like a delete marks a post's.
//!
//! - A delete or an unfollow records its mark in its own transaction, when a cache holds
//!   an entry it hides (so with no caches, nothing is ever marked).
//! - An entry inserted whose post is already gone, or whose author the owner no longer
//!   follows (a push that raced with a delete or an unfollow), records the mark too.
//! - The removal that takes a post's, or an author's, entries out of the caches takes
//!   the mark away in the same transaction; a follow takes away its edge's mark, since
//!   the edge makes the author's entries servable again.
//!
//! So a read with no mark that concerns its owner serves the cache's entries as they are,
//! and a read with one checks every entry as before. A mark outlives its removal in two
//! cases, and costs only speed: the removal never runs (its change was lost to the
//! feed's trim; the timelines worker's rebuild then settles every mark), or a push
//! landed after the unfollow's removal (the owner's reads stay checked until the owner
//! follows the author again or a rebuild settles it; a late push of a deleted post is
//! retracted again by the pusher's own re-check, which takes its mark).

use rusqlite::{Transaction, params};

use crate::domain::PostId;
use crate::store::StoreResult;

pub(in crate::store::embedded) const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS pending_deletes (
    post BLOB PRIMARY KEY
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS pending_unfollows (
    user   TEXT NOT NULL,
    author TEXT NOT NULL,
    PRIMARY KEY (user, author)
) WITHOUT ROWID;
";

/// Deletes the cache entries of databases written before the marks existed that the
/// invariant does not cover (until then reads hid them by checking every entry): a
/// migration step to run once.
pub(in crate::store::embedded) const MIGRATE: &str = "
UPDATE caches SET version = random();
DELETE FROM cache_entries
 WHERE NOT EXISTS (SELECT 1 FROM posts WHERE id = cache_entries.post_id)
    OR (author != user AND NOT EXISTS (
        SELECT 1 FROM follows
         WHERE follower = cache_entries.user AND followee = cache_entries.author));";

/// Marks `post`, just deleted, if a cache holds it.
pub(in crate::store::embedded) fn mark_delete(
    tx: &Transaction<'_>,
    post: PostId,
) -> StoreResult<()> {
    tx.prepare_cached(
        "INSERT OR IGNORE INTO pending_deletes (post)
         SELECT ?1 WHERE EXISTS (SELECT 1 FROM cache_entries WHERE post_id = ?1)",
    )?
    .execute([&post.bytes()[..]])?;
    Ok(())
}

/// Marks `follower` unfollowing `followee`, just done, if `follower`'s cache holds an
/// entry of `followee` (one user's cache, at most `feed.cache_size` rows, is scanned).
pub(in crate::store::embedded) fn mark_unfollow(
    tx: &Transaction<'_>,
    follower: &str,
    followee: &str,
) -> StoreResult<()> {
    tx.prepare_cached(
        "INSERT OR IGNORE INTO pending_unfollows (user, author)
         SELECT ?1, ?2 WHERE EXISTS (
             SELECT 1 FROM cache_entries WHERE user = ?1 AND author = ?2)",
    )?
    .execute(params![follower, followee])?;
    Ok(())
}

/// A follow makes the followee's entries in the follower's cache servable again.
pub(in crate::store::embedded) fn clear_unfollow(
    tx: &Transaction<'_>,
    follower: &str,
    followee: &str,
) -> StoreResult<()> {
    tx.prepare_cached("DELETE FROM pending_unfollows WHERE user = ?1 AND author = ?2")?
        .execute(params![follower, followee])?;
    Ok(())
}

/// Marks what an entry just inserted into `user`'s cache needs: its post if that is
/// gone, its author if `user` does not follow them.
pub(super) fn mark_inserted(
    tx: &Transaction<'_>,
    user: &str,
    post: &[u8],
    author: &str,
) -> StoreResult<()> {
    tx.prepare_cached(
        "INSERT OR IGNORE INTO pending_deletes (post)
         SELECT ?1 WHERE NOT EXISTS (SELECT 1 FROM posts WHERE id = ?1)
                     AND NOT EXISTS (SELECT 1 FROM reposts WHERE id = ?1)",
    )?
    .execute([post])?;
    tx.prepare_cached(
        "INSERT OR IGNORE INTO pending_unfollows (user, author)
         SELECT ?1, ?2 WHERE ?1 != ?2 AND NOT EXISTS (
             SELECT 1 FROM follows WHERE follower = ?1 AND followee = ?2)",
    )?
    .execute(params![user, author])?;
    Ok(())
}

/// After every cache entry of `post` was removed.
pub(super) fn clear_delete(tx: &Transaction<'_>, post: &[u8]) -> StoreResult<()> {
    tx.prepare_cached("DELETE FROM pending_deletes WHERE post = ?1")?
        .execute([post])?;
    Ok(())
}

/// Removes the entries every mark hides, then every mark: what the lost removals would
/// have done. Entries a mark no longer hides (the post exists, the edge is back) stay.
/// Returns how many entries were removed.
pub(super) fn settle(tx: &Transaction<'_>) -> StoreResult<usize> {
    super::versions::bump_versions_of(
        tx,
        "SELECT user FROM cache_entries WHERE post_id IN (
             SELECT post FROM pending_deletes d
              WHERE NOT EXISTS (SELECT 1 FROM posts WHERE id = d.post)
                AND NOT EXISTS (SELECT 1 FROM reposts WHERE id = d.post))",
        [],
    )?;
    super::versions::bump_versions_of(
        tx,
        "SELECT user FROM pending_unfollows u
          WHERE NOT EXISTS (
              SELECT 1 FROM follows WHERE follower = u.user AND followee = u.author)",
        [],
    )?;
    let posts = tx.execute(
        "DELETE FROM cache_entries WHERE post_id IN (
             SELECT post FROM pending_deletes d
              WHERE NOT EXISTS (SELECT 1 FROM posts WHERE id = d.post)
                AND NOT EXISTS (SELECT 1 FROM reposts WHERE id = d.post))",
        [],
    )?;
    let authors = tx.execute(
        "DELETE FROM cache_entries WHERE (user, author) IN (
             SELECT user, author FROM pending_unfollows u
              WHERE NOT EXISTS (
                  SELECT 1 FROM follows WHERE follower = u.user AND followee = u.author))",
        [],
    )?;
    tx.execute_batch("DELETE FROM pending_deletes; DELETE FROM pending_unfollows;")?;
    Ok(posts + authors)
}
