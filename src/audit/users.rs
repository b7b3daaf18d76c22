//! The per-user pass: counters, the activity log and the materialised timeline of every
//! user, in id order, a page of users at a time, each against a slice of the sources
//! read for that user alone and judged by [`crate::derived`].

use std::collections::{BTreeMap, BTreeSet};

use futures::StreamExt;

use super::slice::{PAGE, add_posts, existing, follows, home, slice};
use super::{Finding, Fix, Kind, Progress, Settings, Tally};
use crate::derived::{self, FollowSource, Shape, Sources, TimelineBounds, TimelineRules, Window};
use crate::domain::{BucketKind, FeedStrategy, PostId, TimelineEntry, User, now_ms};
use crate::store::{Store, StoreResult};

/// Users read per page of the pass.
const USER_PAGE: usize = 200;
/// Buckets read per query, and the most entries taken from one bucket.
const BUCKETS_PER_READ: usize = 16;
const ENTRIES_PER_BUCKET: usize = 1_000_000;
/// A bucketed timeline's lower bound needs every post of the user's followees; past this
/// many it is not checked (the upper bound always is).
const LOWER_BOUND_POSTS: usize = 100_000;

pub(super) async fn pass(
    store: &Store,
    settings: &Settings,
    progress: &dyn Progress,
) -> StoreResult<Tally> {
    progress.phase("users", store.audit.user_count().await?);
    let mut tally = Tally::default();
    let mut after: Option<String> = None;
    loop {
        let page = store.audit.users_after(after.as_deref(), USER_PAGE).await?;
        let results: Vec<StoreResult<Tally>> = futures::stream::iter(page.iter())
            .map(|user| async move {
                let mut mine = Tally::default();
                check(store, settings, user, &mut mine).await?;
                Ok(mine)
            })
            .buffered(settings.concurrency.max(1))
            .collect()
            .await;
        for result in results {
            tally.absorb(result?, settings.keep);
        }
        progress.advance(page.len() as u64);
        if page.len() < USER_PAGE {
            return Ok(tally);
        }
        after = page.last().map(|u| u.id.clone());
    }
}

/// One user's checks into `tally`.
pub(super) async fn check(
    store: &Store,
    settings: &Settings,
    user: &User,
    tally: &mut Tally,
) -> StoreResult<()> {
    let id = user.id.as_str();
    let (sources, merged) = slice(store, user).await?;
    let mut mine = Tally::default();
    let edges = sources.follows.clone();
    counters(store, settings, user, &sources, &mut mine).await?;
    activity(store, settings, id, &sources, &mut mine).await?;
    super::notifications::check(store, settings, user, &sources, &mut mine).await?;
    timeline(store, settings, id, sources, &merged, &mut mine).await?;
    super::name_words::check(store, settings, user, &mut mine).await?;
    // The sources were read before the derived data, and the home posts after it. A
    // follow undone and done again meanwhile, its removal applied before the derived
    // read and its backfill not yet, shows a post missing under an edge that looks
    // unchanged at both ends; a new edge's time tells it apart. Such findings read
    // differently from one check to the next, so the eventual window never calls them
    // wrong.
    if !mine.found.is_empty() {
        let mut now = Sources::default();
        follows(store, id, &mut now, &mut BTreeSet::new()).await?;
        if now.follows != edges {
            let at = now_ms();
            for finding in mine.found.values_mut().flatten() {
                finding.detail = format!(
                    "{} (the follows changed while it was checked, at {at})",
                    finding.detail
                );
            }
        }
    }
    tally.absorb(mine, settings.keep);
    Ok(())
}

async fn counters(
    store: &Store,
    settings: &Settings,
    user: &User,
    sources: &Sources,
    tally: &mut Tally,
) -> StoreResult<()> {
    let id = user.id.as_str();
    let (_, following, posts) = sources.counters(id);
    // Followers a page at a time, each page its own slice of the sources.
    let mut followers = 0;
    let mut after: Option<String> = None;
    loop {
        let page = store.graph.followers(id, after.as_deref(), PAGE).await?;
        let mut edges = Sources::default();
        for follower in &page {
            let edge = FollowSource {
                created: Window::at(0),
            };
            edges
                .follows
                .insert((follower.clone(), id.to_owned()), edge);
        }
        followers += edges.counters(id).0;
        if page.len() < PAGE {
            break;
        }
        after = page.last().cloned();
    }
    tally.checked(Kind::Counters, 1);
    let counts = |u: &User| (u.followers_count, u.following_count, u.posts_count);
    if counts(user) != (followers, following, posts)
        && let Some(now) = store.users.user(id).await?
        && counts(&now) != counts(user)
    {
        // The counters moved while the sources were counted: a write in flight (on
        // MongoDB an edge's `$inc` trails its insert), not a finding of this pass.
        return Ok(());
    }
    let stored = [
        ("followers_count", user.followers_count, followers),
        ("following_count", user.following_count, following),
        ("posts_count", user.posts_count, posts),
    ];
    for (name, held, expected) in stored {
        if held != expected {
            let detail = format!("{id}: {name} is {held}, the sources say {expected}");
            tally.found(
                Finding::of_user(Kind::Counters, id, detail, Fix::Rebuild),
                settings.keep,
            );
        }
    }
    Ok(())
}

