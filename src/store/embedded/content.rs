//! Posts on SQLite. Ids come from the last one handed out, kept in `meta`.

pub(super) mod home;
mod listings;
pub(super) mod tags;

use async_trait::async_trait;
use rusqlite::{OptionalExtension, params};

use super::timelines::{retractions, versions};
use super::{
    EmbeddedStore, add_to_counter, placeholders, post_before, post_from_row, post_id_at,
    record_change, rows_in,
};
use super::{POST_COLUMNS, threads};
use crate::domain::{ChangeOp, NameStamp, Post, PostId};
use crate::store::{ContentStore, Inserted, PostRange, StoreError, StoreResult};

#[async_trait]
impl ContentStore for EmbeddedStore {
    async fn insert_post(
        &self,
        author: &str,
        text: &str,
        in_reply_to: Option<PostId>,
        now_ms: i64,
    ) -> StoreResult<Inserted> {
        let (author, text) = (author.to_owned(), text.to_owned());
        self.write(move |tx| insert_post_tx(tx, author, text, in_reply_to, now_ms))
            .await
    }

    async fn post(&self, id: PostId) -> StoreResult<Option<Post>> {
        self.read_inline(move |conn| {
            Ok(conn
                .prepare_cached(POST_BY_ID)?
                .query_row([&id.bytes()[..]], post_from_row)
                .optional()?)
        })
        .await
    }

    async fn delete_post(&self, id: PostId) -> StoreResult<Option<Post>> {
        self.write(move |tx| {
            let post = tx
                .prepare_cached(&format!(
                    "DELETE FROM posts WHERE id = ?1 RETURNING {POST_COLUMNS}"
                ))?
                .query_row([&id.bytes()[..]], post_from_row)
                .optional()?;
            if let Some(post) = &post {
                retractions::mark_delete(tx, post.id)?;
                tags::unindex_post(tx, post.id, &post.text)?;
                add_to_counter(tx, "posts_count", &post.author, -1)?;
                // The parent, if it still exists, counts one reply fewer; the replies of
                // this post keep naming it.
                if let Some(parent) = &post.reply_to {
                    threads::count_reply(tx, parent.post, -1)?;
                }
                // Every repost of it goes with it, each with its change.
                super::reposts::remove_of(tx, post.id)?;
                versions::bump_merge_version(tx, &post.author)?;
                // For pages read below a cache, and pages with reposts of it.
                versions::bump_below_clock(tx)?;
                // The deleted post rides with its change, so workers know its author.
                record_change(tx, "posts", ChangeOp::Delete, &id.to_string(), Some(post))?;
            }
            Ok(post)
        })
        .await
    }

    async fn posts_by_author(
        &self,
        author: &str,
        before: Option<PostId>,
        limit: usize,
    ) -> StoreResult<Vec<Post>> {
        let (author, before) = (author.to_owned(), post_before(before));
        self.read(move |conn| newest_posts(conn, POSTS_BY_AUTHOR, &author, before, limit))
            .await
    }

    async fn posts_by_ids(&self, ids: &[PostId], _authors: &[String]) -> StoreResult<Vec<Post>> {
        let ids: Vec<Vec<u8>> = ids.iter().map(|id| id.bytes().to_vec()).collect();
        self.read(move |conn| {
            let sql = |n| {
                format!(
                    "SELECT {POST_COLUMNS} FROM posts WHERE id IN ({})",
                    placeholders(n)
                )
            };
            Ok(rows_in(conn, &ids, sql, post_from_row)?)
        })
        .await
    }

    async fn existing_posts(
        &self,
        ids: &[PostId],
        _authors: &[String],
    ) -> StoreResult<Vec<PostId>> {
        let ids: Vec<Vec<u8>> = ids.iter().map(|id| id.bytes().to_vec()).collect();
        self.read(move |conn| {
            // One primary-key seek per id; the texts are not decoded.
            let sql = |n| format!("SELECT id FROM posts WHERE id IN ({})", placeholders(n));
            Ok(rows_in(conn, &ids, sql, |row| post_id_at(row, 0))?)
        })
        .await
    }

    async fn home_posts(
        &self,
        user: &str,
        before: Option<PostId>,
        limit: usize,
    ) -> StoreResult<Vec<Post>> {
        let (user, before) = (user.to_owned(), post_before(before));
        self.read(move |conn| newest_posts(conn, HOME_POSTS, &user, before, limit))
            .await
    }

    async fn shown_home_posts(
        &self,
        user: &str,
        before: Option<PostId>,
        limit: usize,
        now_ms: i64,
    ) -> StoreResult<Vec<(Post, NameStamp)>> {
        let user = user.to_owned();
        self.read(move |conn| home::shown_home_posts(conn, &user, before, limit, now_ms))
            .await
    }

