//! The repost entries of one timeline: each one held against its repost (it must
//! stand, be the owner's or a followee's, and carry the repost's original), and the
//! reposts the timeline must hold and lacks. Which reposts those are is
//! [`Sources::reposts_required`]'s to say (see docs/timelines.md, "Reposts"): the ones its
//! reads surely serve, so a repost seen once drops (the original itself in the
//! timeline, an older repost of it by the owner or a followee) or one hidden from the
//! owner is never required, though a timeline holds it too; under the bucket strategies
//! only a repost surely delivered (the owner's, or made after the follow that carries
//! it) is. The repost entries are taken out of the comparison of posts with what the
//! sources imply.
//!
//! A cache must hold them from its oldest entry (a post's or a repost's) up, as it must
//! posts (ARCHITECTURE.md, "a cache covers exactly the interval from its oldest entry
//! upward"), less those of reposters whose edge is flagged merged (`hybrid` merges them
//! at read time); buckets, all of them. The slice of the sources it takes: the standing
//! reposts by the owner and their followees in that interval (`home_reposts`, paged),
//! their originals (one batched read), and, for a cache, the older reposts of those
//! originals by the same accounts below the interval (one `reposts_of`), which seen once
//! weighs; and who of the reposters and original authors is hidden from the owner.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use super::slice::{PAGE, add_posts, existing};
use super::{Finding, Fix, Kind, Settings, Tally, Unit};
use crate::derived::{Sources, Window};
use crate::domain::relations::Hidden;
use crate::domain::{BucketKind, PostId, Repost, TimelineEntry};
use crate::store::{Store, StoreResult};

/// Buckets: past this many standing reposts by the owner and their followees, which
/// reposts the buckets must hold is not checked (what they hold always is).
const REQUIRED_REPOSTS_MAX: usize = 100_000;

/// Takes the repost entries out of `entries` and checks them; what is left are posts.
/// Returns the ids of the repost entries it took out.
pub(super) async fn check(
    store: &Store,
    settings: &Settings,
    owner: &str,
    kind: Option<BucketKind>,
    entries: &mut BTreeMap<PostId, TimelineEntry>,
    tally: &mut Tally,
) -> StoreResult<BTreeSet<PostId>> {
    let reposts: Vec<TimelineEntry> = entries
        .values()
        .filter(|e| e.is_repost())
        .cloned()
        .collect();
    if reposts.is_empty() {
        return Ok(BTreeSet::new());
    }
    entries.retain(|_, e| !e.is_repost());
    let ids: Vec<PostId> = reposts.iter().map(|e| e.id).collect();
    let standing: HashMap<PostId, _> = store
        .reposts
        .reposts_by_ids(&ids)
        .await?
        .into_iter()
        .map(|r| (r.id, r))
        .collect();
    let mut reposters: Vec<String> = reposts.iter().map(|e| e.author.clone()).collect();
    reposters.sort_unstable();
    reposters.dedup();
    let followed: HashMap<String, bool> = store
        .users
        .authors(owner, &reposters)
        .await?
        .into_iter()
        .map(|v| (v.id, v.followed))
        .collect();
    let what = super::users::what(kind);
    for entry in &reposts {
        let (fault, fix) = match standing.get(&entry.id) {
            None => (
                "names a repost that no longer stands",
                Fix::Retract(entry.id),
            ),
            Some(repost)
                if repost.user != entry.author
                    || Some(&repost.post) != entry.repost_of.as_ref() =>
            {
                (
                    "differs from its repost's reposter or original",
                    match kind {
                        None => Fix::DropCache(owner.to_owned()),
                        Some(_) => Fix::None,
                    },
                )
            }
            Some(_)
                if entry.author != owner
                    && !followed.get(&entry.author).copied().unwrap_or(false) =>
            {
                (
                    "is by an account the owner does not follow",
                    match kind {
                        None => Fix::DropCache(owner.to_owned()),
                        Some(_) => Fix::SyncEdge(owner.to_owned(), entry.author.clone()),
                    },
                )
            }
            Some(_) => continue,
        };
        let detail = format!(
            "{owner}'s {what} repost entry {} by {} {fault}",
            entry.id, entry.author
        );
        let finding = Finding {
            kind: Kind::Timelines,
            unit: Unit::User(owner.to_owned()),
            detail,
            fix,
        };
        tally.found(finding, settings.keep);
    }
    Ok(reposts.iter().map(|e| e.id).collect())
}

