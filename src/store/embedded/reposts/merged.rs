//! `hybrid`'s reposts on SQLite: the merged (celebrity) followees' reposts, found at
//! read time from the flagged follow edges and each reposter's `(user, id)` index.

use rusqlite::params;

use super::super::post_id_at;
use crate::domain::PostId;
use crate::store::StoreResult;

/// `hybrid`: the followees whose edge is flagged merged, each with their newest repost
/// id below `?2` (one seek of `reposts_by_user_id` each, inside this statement), the
/// edges from the covering `follows_flagged` index alone, as `content::MERGED_FOLLOWEES`
/// reads them for posts.
pub(in crate::store::embedded) const MERGED_REPOSTERS: &str = "SELECT f.followee,
        (SELECT id FROM reposts INDEXED BY reposts_by_user_id
          WHERE user = f.followee AND id < ?2 ORDER BY id DESC LIMIT 1)
     FROM follows AS f INDEXED BY follows_flagged
     WHERE f.follower = ?1 AND f.merged";

/// One reposter's repost ids below `?2` and above `?3`, newest first, at most `?4`,
/// from the `(user, id)` index alone: the walk of `content::home::merge_newest_of`.
pub(in crate::store::embedded) const REPOST_IDS_BY_USER: &str = "SELECT id FROM reposts
     INDEXED BY reposts_by_user_id
     WHERE user = ?1 AND id < ?2 AND id > ?3 ORDER BY id DESC LIMIT ?4";

/// `hybrid`'s merged reposters with a repost between the page's bounds (`before` as a
/// key; `above` exclusive), each with their newest repost id below `before`.
pub(super) fn merged_reposters(
    conn: &rusqlite::Connection,
    user: &str,
    before: &[u8],
    above: Option<PostId>,
) -> StoreResult<Vec<(PostId, String)>> {
    let mut reposters = Vec::new();
    let mut stmt = conn.prepare_cached(MERGED_REPOSTERS)?;
    let mut rows = stmt.query(params![user, before])?;
    while let Some(row) = rows.next()? {
        if row.get_ref(1)? == rusqlite::types::ValueRef::Null {
            continue;
        }
        let newest = post_id_at(row, 1)?;
        if above.is_none_or(|above| newest > above) {
            reposters.push((newest, row.get(0)?));
        }
    }
    Ok(reposters)
}
