//! Materialised timelines on SQLite: `buckets` plus `bucket_entries` hold what a bucket
//! document holds, `caches` plus `cache_entries` what a `timeline_cache` document holds.
//! Each port call is one write transaction, so bucket sizes and cache bounds hold, and
//! the checks that make pushes idempotent cannot race; the one exception, a push to a
//! whole audience, is one such transaction per chunk of cache holders.

use async_trait::async_trait;
use rusqlite::{OptionalExtension, params};

mod audience;
mod buckets;
pub(super) mod entries;
pub(super) mod idle;
pub(super) mod names;
pub(super) mod retractions;
pub(super) mod versions;

use super::{EmbeddedStore, post_before, post_id_at};
use crate::domain::{
    Bucket, BucketKind, CacheState, NameStamp, PostId, TimelineEntry, TimelineKind,
};
use crate::store::timelines::{CacheMerge, CacheRows, CacheVersion, CacheView};
use crate::store::{StoreResult, TimelineStore};
pub(super) use buckets::PART_BITS;
use buckets::{group_keys, kind_code, public_key, push_group};
use entries::{entry_from_row, insert_cache_entries, name_columns};

/// A user's buckets holding posts below `?3`, newest first (`plans.rs` checks the
/// reads of a timeline page seek their index).
pub(super) const BUCKET_HEADS: &str = "SELECT key, n, mx FROM buckets
     WHERE kind = ?1 AND user = ?2 AND mn < ?3
     ORDER BY mx DESC, key DESC LIMIT ?4 OFFSET ?5";
/// One bucket's entries below `?4`, newest first.
pub(super) const BUCKET_ENTRIES: &str = "SELECT post_id, author, text, name, name_v,
     reply_to_author, repost_post, repost_author FROM bucket_entries WHERE kind = ?1 AND user = ?2 AND key = ?3 AND post_id < ?4
     ORDER BY post_id DESC LIMIT ?5";

#[async_trait]
impl TimelineStore for EmbeddedStore {
    async fn timed_push(
        &self,
        users: &[String],
        key: i64,
        entries: &[TimelineEntry],
        max_entries: u32,
    ) -> StoreResult<()> {
        let (users, entries) = (users.to_vec(), entries.to_vec());
        let keys = group_keys(BucketKind::Timed, key)?;
        self.write(move |tx| {
            for user in &users {
                push_group(tx, BucketKind::Timed, user, keys, max_entries, &entries)?;
            }
            Ok(())
        })
        .await
    }

    async fn sized_push(
        &self,
        users: &[String],
        entries: &[TimelineEntry],
        bucket_size: u32,
    ) -> StoreResult<()> {
        let (users, entries) = (users.to_vec(), entries.to_vec());
        let keys = group_keys(BucketKind::Sized, 0)?;
        self.write(move |tx| {
            for user in &users {
                push_group(tx, BucketKind::Sized, user, keys, bucket_size, &entries)?;
            }
            Ok(())
        })
        .await
    }

    async fn buckets(
        &self,
        kind: BucketKind,
        user: &str,
        before: Option<PostId>,
        skip: usize,
        limit: usize,
        per_bucket: usize,
    ) -> StoreResult<Vec<Bucket>> {
        let user = user.to_owned();
        let per_bucket = i64::try_from(per_bucket).unwrap_or(i64::MAX);
        let before = post_before(before);
        self.read_inline(move |conn| {
            let code = kind_code(kind);
            let heads: Vec<(i64, i64, PostId)> = conn
                .prepare_cached(BUCKET_HEADS)?
                .query_map(
                    params![code, user, before, limit as i64, skip as i64],
                    |row| Ok((row.get(0)?, row.get(1)?, post_id_at(row, 2)?)),
                )?
                .collect::<rusqlite::Result<_>>()?;
            let mut entries_stmt = conn.prepare_cached(BUCKET_ENTRIES)?;
            let mut buckets = Vec::with_capacity(heads.len());
            for (key, pushes, newest) in heads {
                let entries = entries_stmt
                    .query_map(params![code, user, key, before, per_bucket], entry_from_row)?
                    .collect::<rusqlite::Result<_>>()?;
                buckets.push(Bucket {
                    key: public_key(kind, key),
                    pushes: pushes as u64,
                    newest,
                    entries,
                });
            }
            Ok(buckets)
        })
        .await
    }