    /// Bounded by the page, so read inline like a cache page.
    async fn merged_posts(
        &self,
        user: &str,
        before: Option<PostId>,
        above: Option<PostId>,
        limit: usize,
    ) -> StoreResult<Vec<(Post, NameStamp)>> {
        if limit == 0 {
            return Ok(Vec::new());
        }
        let (user, before) = (user.to_owned(), post_before(before));
        // An empty blob is below every id.
        let above_key = above.map_or_else(Vec::new, |id| id.bytes().to_vec());
        self.read_inline(move |conn| {
            // Each flagged followee with their newest post id below the cursor, from one
            // seek of the `(author, id)` index each, inside this one statement.
            let mut celebrities: Vec<(PostId, (String, NameStamp))> = Vec::new();
            let mut followees = conn.prepare_cached(MERGED_FOLLOWEES)?;
            let mut rows = followees.query(params![&user, &before])?;
            while let Some(row) = rows.next()? {
                if row.get_ref(3)? == rusqlite::types::ValueRef::Null {
                    continue;
                }
                let newest = post_id_at(row, 3)?;
                if above.is_some_and(|above| newest <= above) {
                    continue;
                }
                let version: i64 = row.get(2)?;
                let name = NameStamp {
                    display_name: row.get(1)?,
                    version: version.max(0) as u64,
                };
                celebrities.push((newest, (row.get(0)?, name)));
            }
            drop(rows);
            // Only ids from the `(author, id)` index (no row read), merged, newest
            // author first; then the rows of the page's ids alone.
            let keys = home::merge_newest(
                conn,
                &mut celebrities,
                |c| c.0.as_str(),
                &before,
                &above_key,
                limit,
            )?;
            let mut by_id = conn.prepare_cached(POST_BY_ID)?;
            let mut posts = Vec::with_capacity(keys.len());
            for (id, index) in keys {
                let post = by_id.query_row([id.bytes()], post_from_row)?;
                posts.push((post, celebrities[index].1.1.clone()));
            }
            Ok(posts)
        })
        .await
    }

    async fn public_posts(&self, range: PostRange, limit: usize) -> StoreResult<Vec<Post>> {
        self.read_inline(move |conn| listings::public_posts(conn, range, limit))
            .await
    }

    async fn tagged_posts(
        &self,
        tag: &str,
        range: PostRange,
        limit: usize,
    ) -> StoreResult<Vec<Post>> {
        self.read_inline(move |conn| tags::tagged_posts(conn, tag, range, limit))
            .await
    }
}

/// [`ContentStore::insert_post`] within the caller's transaction: also the keyed insert
/// of `embedded/idempotency.rs`, which claims its key in the same transaction.
pub(super) fn insert_post_tx(
    tx: &rusqlite::Transaction<'_>,
    author: String,
    text: String,
    in_reply_to: Option<PostId>,
    now_ms: i64,
) -> StoreResult<Inserted> {
    let found: Option<(i64, String, i64)> = tx
        .prepare_cached("SELECT followers_count, display_name, version FROM users WHERE id = ?1")?
        .query_row([&author], |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)))
        .optional()?;
    let Some((followers, display_name, version)) = found else {
        return Err(StoreError::NotFound(format!("user {author}")));
    };
    // The parent is read in the insert's transaction: it exists when the reply
    // is stored, and its author is copied into the reply.
    let reply_to = match in_reply_to {
        Some(parent) => Some(threads::parent(tx, parent)?),
        None => None,
    };
    let id = next_post_id(tx, now_ms)?;
    tx.prepare_cached(
        "INSERT INTO posts (id, author, text, reply_to, reply_to_author)
         VALUES (?1, ?2, ?3, ?4, ?5)",
    )?
    .execute(params![
        &id.bytes()[..],
        author,
        text,
        reply_to.as_ref().map(|r| r.post.bytes().to_vec()),
        reply_to.as_ref().map(|r| r.author.as_str()),
    ])?;
    add_to_counter(tx, "posts_count", &author, 1)?;
    tags::index_post(tx, id, &text)?;
    if let Some(parent) = &reply_to {
        threads::count_reply(tx, parent.post, 1)?;
    }
    versions::bump_merge_version(tx, &author)?;
    let post = Post {
        id,
        author,
        text,
        reply_to,
        replies_count: 0,
        reposts_count: 0,
    };
    record_change(tx, "posts", ChangeOp::Insert, &id.to_string(), Some(&post))?;
    Ok(Inserted {
        post,
        author_followers: followers.max(0) as u64,
        author_name: NameStamp {
            display_name,
            version: version.max(0) as u64,
        },
    })
}

