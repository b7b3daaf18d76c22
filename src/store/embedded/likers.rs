//! The likers of a post on SQLite (`ActivityStore::likers` and `likers_newer`): one
//! range of the index `likes_by_post (post, created_at, user)` from a cursor, read
//! newest first below it or oldest first above it.

use rusqlite::params;

use super::EmbeddedStore;
use crate::domain::PostId;
use crate::store::{Liker, StoreResult};

impl EmbeddedStore {
    /// One page of likers by `sql` (one of the three below): a seek in the index from
    /// the cursor, then its order.
    pub(super) async fn likers_page(
        &self,
        sql: &'static str,
        post: PostId,
        cursor: Option<&Liker>,
        limit: usize,
    ) -> StoreResult<Vec<Liker>> {
        let cursor = cursor.map(|c| (c.at_ms, c.user.clone()));
        self.read_inline(move |conn| {
            let liker = |row: &rusqlite::Row<'_>| {
                Ok(Liker {
                    user: row.get(0)?,
                    at_ms: row.get(1)?,
                })
            };
            let (post, limit) = (&post.bytes()[..], limit as i64);
            let mut stmt = conn.prepare_cached(sql)?;
            let rows = match cursor {
                Some((at, user)) => stmt.query_map(params![post, limit, at, user], liker)?,
                None => stmt.query_map(params![post, limit], liker)?,
            };
            Ok(rows.collect::<rusqlite::Result<_>>()?)
        })
        .await
    }
}

pub(super) const LIKERS: &str = "SELECT user, created_at FROM likes INDEXED BY likes_by_post
     WHERE post = ?1 ORDER BY created_at DESC, user DESC LIMIT ?2";
pub(super) const LIKERS_BEFORE: &str = "SELECT user, created_at FROM likes INDEXED BY likes_by_post
     WHERE post = ?1 AND (created_at, user) < (?3, ?4)
     ORDER BY created_at DESC, user DESC LIMIT ?2";
/// The likes just newer than `(?3, ?4)`, the nearest first: the same range the other way.
pub(super) const LIKERS_AFTER: &str = "SELECT user, created_at FROM likes INDEXED BY likes_by_post
     WHERE post = ?1 AND (created_at, user) > (?3, ?4)
     ORDER BY created_at, user LIMIT ?2";
