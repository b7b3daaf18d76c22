//! Listings of posts across authors: the public timeline, by the posts' primary key.

use rusqlite::params;

use super::super::{POST_COLUMNS, post_after, post_before, post_from_row};
use crate::domain::Post;
use crate::store::{PostRange, StoreResult};

/// The posts in `range`, at most `limit`, in its order (a seek of the primary key).
pub(in crate::store::embedded) fn public_posts(
    conn: &rusqlite::Connection,
    range: PostRange,
    limit: usize,
) -> StoreResult<Vec<Post>> {
    let (query, bound) = match range {
        PostRange::Older(before) => (
            format!("SELECT {POST_COLUMNS} FROM posts WHERE id < ?1 ORDER BY id DESC LIMIT ?2"),
            post_before(before),
        ),
        PostRange::Newer(after) => (
            format!("SELECT {POST_COLUMNS} FROM posts WHERE id > ?1 ORDER BY id ASC LIMIT ?2"),
            post_after(Some(after)),
        ),
    };
    let mut stmt = conn.prepare_cached(&query)?;
    let rows = stmt.query_map(params![bound, limit as i64], post_from_row)?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}
