//! The passes over the whole store, each in key order a page at a time: every post (its
//! delivery marker, and its tags summed per tag), every standing repost without its
//! delivery marker, the markers of deleted posts and undone reposts, and the tag totals;
//! the event log against the change feed is in `events.rs`.

use std::collections::BTreeMap;

use super::events::events;
use super::{Finding, Fix, Kind, Progress, Settings, Tally, Unit};
use crate::derived::{PostSource, Sources, Window};
use crate::domain::{FeedStrategy, PostId};
use crate::store::{Store, StoreResult};

const PAGE: usize = 1000;
/// Users named in a finding about a deleted post still in timelines.
const HOLDERS_NAMED: usize = 3;

pub(super) async fn pass(
    store: &Store,
    settings: &Settings,
    progress: &dyn Progress,
) -> StoreResult<Tally> {
    let mut tally = Tally::default();
    let leases = store.leases.leases().await?;
    let has = |name: &str| leases.iter().any(|l| l.name == name);
    let deliveries = settings.rules.strategy != FeedStrategy::FanoutOnRead;
    let totals = walk_posts(store, settings, &mut tally, progress, deliveries, true).await?;
    if deliveries {
        undelivered_reposts(store, settings, &mut tally).await?;
        orphans(store, settings, &mut tally).await?;
    }
    compare_tag_index(store, settings, &totals, &mut tally).await?;
    super::name_words::orphans(store, settings, &mut tally).await?;
    if has("aggregates") {
        compare_tags(store, settings, totals, &mut tally).await?;
    } else {
        let why = "no aggregates worker has run on this store (the event log is off)";
        tally.skipped.insert(Kind::Tags, why.to_owned());
    }
    if has("events") {
        events(store, settings, &mut tally).await?;
    } else {
        let why = "no events worker has run on this store (the event log is off)";
        tally.skipped.insert(Kind::Events, why.to_owned());
    }
    Ok(tally)
}

fn post_finding(post: PostId, detail: String) -> Finding {
    Finding {
        kind: Kind::Deliveries,
        unit: Unit::Post(post),
        detail,
        fix: Fix::Rebuild,
    }
}

/// Every post in id order: each one not marked delivered is a finding (when `deliveries`),
/// and its tags are summed into one total per tag, through the sources' own count.
async fn walk_posts(
    store: &Store,
    settings: &Settings,
    tally: &mut Tally,
    progress: &dyn Progress,
    deliveries: bool,
    replies: bool,
) -> StoreResult<BTreeMap<String, u64>> {
    progress.phase("posts", 0);
    let mut totals: BTreeMap<String, u64> = BTreeMap::new();
    let mut after = None;
    loop {
        let posts = store.audit.posts_after(after, PAGE).await?;
        let mut page = Sources::default();
        for post in &posts {
            let source = PostSource {
                author: post.author.clone(),
                text: post.text.clone(),
                created: Window::at(post.created_at_ms()),
                deleted: None,
                reply_to: post.reply_to.clone(),
            };
            page.posts.insert(post.id, source);
        }
        for (tag, n) in page.tag_totals() {
            *totals.entry(tag).or_default() += n;
        }
        if replies {
            super::replies::check(store, settings, &posts, tally).await?;
        }
        if deliveries {
            let ids: Vec<PostId> = posts.iter().map(|p| p.id).collect();
            let marked = store.deliveries.delivered(&ids).await?;
            for post in posts.iter().filter(|p| !marked.contains(&p.id)) {
                let detail = format!(
                    "post {} by {} is not marked delivered",
                    post.id, post.author
                );
                tally.found(post_finding(post.id, detail), settings.keep);
            }
            tally.checked(Kind::Deliveries, posts.len() as u64);
        }
        progress.advance(posts.len() as u64);
        if posts.len() < PAGE {
            return Ok(totals);
        }
        after = posts.last().map(|p| p.id);
    }
}

/// Every standing repost not marked delivered: a fan-out that never finished (the
/// timelines worker's rebuild fans out every one it finds).
async fn undelivered_reposts(
    store: &Store,
    settings: &Settings,
    tally: &mut Tally,
) -> StoreResult<()> {
    let mut after = None;
    loop {
        let page = store.deliveries.undelivered_reposts(after, PAGE).await?;
        let reposts = store.reposts.reposts_by_ids(&page).await?;
        for repost in &reposts {
            tally.found(undelivered_repost(repost), settings.keep);
        }
        tally.checked(Kind::Deliveries, page.len() as u64);
        if page.len() < PAGE {
            return Ok(());
        }
        after = page.last().copied();
    }
}

fn undelivered_repost(repost: &crate::domain::Repost) -> Finding {
    let detail = format!(
        "repost {} by {} of {} by {} is not marked delivered",
        repost.id, repost.user, repost.post.post, repost.post.author
    );
    post_finding(repost.id, detail)
}

/// A marker whose post is gone: the retraction must have taken the post out of every
/// timeline (markers of deleted posts stay until a rebuild unmarks them).
async fn orphans(store: &Store, settings: &Settings, tally: &mut Tally) -> StoreResult<()> {
    let mut after = None;
    loop {
        let page = store.deliveries.orphaned(after, PAGE).await?;
        for post in &page {
            orphan(store, settings, *post, tally).await?;
        }
        tally.checked(Kind::Deliveries, page.len() as u64);
        if page.len() < PAGE {
            return Ok(());
        }
        after = page.last().copied();
    }
}