async fn activity(
    store: &Store,
    settings: &Settings,
    id: &str,
    sources: &Sources,
    tally: &mut Tally,
) -> StoreResult<()> {
    let mut log = Vec::new();
    let mut timed = Vec::new();
    let mut skip = 0;
    loop {
        let page = store.activity.activities(id, skip, PAGE as u64).await?;
        for entry in &page.items {
            log.push((entry.kind, entry.reference.clone()));
            // A follow undone and made again within one clock tick (MongoDB's change
            // times can be whole seconds) leaves two entries alike but for their
            // sequence numbers: those tell a repeated entry from a repeated action.
            timed.push((
                (entry.kind, entry.reference.clone(), entry.seq),
                entry.ts_ms,
            ));
        }
        skip += page.items.len() as u64;
        if page.items.len() < PAGE || skip >= page.total {
            break;
        }
    }
    tally.checked(Kind::Activity, 1);
    let keep = settings.keep;
    if let Some(fault) = derived::newest_first_once(&timed) {
        let detail = format!("{id}'s activity log: {fault}");
        tally.found(
            Finding::of_user(Kind::Activity, id, detail, Fix::Rebuild),
            keep,
        );
    }
    for (kind, reference) in derived::activity_missing(sources, id, &log) {
        let detail = format!("{id}'s activity log has no {} {reference}", kind.as_str());
        tally.found(
            Finding::of_user(Kind::Activity, id, detail, Fix::Rebuild),
            keep,
        );
    }
    Ok(())
}

async fn timeline(
    store: &Store,
    settings: &Settings,
    id: &str,
    mut sources: Sources,
    merged: &BTreeSet<String>,
    tally: &mut Tally,
) -> StoreResult<()> {
    let rules = settings.rules;
    let kind = match rules.strategy {
        FeedStrategy::FanoutOnRead => return Ok(()),
        FeedStrategy::Cache | FeedStrategy::Hybrid => None,
        FeedStrategy::TimedBuckets => Some(BucketKind::Timed),
        FeedStrategy::SizedBuckets => Some(BucketKind::Sized),
    };
    // The entries as the timeline holds them, by post id.
    let mut entries: BTreeMap<PostId, TimelineEntry> = BTreeMap::new();
    let mut ready = true;
    match kind {
        None => {
            let Some(cache) = store.timelines.cache(id).await? else {
                return Ok(());
            };
            ready = cache.ready;
            entries.extend(cache.entries.into_iter().map(|e| (e.id, e)));
        }
        Some(kind) => {
            let mut skip = 0;
            loop {
                let buckets = store
                    .timelines
                    .buckets(kind, id, None, skip, BUCKETS_PER_READ, ENTRIES_PER_BUCKET)
                    .await?;
                skip += buckets.len();
                let last = buckets.len() < BUCKETS_PER_READ;
                for bucket in buckets {
                    entries.extend(bucket.entries.into_iter().map(|e| (e.id, e)));
                }
                if last {
                    break;
                }
            }
        }
    }
    tally.checked(Kind::Timelines, 1);
    // A cache covers from its oldest entry up, a post's or a repost's.
    let oldest = entries.keys().next().copied();
    let reposts = super::reposts::check(store, settings, id, kind, &mut entries, tally).await?;
    let ids: Vec<PostId> = entries.keys().copied().collect();
    add_posts(&mut sources, &existing(store, &ids).await?);
    // The posts the bounds must name: from the oldest entry up for a cache; all of them
    // for buckets, whose lower bound reaches back to each follow.
    let (floor, cap) = match kind {
        None => (ids.first().copied(), usize::MAX),
        Some(_) => (None, LOWER_BOUND_POSTS),
    };
    let lower_checked = match (kind, floor) {
        (None, None) => true,
        _ => match home(store, id, floor, cap).await? {
            Some(posts) => {
                add_posts(&mut sources, &posts);
                true
            }
            None => false,
        },
    };
    let bounds: TimelineBounds = sources.timeline(id, rules);
    let held: BTreeSet<PostId> = ids.iter().copied().collect();
    let authors: BTreeMap<PostId, &str> = sources
        .posts
        .iter()
        .map(|(p, s)| (*p, s.author.as_str()))
        .collect();
    let mut faults = match kind {
        None => derived::cache_faults(&bounds, &held, ready, |p| {
            authors.get(p).is_some_and(|a| merged.contains(*a))
        }),
        Some(_) => derived::bucket_faults(&bounds, &held),
    };
    if !lower_checked {
        faults.missing.clear();
    }
    // No entry may stand whose author is in a block with the reader, whatever the
    // bounds admit: the block removed the follows both ways, so such an entry is stale.
    let hidden = store.relations.hidden(id, now_ms()).await?;
    let blocked: BTreeSet<PostId> = entries
        .values()
        .filter(|e| e.author != id && hidden.blocks(&e.author))
        .map(|e| e.id)
        .collect();
    faults.extra.retain(|p| !blocked.contains(p));
    faults.extra.extend(blocked.iter().copied());
    let why = Why { blocked: &blocked };
    report_faults(
        id, kind, &entries, &sources, rules, faults, why, settings, tally,
    );
    // The reposts it must hold: a ready cache's from its oldest entry up, buckets' all.
    if kind.is_some() || (ready && oldest.is_some()) {
        let held = super::reposts::Held {
            kind,
            floor: oldest.filter(|_| kind.is_none()),
            reposts: &reposts,
            merged,
            hidden: &hidden,
        };
        super::reposts::missing(store, settings, id, held, &mut sources, tally).await?;
    }
    super::entries::check(store, settings, id, kind, &entries, &mut sources, tally).await
}

