//! Timelines of a bulk load. Caches are dropped: each is built from the sources on its
//! owner's first read, as it is for every new user. Buckets are materialised user by
//! user: every post and repost by the user or an account the user follows (a repost
//! under its own id, carrying its original), oldest first, laid out
//! as pushing them one by one in id order would lay them out (sized buckets of
//! `bucket_size`; timed periods split into parts of `timed_bucket_max_entries`), each
//! entry stamped with its author's current name when content is embedded.

use rusqlite::{Connection, params};

use crate::domain::{BucketKind, PostId};
use crate::store::StoreResult;
use crate::store::bulk::TimelineLayout;
use crate::store::embedded::timelines::PART_BITS;
use crate::store::embedded::{post_id_at, text_at};

/// The `kind` column's code (as `timelines/buckets.rs` stores it).
fn kind_code(kind: BucketKind) -> i64 {
    match kind {
        BucketKind::Timed => 0,
        BucketKind::Sized => 1,
    }
}

/// Every cache and what only caches need (the pending retraction marks concern cache
/// entries only).
pub(super) fn drop_caches(tx: &Connection) -> rusqlite::Result<()> {
    tx.execute_batch(
        "DELETE FROM cache_entries; DELETE FROM caches;
         UPDATE meta SET value = 0 WHERE key = 'cache_count';
         DELETE FROM pending_deletes; DELETE FROM pending_unfollows;",
    )
}

/// The index by post of every bucket entry (as `schema.rs` declares it), which the
/// materialisation drops and builds again at its end: one sort of millions of entries
/// instead of as many random inserts. Should a load stop in between, opening the store
/// creates it again.
pub(super) const CREATE_POST_INDEX: &str =
    "CREATE INDEX IF NOT EXISTS bucket_entries_by_post ON bucket_entries (post_id);";

pub(super) fn drop_buckets(tx: &Connection, kind: BucketKind) -> rusqlite::Result<()> {
    tx.execute_batch("DROP INDEX IF EXISTS bucket_entries_by_post;")?;
    let kind = kind_code(kind);
    tx.prepare_cached("DELETE FROM bucket_entries WHERE kind = ?1")?
        .execute([kind])?;
    tx.prepare_cached("DELETE FROM buckets WHERE kind = ?1")?
        .execute([kind])?;
    Ok(())
}

/// A bucket being filled.
struct Open {
    key: i64,
    n: i64,
    mn: PostId,
    mx: PostId,
}

/// Materialises the buckets of the users with ids in `(after, through]`; returns the
/// entries written.
pub(super) fn build_buckets(
    tx: &Connection,
    kind: BucketKind,
    after: &str,
    through: Option<&str>,
    feed: &TimelineLayout,
) -> StoreResult<u64> {
    let code = kind_code(kind);
    let users = super::chunk_users(tx, after, through)?;
    // Posts and reposts (by the reposter, carrying their original's text) alike.
    let mut home = tx.prepare_cached(
        "SELECT id, author, text, name, version, reply_to_author, repost_post, repost_author
           FROM (
             SELECT p.id, p.author, p.text, u.display_name AS name, u.version,
                    p.reply_to_author, NULL AS repost_post, NULL AS repost_author
               FROM posts AS p JOIN users AS u ON u.id = p.author
              WHERE p.author IN (
                  SELECT followee FROM follows WHERE follower = ?1 UNION SELECT ?1)
             UNION ALL
             SELECT r.id, r.user, o.text, u.display_name, u.version, NULL, r.post,
                    r.post_author
               FROM reposts AS r JOIN posts AS o ON o.id = r.post
                    JOIN users AS u ON u.id = r.user
              WHERE r.user IN (
                  SELECT followee FROM follows WHERE follower = ?1 UNION SELECT ?1))
          ORDER BY id",
    )?;
    let mut entry = tx.prepare_cached(
        "INSERT INTO bucket_entries
             (kind, user, key, post_id, author, text, name, name_v, reply_to_author,
              repost_post, repost_author)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
    )?;
    let mut bucket = tx.prepare_cached(
        "INSERT INTO buckets (kind, user, key, n, mn, mx) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
    )?;
    let mut close = |user: &str, open: &Open| -> rusqlite::Result<usize> {
        let (mn, mx) = (open.mn.bytes(), open.mx.bytes());
        bucket.execute(params![code, user, open.key, open.n, &mn[..], &mx[..]])
    };
    let size = i64::from(feed.bucket_size.max(1));
    let part_max = i64::from(feed.timed_bucket_max_entries.max(1));
    let mut written = 0;
    for user in &users {
        let mut rows = home.query([user])?;
        let (mut open, mut index, mut period_start): (Option<Open>, i64, i64) = (None, 0, 0);
        let mut period = i64::MIN;
        while let Some(row) = rows.next()? {
            let id = post_id_at(row, 0)?;
            let key = match kind {
                BucketKind::Sized => index / size,
                BucketKind::Timed => {
                    let this = id.timestamp_ms().div_euclid(feed.bucket_span_ms);
                    if this != period {
                        (period, period_start) = (this, index);
                    }
                    (period << PART_BITS) | ((index - period_start) / part_max)
                }
            };
            index += 1;
            match &mut open {
                Some(bucket) if bucket.key == key => {
                    bucket.n += 1;
                    bucket.mx = id;
                }
                _ => {
                    if let Some(done) = open.take() {
                        close(user, &done)?;
                    }
                    open = Some(Open {
                        key,
                        n: 1,
                        mn: id,
                        mx: id,
                    });
                }
            }
            let (text, name, version) = if feed.embed_content {
                let version: i64 = row.get(4)?;
                (
                    Some(text_at(row, 2)?),
                    Some(text_at(row, 3)?),
                    Some(version),
                )
            } else {
                (None, None, None)
            };
            let author = text_at(row, 1)?;
            entry.execute(params![
                code,
                user,
                key,
                &id.bytes()[..],
                author,
                text,
                name,
                version,
                row.get::<_, Option<String>>(5)?,
                row.get::<_, Option<Vec<u8>>>(6)?,
                row.get::<_, Option<String>>(7)?
            ])?;
            written += 1;
        }
        if let Some(done) = open {
            close(user, &done)?;
        }
    }
    Ok(written)
}