/// What a timeline's check of its missing reposts is given.
pub(super) struct Held<'a> {
    /// `None`: a cache; else buckets of this kind.
    pub kind: Option<BucketKind>,
    /// A cache's oldest entry, a post's or a repost's (`None` for buckets): the bottom
    /// of the interval it must cover.
    pub floor: Option<PostId>,
    /// The repost entries the timeline holds.
    pub reposts: &'a BTreeSet<PostId>,
    /// The followees whose edges are flagged merged.
    pub merged: &'a BTreeSet<String>,
    /// What the owner is hidden now.
    pub hidden: &'a Hidden,
}

/// Names the reposts `owner`'s timeline must hold and does not (see the module), a ready
/// cache's from its oldest entry up, buckets' all; `sources` is the owner's slice (their
/// edges, with when each ran), which this fills with the reposts it weighs.
pub(super) async fn missing(
    store: &Store,
    settings: &Settings,
    owner: &str,
    held: Held<'_>,
    sources: &mut Sources,
    tally: &mut Tally,
) -> StoreResult<()> {
    let cap = match held.kind {
        None => usize::MAX,
        Some(_) => REQUIRED_REPOSTS_MAX,
    };
    let Some(reposts) = home_reposts(store, owner, held.floor, cap).await? else {
        return Ok(());
    };
    if reposts.is_empty() {
        return Ok(());
    }
    let mut originals: Vec<PostId> = reposts.iter().map(|r| r.post.post).collect();
    originals.sort_unstable();
    originals.dedup();
    add_posts(sources, &existing(store, &originals).await?);
    let mut older = Vec::new();
    if let Some(floor) = held.floor {
        let mut reposters: Vec<String> = sources
            .followees(owner)
            .map(|(f, _)| f.to_owned())
            .collect();
        reposters.push(owner.to_owned());
        older = store
            .reposts
            .reposts_of(&originals, &reposters, floor)
            .await?;
    }
    for repost in reposts.into_iter().chain(older) {
        let made = Window::at(repost.created_at_ms());
        sources.repost_windows.insert(repost.id, made);
        sources.reposts.insert(repost.id, repost);
    }
    // Who is hidden from the owner, as far as these reposts go: a block and a mute
    // hide alike on reads.
    let concerned: BTreeSet<&str> = sources
        .reposts
        .values()
        .flat_map(|r| [r.user.as_str(), r.post.author.as_str()])
        .filter(|u| held.hidden.hides(u))
        .collect();
    let hides: Vec<(String, String)> = concerned
        .into_iter()
        .map(|u| (owner.to_owned(), u.to_owned()))
        .collect();
    sources.mutes.extend(hides);
    let what = super::users::what(held.kind);
    for id in sources.reposts_required(owner, settings.rules) {
        let repost = &sources.reposts[&id];
        if held.reposts.contains(&id)
            || held.floor.is_some_and(|f| id < f)
            || held.merged.contains(&repost.user)
        {
            continue;
        }
        let (place, fix) = match held.kind {
            None => ("above its oldest entry", Fix::DropCache(owner.to_owned())),
            Some(_) => ("(lower bound)", Fix::FanOut(id)),
        };
        let detail = format!(
            "{owner}'s {what} misses repost {id} by {} of {} by {} {place}",
            repost.user, repost.post.post, repost.post.author
        );
        let finding = Finding {
            kind: Kind::Timelines,
            unit: Unit::User(owner.to_owned()),
            detail,
            fix,
        };
        tally.found(finding, settings.keep);
    }
    Ok(())
}

/// The standing reposts by `owner` and everyone they follow, newest first, down to
/// `floor` (inclusive) or `cap` reposts; `None` past the cap.
async fn home_reposts(
    store: &Store,
    owner: &str,
    floor: Option<PostId>,
    cap: usize,
) -> StoreResult<Option<Vec<Repost>>> {
    let mut reposts: Vec<Repost> = Vec::new();
    let mut before = None;
    loop {
        let page = store.reposts.home_reposts(owner, before, PAGE).await?;
        let full = page.len() == PAGE;
        before = page.last().map(|r| r.id);
        reposts.extend(page.into_iter().filter(|r| floor.is_none_or(|f| r.id >= f)));
        if reposts.len() > cap {
            return Ok(None);
        }
        if !full || before.zip(floor).is_some_and(|(b, f)| b < f) {
            return Ok(Some(reposts));
        }
    }
}