/// What a finding calls a timeline of `kind` (`None`: a cache).
pub(super) fn what(kind: Option<BucketKind>) -> &'static str {
    match kind {
        None => "cache",
        Some(BucketKind::Timed) => "timed buckets",
        Some(BucketKind::Sized) => "sized buckets",
    }
}

/// What an extra entry is known to be, beyond the bounds.
struct Why<'a> {
    /// Entries whose author is in a block with the reader.
    blocked: &'a BTreeSet<PostId>,
}

#[allow(clippy::too_many_arguments)]
fn report_faults(
    id: &str,
    kind: Option<BucketKind>,
    entries: &BTreeMap<PostId, TimelineEntry>,
    sources: &Sources,
    rules: TimelineRules,
    faults: derived::TimelineFaults,
    known: Why<'_>,
    settings: &Settings,
    tally: &mut Tally,
) {
    let what = what(kind);
    let shape = match derived::shape(rules.strategy) {
        Shape::Exact => "exact",
        Shape::Sandwich => "lower bound",
    };
    for post in faults.extra {
        let author = entries.get(&post).map_or("?", |e| e.author.as_str());
        let (why, fix) = if known.blocked.contains(&post) {
            (
                "an author in a block with the reader",
                Fix::SyncEdge(id.to_owned(), author.to_owned()),
            )
        } else if !sources.posts.contains_key(&post) {
            ("a deleted post", Fix::Retract(post))
        } else {
            (
                "an author not followed",
                Fix::SyncEdge(id.to_owned(), author.to_owned()),
            )
        };
        let fix = if kind.is_none() {
            Fix::DropCache(id.to_owned())
        } else {
            fix
        };
        let detail = format!("{id}'s {what} holds {post} by {author}: {why}");
        tally.found(
            Finding::of_user(Kind::Timelines, id, detail, fix),
            settings.keep,
        );
    }
    for post in faults.missing {
        let author = sources.posts.get(&post).map_or("?", |p| p.author.as_str());
        let (detail, fix) = match kind {
            None => (
                format!("{id}'s cache misses {post} by {author} above its oldest entry"),
                Fix::DropCache(id.to_owned()),
            ),
            Some(_) => (
                format!("{id}'s {what} miss {post} by {author} ({shape})"),
                Fix::FanOut(post),
            ),
        };
        tally.found(
            Finding::of_user(Kind::Timelines, id, detail, fix),
            settings.keep,
        );
    }
}
