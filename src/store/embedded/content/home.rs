//! Reads of a home timeline's posts across authors by merging each author's newest ids
//! from the `(author, id)` index: the read below a cache (`shown_home_posts`) and
//! `hybrid`'s merged half (`merged_posts`, and `merged_reposts` over the reposts'
//! `(user, id)` index) share the walk ([`merge_newest`], [`merge_newest_of`]).
//!
//! One `IN (...) ORDER BY id DESC` over the authors instead reads every post of every
//! author below the cursor and sorts them in a temporary B-tree: for a reader who hides
//! most of whom they follow, 416 us per read below the cache on `read_cost.sh`'s data
//! set (2026-11-27, see docs/performance-reads.md). The walk reads at most a page of ids per
//! author, newest author first, and stops at the first author whose newest post would
//! not make the page; only the page's rows are read.

use rusqlite::{Connection, params};

use super::super::{post_before, post_from_row, post_id_at};
use super::POST_IDS_BY_AUTHOR;
use crate::domain::{NameStamp, Post, PostId};
use crate::store::StoreResult;

/// `ContentStore::shown_home_posts`, in the caller's read transaction.
pub(in crate::store::embedded) fn shown_home_posts(
    conn: &Connection,
    user: &str,
    before: Option<PostId>,
    limit: usize,
    now_ms: i64,
) -> StoreResult<Vec<(Post, NameStamp)>> {
    if limit == 0 {
        return Ok(Vec::new());
    }
    let before = post_before(before);
    let mut authors: Vec<(PostId, String)> = Vec::new();
    let mut shown = conn.prepare_cached(SHOWN_AUTHORS)?;
    let mut rows = shown.query(params![user, &before, now_ms])?;
    while let Some(row) = rows.next()? {
        if row.get_ref(1)? == rusqlite::types::ValueRef::Null {
            continue;
        }
        authors.push((post_id_at(row, 1)?, row.get(0)?));
    }
    drop(rows);
    // The user is read beside their followees; an edge to themself (none is ever
    // stored) would read them twice.
    authors.sort_unstable_by(|a, b| a.1.cmp(&b.1));
    authors.dedup_by(|a, b| a.1 == b.1);
    let keys = merge_newest(conn, &mut authors, String::as_str, &before, &[], limit)?;
    let mut by_id = conn.prepare_cached(POST_WITH_NAME)?;
    let mut posts = Vec::with_capacity(keys.len());
    for (id, _) in keys {
        posts.push(by_id.query_row([id.bytes()], |row| {
            let version: i64 = row.get(8)?;
            let name = NameStamp {
                display_name: row.get(7)?,
                version: version.max(0) as u64,
            };
            Ok((post_from_row(row)?, name))
        })?);
    }
    Ok(posts)
}

/// The newest `limit` post ids below `before` and above `above` (keys; an empty blob is
/// below every id) across `authors` (`author_of` names each), each given with their
/// newest id below `before`,
/// newest first, with the index in `authors` of each id's author. Sorts `authors` newest
/// first, then reads their ids from the `(author, id)` index alone, at most `limit`
/// each, and stops at the first author whose newest id would not make the page.
pub(in crate::store::embedded) fn merge_newest<T>(
    conn: &Connection,
    authors: &mut [(PostId, T)],
    author_of: impl Fn(&T) -> &str,
    before: &[u8],
    above: &[u8],
    limit: usize,
) -> StoreResult<Vec<(PostId, usize)>> {
    merge_newest_of(
        conn,
        POST_IDS_BY_AUTHOR,
        authors,
        author_of,
        before,
        above,
        limit,
    )
}

/// [`merge_newest`] over the ids `ids_by_author` reads: a statement of one author's ids
/// (`?1`) below `?2` and above `?3`, newest first, at most `?4`, from an index alone
/// (`POST_IDS_BY_AUTHOR`, or `reposts::merged::REPOST_IDS_BY_USER` for `hybrid`'s reposts).
pub(in crate::store::embedded) fn merge_newest_of<T>(
    conn: &Connection,
    ids_by_author: &str,
    authors: &mut [(PostId, T)],
    author_of: impl Fn(&T) -> &str,
    before: &[u8],
    above: &[u8],
    limit: usize,
) -> StoreResult<Vec<(PostId, usize)>> {
    if limit == 0 {
        return Ok(Vec::new());
    }
    authors.sort_unstable_by_key(|a| std::cmp::Reverse(a.0));
    let mut ids_by_author = conn.prepare_cached(ids_by_author)?;
    let mut keys: Vec<(PostId, usize)> = Vec::new();
    for (index, (newest, author)) in authors.iter().enumerate() {
        if keys.len() >= limit {
            keys.sort_unstable_by_key(|key| std::cmp::Reverse(key.0));
            keys.truncate(limit);
            if *newest <= keys[limit - 1].0 {
                break;
            }
        }
        let rows = ids_by_author.query_map(
            params![author_of(author), before, above, limit as i64],
            |row| Ok((post_id_at(row, 0)?, index)),
        )?;
        for key in rows {
            keys.push(key?);
        }
    }
    keys.sort_unstable_by_key(|key| std::cmp::Reverse(key.0));
    keys.dedup_by_key(|key| key.0);
    keys.truncate(limit);
    Ok(keys)
}

/// The user and each followee not hidden from them at `?3`, with their newest post id
/// below `?2` (one seek of the `(author, id)` index each): each followee is looked up
/// once in the user's mutes and in the blocks both ways (primary keys and
/// `blocks_by_other`). The user is never hidden from themself.
pub(in crate::store::embedded) const SHOWN_AUTHORS: &str = "SELECT f.followee,
        (SELECT id FROM posts WHERE author = f.followee AND id < ?2 ORDER BY id DESC LIMIT 1)
     FROM follows AS f
     WHERE f.follower = ?1
       AND NOT EXISTS (SELECT 1 FROM mutes AS m WHERE m.user = ?1 AND m.other = f.followee
                        AND (m.until_ms IS NULL OR m.until_ms > ?3))
       AND NOT EXISTS (SELECT 1 FROM blocks AS b WHERE b.user = ?1 AND b.other = f.followee)
       AND NOT EXISTS (SELECT 1 FROM blocks AS b WHERE b.user = f.followee AND b.other = ?1)
     UNION ALL
     SELECT ?1, (SELECT id FROM posts WHERE author = ?1 AND id < ?2 ORDER BY id DESC LIMIT 1)";

/// One post by its id, with its author's name as this read finds it (their id when
/// they have no profile, as a page names them).
pub(in crate::store::embedded) const POST_WITH_NAME: &str =
    "SELECT p.id, p.author, p.text, p.reply_to, p.reply_to_author, p.replies_count,
            p.reposts_count, IFNULL(u.display_name, p.author), IFNULL(u.version, 0)
     FROM posts AS p LEFT JOIN users AS u ON u.id = p.author WHERE p.id = ?1";
