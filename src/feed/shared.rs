//! Steps the strategies share: a follow's backfill, noting a cache's read, retracting
//! deleted posts, and putting a page's entries in order.

use std::collections::HashSet;
use std::ops::Not;

use super::FeedSettings;
use crate::domain::{FeedStrategy, Post, PostId, TimelineEntry, TimelineKind};
use crate::store::{Store, StoreResult};

/// The posts of `followee` a follow stored at `since_ms` backfills, newest first: the
/// newest `limit` written up to the follow, however late the backfill runs (a crash
/// can leave it to the worker, after newer posts that fan-out delivers anyway; taking
/// the newest `limit` then would leave out older posts the follow promised), and the
/// newest `limit` now, which a clock behind the posts' own cannot then leave out.
pub(crate) async fn backfill_posts(
    store: &Store,
    followee: &str,
    since_ms: i64,
    limit: usize,
) -> StoreResult<Vec<Post>> {
    let mut posts = store.content.posts_by_author(followee, None, limit).await?;
    let bound = PostId::at(since_ms.saturating_add(1), 0);
    if posts.len() < limit || posts.iter().all(|p| p.id < bound) {
        return Ok(posts);
    }
    let before = store
        .content
        .posts_by_author(followee, Some(bound), limit)
        .await?;
    posts.extend(before);
    posts.sort_unstable_by_key(|p| std::cmp::Reverse(p.id));
    posts.dedup_by_key(|p| p.id);
    Ok(posts)
}

/// [`super::Timelines::note_read`], shared with the cache strategies' reads.
pub(crate) async fn note_read(
    store: &Store,
    settings: &FeedSettings,
    user: &str,
    read_ms: i64,
    now_ms: i64,
) -> bool {
    if matches!(
        settings.strategy,
        FeedStrategy::Cache | FeedStrategy::Hybrid
    )
    .not()
        || now_ms.saturating_sub(read_ms) < settings.read_stamp_ms()
    {
        return false;
    }
    if let Err(error) = store.timelines.cache_touch(user, now_ms).await {
        tracing::warn!(error = %error, user, "recording a cache read failed");
        return false;
    }
    metrics::counter!("socialite_cache_read_stamps_total").increment(1);
    true
}

/// Retracts, among `ids` just written to timelines of `kind` from an earlier read, the
/// posts deleted since that read. A delete removes the post before it retracts it: if
/// the lookup here still sees the post, the delete's retraction comes after our write
/// and removes the entry; if not, this retraction does. Either way no entry survives.
pub(crate) async fn retract_deleted(
    store: &Store,
    kind: TimelineKind,
    ids: &[PostId],
) -> StoreResult<()> {
    if ids.is_empty() {
        return Ok(());
    }
    let existing: HashSet<PostId> = store
        .content
        .existing_posts(ids, &[])
        .await?
        .into_iter()
        .collect();
    for id in ids.iter().filter(|id| !existing.contains(id)) {
        store.timelines.remove_post_entries(kind, *id).await?;
    }
    Ok(())
}

pub(crate) fn distinct<'a>(items: impl Iterator<Item = &'a str>) -> impl Iterator<Item = &'a str> {
    let mut seen = HashSet::new();
    items.filter(move |item| seen.insert(*item))
}

/// Sorts newest first, drops duplicates and entries not below `before`, keeps `want`.
pub(crate) fn normalise(entries: &mut Vec<TimelineEntry>, before: Option<PostId>, want: usize) {
    if let Some(before) = before {
        entries.retain(|e| e.id < before);
    }
    entries.sort_unstable_by_key(|e| std::cmp::Reverse(e.id));
    entries.dedup_by_key(|e| e.id);
    entries.truncate(want);
}