    async fn cache_push(
        &self,
        users: &[String],
        entries: &[TimelineEntry],
        cache_size: u32,
    ) -> StoreResult<u64> {
        let (users, entries) = (users.to_vec(), entries.to_vec());
        self.write(move |tx| audience::push_to_caches(tx, &users, &entries, cache_size))
            .await
    }

    /// The cache holders are listed in one read, then written a chunk per transaction
    /// (see [`audience::AUDIENCE_CHUNK`]): one transaction for the whole audience held
    /// the single writer for 150-250 ms at 10,000 caches, and every other write, a
    /// request's included, queued behind it.
    async fn cache_push_to_audience(
        &self,
        author: &str,
        entries: &[TimelineEntry],
        cache_size: u32,
    ) -> StoreResult<u64> {
        let author = author.to_owned();
        let owners = self
            .read(move |conn| audience::cache_owners(conn, &author))
            .await?;
        audience::in_chunks(&owners, |chunk| self.cache_push(chunk, entries, cache_size)).await
    }

    async fn cache(&self, user: &str) -> StoreResult<Option<CacheState>> {
        let user = user.to_owned();
        self.read_inline(move |conn| {
            let head: Option<(bool, i64, bool)> = conn
                .prepare_cached("SELECT ready, started_at, complete FROM caches WHERE user = ?1")?
                .query_row([&user], |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)))
                .optional()?;
            let Some((ready, started_at_ms, complete)) = head else {
                return Ok(None);
            };
            let entries = conn
                .prepare_cached(
                    "SELECT post_id, author, text, name, name_v, reply_to_author, repost_post,
                            repost_author FROM cache_entries
                     WHERE user = ?1 ORDER BY post_id DESC",
                )?
                .query_map([&user], entry_from_row)?
                .collect::<rusqlite::Result<_>>()?;
            Ok(Some(CacheState {
                ready,
                started_at_ms,
                complete,
                entries,
            }))
        })
        .await
    }

    async fn cache_start(&self, user: &str, now_ms: i64) -> StoreResult<bool> {
        let user = user.to_owned();
        self.write(move |tx| {
            let created = tx
                .prepare_cached(
                    "INSERT OR IGNORE INTO caches
                         (user, ready, started_at, complete, version, last_read)
                     VALUES (?1, 0, ?2, 1, random(), ?2)",
                )?
                .execute(params![user, now_ms])?;
            if created > 0 {
                tx.prepare_cached("UPDATE meta SET value = value + 1 WHERE key = 'cache_count'")?
                    .execute([])?;
            }
            Ok(created > 0)
        })
        .await
    }

    async fn cache_touch(&self, user: &str, now_ms: i64) -> StoreResult<()> {
        self.touch_cache(user, now_ms).await
    }

    async fn drop_idle_caches(&self, now_ms: i64, idle_ms: i64, limit: usize) -> StoreResult<u64> {
        self.drop_idle(now_ms.saturating_sub(idle_ms), limit).await
    }

    async fn cache_reset(&self, user: &str) -> StoreResult<bool> {
        let user = user.to_owned();
        self.write(move |tx| {
            let deleted = tx
                .prepare_cached(
                    "DELETE FROM caches WHERE user = ?1 AND ready AND NOT complete
                       AND NOT EXISTS (SELECT 1 FROM cache_entries WHERE user = ?1)",
                )?
                .execute([&user])?;
            if deleted > 0 {
                tx.prepare_cached("UPDATE meta SET value = value - 1 WHERE key = 'cache_count'")?
                    .execute([])?;
            }
            Ok(deleted > 0)
        })
        .await
    }

    async fn cache_fill(
        &self,
        user: &str,
        entries: &[TimelineEntry],
        cache_size: u32,
    ) -> StoreResult<()> {
        let (user, mut entries) = (user.to_owned(), entries.to_vec());
        let cut = entries.len() >= cache_size as usize;
        self.write(move |tx| {
            names::current_stamps(tx, &mut entries)?;
            insert_cache_entries(tx, &user, &entries, cache_size, CacheMerge::Fill { cut })?;
            Ok(())
        })
        .await
    }

    async fn cache_backfill(
        &self,
        user: &str,
        entries: &[TimelineEntry],
        cache_size: u32,
        cut: bool,
    ) -> StoreResult<bool> {
        let (user, mut entries) = (user.to_owned(), entries.to_vec());
        let merge = CacheMerge::Backfill { cut };
        self.write(move |tx| {
            names::current_stamps(tx, &mut entries)?;
            Ok(insert_cache_entries(tx, &user, &entries, cache_size, merge)? > 0)
        })
        .await
    }

    async fn remove_author_entries(
        &self,
        kind: TimelineKind,
        user: &str,
        author: &str,
    ) -> StoreResult<()> {
        let (user, author) = (user.to_owned(), author.to_owned());
        self.write(move |tx| {
            match kind {
                TimelineKind::Buckets(kind) => {
                    tx.prepare_cached(
                        "DELETE FROM bucket_entries WHERE kind = ?1 AND user = ?2 AND author = ?3",
                    )?
                    .execute(params![kind_code(kind), user, author])?;
                }
                TimelineKind::Cache => {
                    let removed = tx
                        .prepare_cached(
                            "DELETE FROM cache_entries WHERE user = ?1 AND author = ?2",
                        )?
                        .execute(params![user, author])?;
                    if removed > 0 {
                        versions::bump_version(tx, &user)?;
                    }
                    retractions::clear_unfollow(tx, &user, &author)?;
                }
            }
            Ok(())
        })
        .await
    }

    async fn remove_post_entries(&self, kind: TimelineKind, post: PostId) -> StoreResult<()> {
        self.write(move |tx| {
            let id = &post.bytes()[..];
            match kind {
                TimelineKind::Buckets(kind) => {
                    tx.prepare_cached(
                        "DELETE FROM bucket_entries WHERE post_id = ?1 AND kind = ?2",
                    )?
                    .execute(params![id, kind_code(kind)])?;
                }
                TimelineKind::Cache => {
                    versions::bump_versions_of(
                        tx,
                        "SELECT user FROM cache_entries WHERE post_id = ?1",
                        [id],
                    )?;
                    tx.prepare_cached("DELETE FROM cache_entries WHERE post_id = ?1")?
                        .execute([id])?;
                    retractions::clear_delete(tx, id)?;
                }
            }
            Ok(())
        })
        .await
    }

    async fn settle_retractions(&self) -> StoreResult<u64> {
        self.write(|tx| Ok(retractions::settle(tx)? as u64)).await
    }

    async fn cache_current(
        &self,
        user: &str,
        before: Option<PostId>,
        limit: usize,
    ) -> StoreResult<Option<CacheView>> {
        let user = user.to_owned();
        self.read_inline(move |conn| names::cache_current(conn, &user, before, limit))
            .await
    }

    async fn cache_version(
        &self,
        user: &str,
        rows: CacheRows,
        merged: bool,
    ) -> StoreResult<Option<CacheVersion>> {
        self.read_cache_version(user, rows, merged).await
    }

    async fn below_clock(&self) -> StoreResult<Option<u64>> {
        self.read_below_clock().await
    }

    async fn cache_stands(
        &self,
        user: &str,
        kept: &CacheVersion,
    ) -> StoreResult<Option<CacheVersion>> {
        self.read_cache_stands(user, kept).await
    }

    async fn rename_author(
        &self,
        kind: TimelineKind,
        users: &[String],
        author: &str,
        name: &NameStamp,
    ) -> StoreResult<()> {
        let (users, author, name) = (users.to_vec(), author.to_owned(), name.clone());
        self.write(move |tx| names::rename_author(tx, kind, &users, &author, &name))
            .await
    }

    async fn renamed(&self, authors: &[String]) -> StoreResult<Vec<(String, u64)>> {
        let authors = authors.to_vec();
        self.read(move |conn| names::renamed(conn, &authors)).await
    }

    async fn mark_renamed(&self, author: &str, version: u64) -> StoreResult<()> {
        let author = author.to_owned();
        self.write(move |tx| names::mark_renamed(tx, &author, version))
            .await
    }

    async fn pending_renames(&self) -> StoreResult<Vec<(String, u64)>> {
        self.read(names::pending_renames).await
    }
}