/// A fresh post id, greater than every one handed out before: posts and reposts share
/// it. The last id handed out lives in `meta`, so ids never go back or repeat, even
/// after the newest post is deleted or the clock steps back.
pub(super) fn next_post_id(tx: &rusqlite::Transaction<'_>, now_ms: i64) -> StoreResult<PostId> {
    let last: Option<Vec<u8>> = tx
        .prepare_cached("SELECT value FROM meta WHERE key = 'last_post_id'")?
        .query_row([], |row| row.get(0))
        .optional()?;
    let last = last
        .and_then(|b| <[u8; 12]>::try_from(b.as_slice()).ok())
        .map(PostId::from_bytes);
    let id = PostId::next_after(now_ms, last, 0);
    tx.prepare_cached("INSERT OR REPLACE INTO meta (key, value) VALUES ('last_post_id', ?1)")?
        .execute([&id.bytes()[..]])?;
    Ok(id)
}

/// The posts `query` selects for `key` (`?1`) below `before` (`?2`), at most `limit`.
fn newest_posts(
    conn: &rusqlite::Connection,
    query: &str,
    key: &str,
    before: Vec<u8>,
    limit: usize,
) -> StoreResult<Vec<Post>> {
    let mut stmt = conn.prepare_cached(query)?;
    let rows = stmt.query_map(params![key, before, limit as i64], post_from_row)?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// An author's posts, newest first, below `?2`.
pub(super) const POSTS_BY_AUTHOR: &str =
    "SELECT id, author, text, reply_to, reply_to_author, replies_count, reposts_count FROM posts
     WHERE author = ?1 AND id < ?2 ORDER BY id DESC LIMIT ?3";
/// `hybrid`: an author's post ids, newest first, below `?2` and above `?3` (an empty
/// blob is below every id), from the `(author, id)` index alone.
pub(super) const POST_IDS_BY_AUTHOR: &str = "SELECT id FROM posts
     WHERE author = ?1 AND id < ?2 AND id > ?3 ORDER BY id DESC LIMIT ?4";
/// One post by its id.
pub(super) const POST_BY_ID: &str = "SELECT id, author, text, reply_to, reply_to_author, replies_count, reposts_count FROM posts WHERE id = ?1";
/// Fanout on read: the newest posts below `?2`, at most `?3`, by the user and everyone
/// they follow.
pub(super) const HOME_POSTS: &str =
    "SELECT id, author, text, reply_to, reply_to_author, replies_count, reposts_count
     FROM posts
     WHERE author IN (SELECT followee FROM follows WHERE follower = ?1 UNION ALL SELECT ?1)
       AND id < ?2 ORDER BY id DESC LIMIT ?3";
/// `hybrid`: the followees whose edge is flagged merged, with their names as this read
/// finds them and their newest post id below `?2` (one seek of the `(author, id)` index
/// each, inside this statement). The edges come from the partial covering
/// `follows_flagged` index alone (`INDEXED BY` makes it certain); its first form did
/// not cover, and the planner took the primary key, equal on `follower`, walking every
/// edge of the reader to filter them: 463 against 56 us per page for a reader of 10,000
/// accounts, 49 of them celebrities (2026-11-25, this statement alone from Python's
/// `sqlite3`, on a copy of `STRATEGY=hybrid loadtest/read_cost.sh`'s data set).
/// `merged_posts` skips those with nothing between the page's bounds, walks the rest
/// newest first and stops at the first whose newest post would not make the page; it
/// reads the others' post ids (at most a page each) from the `(author, id)` index,
/// merges them and reads the page's rows. One `IN (...) ORDER BY` query instead built
/// two temporary B-trees for every page, even for a reader who follows no celebrity,
/// and read every post of every celebrity below the cursor. At 10,000 users under wrk
/// (one run each, 2026-11-24): a warm page of a reader who follows no celebrity went
/// from 14,800 to 28,100 pages/s; merging ids before rows took readers of celebrities
/// (`feed.hybrid_threshold = 1000`) from 4,800-6,700 to 9,900-14,200 pages/s. Skipping
/// celebrities with nothing between the bounds then took those pages from 100.5 and
/// 101.7 to 74.7 and 75.9 us of server CPU each (`STRATEGY=hybrid loadtest/read_cost.sh
/// 2` with the builds of 772075e^ and 772075e in turn, 2026-11-25).
pub(super) const MERGED_FOLLOWEES: &str =
    "SELECT f.followee, IFNULL(u.display_name, f.followee), IFNULL(u.version, 0),
            (SELECT id FROM posts WHERE author = f.followee AND id < ?2
             ORDER BY id DESC LIMIT 1)
     FROM follows AS f INDEXED BY follows_flagged LEFT JOIN users AS u ON u.id = f.followee
     WHERE f.follower = ?1 AND f.merged";
