//! The derived data of a bulk load on SQLite, step by step, each step recomputing its
//! data from all the sources so that a re-run ends in the same state. The event log goes
//! first: its ids are change-feed positions, so the head every other step records as
//! its watermark (`counted_seq`, the logs' `applied`, the tags' `w`) is known after it.
//! Steps over every user go a chunk of users per transaction, which keeps the WAL and
//! the memory of one step bounded whatever the data set's size.

use rusqlite::{Connection, OptionalExtension, params};

use super::{activity, events, notifications, sources, timelines};
use crate::domain::{BucketKind, FeedStrategy};
use crate::store::StoreResult;
use crate::store::bulk::TimelineLayout;
use crate::store::bulk::{DeriveSettings, Derived, StepReport};
use crate::store::embedded::timelines::versions;
use crate::store::embedded::{EmbeddedStore, trends, users};
use crate::store::trends::{HOUR_MS, HOURS_KEPT};

/// Users per transaction when building activity logs (about 50 entries each in the
/// standard data set).
const LOG_USERS: i64 = 2_000;
/// Users per transaction when materialising buckets (each holds its whole timeline).
const BUCKET_USERS: i64 = 200;

/// The last id of the chunk of `size` users after `after`; `None` when the chunk runs
/// to the last user.
pub(super) fn chunk_end(
    conn: &Connection,
    after: &str,
    size: i64,
) -> rusqlite::Result<Option<String>> {
    conn.prepare_cached("SELECT id FROM users WHERE id > ?1 ORDER BY id LIMIT 1 OFFSET ?2")?
        .query_row(params![after, size - 1], |row| row.get(0))
        .optional()
}

pub(super) async fn derive_all(
    store: &EmbeddedStore,
    settings: &DeriveSettings,
    step: StepReport,
) -> StoreResult<Derived> {
    let mut derived = Derived::default();
    step("blocks, replies and reposts");
    derived.follows_blocked = store
        .write(|tx| {
            let removed = sources::remove_blocked_follows(tx)?;
            sources::complete_replies(tx)?;
            sources::count_reposts(tx)?;
            Ok(removed)
        })
        .await?;
    let max_events = settings.events.max_count;
    step("event log");
    let (written, head) = store
        .write(move |tx| events::rebuild_log(tx, max_events))
        .await?;
    derived.events = written;

    step("counters");
    derived.users_counted = store
        .write(move |tx| Ok(users::recount_every_user(tx, head)? as u64))
        .await?;

    step("activity logs");
    store
        .write(|tx| {
            tx.execute_batch("DELETE FROM activity_entries; DELETE FROM activity_logs;")?;
            Ok(())
        })
        .await?;
    let limits = settings.activity;
    derived.activity_entries = over_users(store, LOG_USERS, move |tx, after, through| {
        activity::build_logs(tx, after, through, limits, head)
    })
    .await?;

    step("tag counts");
    let from_hour = settings.now_ms.div_euclid(HOUR_MS) - (HOURS_KEPT - 1);
    derived.tags = store
        .write(move |tx| trends::recount_tags(tx, head, from_hour))
        .await?;

    step("notifications");
    store
        .write(|tx| {
            notifications::clear(tx)?;
            notifications::stage(tx)
        })
        .await?;
    derived.notifications = over_users(store, LOG_USERS, notifications::write_chunk).await?;
    store.write(|tx| notifications::unstage(tx)).await?;

    let timelines = derive_timelines(store, &settings.feed, step).await?;
    derived.timeline_entries = timelines.timeline_entries;
    derived.delivered = timelines.delivered;
    Ok(derived)
}

