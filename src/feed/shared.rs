//! Steps the strategies share: a follow's backfill, noting a cache's read, retracting
//! deleted posts, and putting a page's entries in order.

use std::collections::{HashMap, HashSet};
use std::ops::Not;

use super::FeedSettings;
use crate::domain::{FeedStrategy, Post, PostId, Repost, TimelineEntry, TimelineKind};
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

/// [`backfill_posts`] as entries in their embedded form (unstamped), with the
/// followee's reposts taken by the same rule beside their posts, newest first.
pub(crate) async fn backfill_entries(
    store: &Store,
    followee: &str,
    since_ms: i64,
    limit: usize,
) -> StoreResult<Vec<TimelineEntry>> {
    let posts = backfill_posts(store, followee, since_ms, limit).await?;
    let mut reposts = store.reposts.reposts_by(followee, None, limit).await?;
    let bound = PostId::at(since_ms.saturating_add(1), 0);
    if reposts.len() >= limit && reposts.iter().any(|r| r.id >= bound) {
        reposts.extend(
            store
                .reposts
                .reposts_by(followee, Some(bound), limit)
                .await?,
        );
        reposts.sort_unstable_by_key(|r| std::cmp::Reverse(r.id));
        reposts.dedup_by_key(|r| r.id);
    }
    let mut entries: Vec<TimelineEntry> = posts.iter().map(|p| p.entry(true, None)).collect();
    entries.extend(repost_entries(store, &reposts).await?);
    entries.sort_unstable_by_key(|e| std::cmp::Reverse(e.id));
    Ok(entries)
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
    remove_all_but(store, kind, ids, &existing).await
}

/// The timeline entries of `reposts` in their embedded form (see `Repost::entry`),
/// each carrying its original's text; reposts whose original is gone are left out (a
/// delete whose removal of its reposts has not run yet). One batched read of the
/// originals, none without reposts.
pub(crate) async fn repost_entries(
    store: &Store,
    reposts: &[Repost],
) -> StoreResult<Vec<TimelineEntry>> {
    if reposts.is_empty() {
        return Ok(Vec::new());
    }
    let originals: Vec<PostId> = reposts.iter().map(|r| r.post.post).collect();
    let authors: Vec<String> = distinct(reposts.iter().map(|r| r.post.author.as_str()))
        .map(str::to_owned)
        .collect();
    let texts: HashMap<PostId, String> = store
        .content
        .posts_by_ids(&originals, &authors)
        .await?
        .into_iter()
        .map(|p| (p.id, p.text))
        .collect();
    Ok(reposts
        .iter()
        .filter_map(|r| {
            let text = texts.get(&r.post.post)?;
            Some(r.entry(Some(text), true, None))
        })
        .collect())
}

/// A user's newest posts and reposts below `before`, at most `limit` of both, newest
/// first, as entries in their embedded form (unstamped): what a follow backfills.
pub(crate) async fn authored_entries(
    store: &Store,
    author: &str,
    before: Option<PostId>,
    limit: usize,
) -> StoreResult<Vec<TimelineEntry>> {
    let (posts, reposts) = tokio::try_join!(
        store.content.posts_by_author(author, before, limit),
        store.reposts.reposts_by(author, before, limit)
    )?;
    merged_entries(store, &posts, &reposts, before, limit).await
}

/// `posts`' and `reposts`' entries in their embedded form (unstamped), merged newest
/// first, at most `limit` below `before`; `posts` come sorted, so only reposts need a
/// merge.
pub(crate) async fn merged_entries(
    store: &Store,
    posts: &[crate::domain::Post],
    reposts: &[Repost],
    before: Option<PostId>,
    limit: usize,
) -> StoreResult<Vec<TimelineEntry>> {
    let entries: Vec<TimelineEntry> = posts.iter().map(|p| p.entry(true, None)).collect();
    with_reposts(store, entries, reposts, before, limit).await
}

/// `entries`, sorted newest first, merged with `reposts`' entries, at most `limit` below
/// `before`.
pub(crate) async fn with_reposts(
    store: &Store,
    mut entries: Vec<TimelineEntry>,
    reposts: &[Repost],
    before: Option<PostId>,
    limit: usize,
) -> StoreResult<Vec<TimelineEntry>> {
    if !reposts.is_empty() {
        entries.extend(repost_entries(store, reposts).await?);
        normalise(&mut entries, before, limit);
    }
    Ok(entries)
}

/// Retracts, among the repost entries `ids` just written to timelines of `kind`, those
/// whose repost was undone (or whose original was deleted, which removes the repost
/// first) since the read they came from; as [`retract_deleted`] for posts.
pub(crate) async fn retract_unreposted(
    store: &Store,
    kind: TimelineKind,
    ids: &[PostId],
) -> StoreResult<()> {
    if ids.is_empty() {
        return Ok(());
    }
    let standing: HashSet<PostId> = store
        .reposts
        .reposts_by_ids(ids)
        .await?
        .into_iter()
        .map(|r| r.id)
        .collect();
    remove_all_but(store, kind, ids, &standing).await
}

/// Removes from every timeline of `kind` the entries of those of `ids` not in `keep`.
async fn remove_all_but(
    store: &Store,
    kind: TimelineKind,
    ids: &[PostId],
    keep: &HashSet<PostId>,
) -> StoreResult<()> {
    for id in ids.iter().filter(|id| !keep.contains(id)) {
        store.timelines.remove_post_entries(kind, *id).await?;
    }
    Ok(())
}

/// [`retract_deleted`] and [`retract_unreposted`] for `entries` of posts and reposts.
pub(crate) async fn retract_gone(
    store: &Store,
    kind: TimelineKind,
    entries: &[TimelineEntry],
) -> StoreResult<()> {
    let (reposts, posts): (Vec<&TimelineEntry>, Vec<&TimelineEntry>) =
        entries.iter().partition(|e| e.is_repost());
    let posts: Vec<PostId> = posts.iter().map(|e| e.id).collect();
    let reposts: Vec<PostId> = reposts.iter().map(|e| e.id).collect();
    retract_deleted(store, kind, &posts).await?;
    retract_unreposted(store, kind, &reposts).await
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