async fn orphan(
    store: &Store,
    settings: &Settings,
    post: PostId,
    tally: &mut Tally,
) -> StoreResult<()> {
    let holders = store.audit.timelines_holding(post, HOLDERS_NAMED).await?;
    if !holders.is_empty() {
        let detail = format!(
            "deleted post {post} is still in the timelines of {}",
            holders.join(", ")
        );
        tally.found(post_finding(post, detail), settings.keep);
    }
    Ok(())
}

/// One post again: its `replies_count`, and its delivery (marked while it exists, out
/// of every timeline once gone) when timelines are materialised.
pub(super) async fn check_post(
    store: &Store,
    settings: &Settings,
    post: PostId,
    tally: &mut Tally,
) -> StoreResult<()> {
    let exists = store.content.post(post).await?;
    if let Some(p) = &exists {
        super::replies::check(store, settings, std::slice::from_ref(p), tally).await?;
    }
    if settings.rules.strategy == FeedStrategy::FanoutOnRead {
        return Ok(());
    }
    let marked = !store.deliveries.delivered(&[post]).await?.is_empty();
    // A post's unit may name a repost (reposts' ids are in the posts' id space).
    let repost = match exists {
        None => store.reposts.reposts_by_ids(&[post]).await?.pop(),
        Some(_) => None,
    };
    match (exists, repost) {
        (Some(p), _) if !marked => {
            let detail = format!("post {} by {} is not marked delivered", p.id, p.author);
            tally.found(post_finding(post, detail), settings.keep);
        }
        (None, Some(r)) if !marked => tally.found(undelivered_repost(&r), settings.keep),
        (None, None) if marked => orphan(store, settings, post, tally).await?,
        _ => {}
    }
    Ok(())
}

/// The tag totals again, from a walk of every post.
pub(super) async fn tags(
    store: &Store,
    settings: &Settings,
    tally: &mut Tally,
    progress: &dyn Progress,
) -> StoreResult<()> {
    let totals = walk_posts(
        store,
        settings,
        &mut Tally::default(),
        progress,
        false,
        false,
    )
    .await?;
    compare_tags(store, settings, totals, tally).await
}

/// The tag index again, against a walk of every post.
pub(super) async fn tag_index(
    store: &Store,
    settings: &Settings,
    tally: &mut Tally,
) -> StoreResult<()> {
    let totals = walk_posts(store, settings, &mut Tally::default(), &(), false, false).await?;
    compare_tag_index(store, settings, &totals, tally).await
}

/// Each tag's posts in the tag index against the posts whose text has it (`expected`):
/// a post left out of the index is missing from its tag timeline, one left in it is
/// served there though its text has no such tag.
async fn compare_tag_index(
    store: &Store,
    settings: &Settings,
    expected: &BTreeMap<String, u64>,
    tally: &mut Tally,
) -> StoreResult<()> {
    let report = |tag: &str, held: u64, want: u64, tally: &mut Tally| {
        tally.checked(Kind::TagIndex, 1);
        if held != want {
            let finding = Finding {
                kind: Kind::TagIndex,
                unit: Unit::TagIndex,
                detail: format!(
                    "the tag index holds {held} posts under #{tag}, the posts' text {want}"
                ),
                fix: Fix::Reindex,
            };
            tally.found(finding, settings.keep);
        }
    };
    let mut seen: std::collections::BTreeSet<String> = std::collections::BTreeSet::new();
    let mut after: Option<String> = None;
    loop {
        let page = store.audit.tag_index_totals(after.as_deref(), PAGE).await?;
        for (tag, held) in &page {
            report(tag, *held, expected.get(tag).copied().unwrap_or(0), tally);
            seen.insert(tag.clone());
        }
        if page.len() < PAGE {
            break;
        }
        after = page.last().map(|(t, _)| t.clone());
    }
    for (tag, want) in expected.iter().filter(|(t, _)| !seen.contains(*t)) {
        report(tag, 0, *want, tally);
    }
    Ok(())
}

async fn compare_tags(
    store: &Store,
    settings: &Settings,
    mut expected: BTreeMap<String, u64>,
    tally: &mut Tally,
) -> StoreResult<()> {
    let report = |tag: &str, held: u64, want: u64, tally: &mut Tally| {
        tally.checked(Kind::Tags, 1);
        if held != want {
            let finding = Finding {
                kind: Kind::Tags,
                unit: Unit::Tags,
                detail: format!("#{tag} counts {held} posts, the sources say {want}"),
                fix: Fix::Rebuild,
            };
            tally.found(finding, settings.keep);
        }
    };
    let mut after: Option<String> = None;
    loop {
        let page = store.audit.tag_totals(after.as_deref(), PAGE).await?;
        for (tag, held) in &page {
            let want = expected.remove(tag).unwrap_or(0);
            report(tag, *held, want, tally);
        }
        if page.len() < PAGE {
            break;
        }
        after = page.last().map(|(t, _)| t.clone());
    }
    for (tag, want) in expected {
        report(&tag, 0, want, tally);
    }
    Ok(())
}