/// The timeline steps: every cache and every bucket dropped, the buckets of `feed`'s
/// kind materialised, `hybrid`'s celebrities classified, the delivery markers set.
pub(super) async fn derive_timelines(
    store: &EmbeddedStore,
    feed: &TimelineLayout,
    step: StepReport,
) -> StoreResult<Derived> {
    let mut derived = Derived::default();
    step("timelines");
    store.write(|tx| Ok(timelines::drop_caches(tx)?)).await?;
    let kind = match feed.strategy {
        FeedStrategy::TimedBuckets => Some(BucketKind::Timed),
        FeedStrategy::SizedBuckets => Some(BucketKind::Sized),
        FeedStrategy::Cache | FeedStrategy::Hybrid | FeedStrategy::FanoutOnRead => None,
    };
    // The other kind's buckets too: left behind, they would be served, stale, by a later
    // switch back that found them.
    for other in [BucketKind::Timed, BucketKind::Sized] {
        store
            .write(move |tx| Ok(timelines::drop_buckets(tx, other)?))
            .await?;
    }
    if let Some(kind) = kind {
        let feed = feed.clone();
        derived.timeline_entries = over_users(store, BUCKET_USERS, move |tx, after, through| {
            timelines::build_buckets(tx, kind, after, through, &feed)
        })
        .await?;
    }
    store
        .write(|tx| Ok(tx.execute_batch(timelines::CREATE_POST_INDEX)?))
        .await?;

    if feed.strategy == FeedStrategy::Hybrid {
        step("celebrities");
        let threshold = feed.hybrid_threshold as i64;
        let leave = feed.hybrid_leave_below as i64;
        store
            .write(move |tx| {
                // As `GraphStore::reclassify` would for each author, in the same order:
                // the mark, every edge to a marked author, then the status.
                tx.execute(
                    "UPDATE users SET merged = 1 WHERE followers_count > ?1 AND NOT merged",
                    [threshold],
                )?;
                tx.execute(
                    "UPDATE follows SET merged = 1 WHERE NOT merged
                       AND followee IN (SELECT id FROM users WHERE merged)",
                    [],
                )?;
                versions::all_merged(tx)?;
                tx.execute(
                    "UPDATE users SET celebrity = (followers_count > ?1
                                                   OR (celebrity AND followers_count >= ?2))",
                    [threshold, leave],
                )?;
                Ok(())
            })
            .await?;
    }

    step("delivery markers");
    let mark = feed.strategy != FeedStrategy::FanoutOnRead;
    derived.delivered = store
        .write(move |tx| {
            // As the API does: every post fanned out under a materialising strategy is
            // marked; markers of posts that no longer exist have nothing left to retract.
            // Reposts likewise, under their own ids.
            tx.execute(
                "DELETE FROM deliveries
                  WHERE NOT EXISTS (SELECT 1 FROM posts WHERE id = deliveries.post_id)
                    AND NOT EXISTS (SELECT 1 FROM reposts WHERE id = deliveries.post_id)",
                [],
            )?;
            if !mark {
                return Ok(0);
            }
            let added = tx.execute(
                "INSERT INTO deliveries (post_id) SELECT id FROM posts WHERE true
                 ON CONFLICT DO NOTHING",
                [],
            )? + tx.execute(
                "INSERT INTO deliveries (post_id) SELECT id FROM reposts WHERE true
                 ON CONFLICT DO NOTHING",
                [],
            )?;
            Ok(added as u64)
        })
        .await?;
    Ok(derived)
}

/// Runs `build` over every user, a chunk of `size` users (by id) per transaction, and
/// sums what it returns.
async fn over_users<F>(store: &EmbeddedStore, size: i64, build: F) -> StoreResult<u64>
where
    F: Fn(&Connection, &str, Option<&str>) -> StoreResult<u64> + Clone + Send + 'static,
{
    let mut after = String::new();
    let mut total = 0;
    loop {
        let build = build.clone();
        let (written, through) = store
            .write(move |tx| {
                let through = chunk_end(tx, &after, size)?;
                let written = build(tx, &after, through.as_deref())?;
                Ok((written, through))
            })
            .await?;
        total += written;
        match through {
            Some(through) => after = through,
            None => return Ok(total),
        }
    }
}
