//! The repost entries of one timeline, each against its repost: it must stand, be the
//! owner's or a followee's, and carry the repost's original. Which reposts a timeline
//! must hold is `src/derived.rs`'s to say (see docs/timelines.md, "Reposts"); until it
//! says so, the audit checks the repost entries a timeline holds, and takes them out of
//! the comparison of posts with what the sources imply.

use std::collections::{BTreeMap, HashMap};

use super::{Finding, Fix, Kind, Settings, Tally, Unit};
use crate::domain::{BucketKind, PostId, TimelineEntry};
use crate::store::{Store, StoreResult};

/// Takes the repost entries out of `entries` and checks them; what is left are posts.
pub(super) async fn check(
    store: &Store,
    settings: &Settings,
    owner: &str,
    kind: Option<BucketKind>,
    entries: &mut BTreeMap<PostId, TimelineEntry>,
    tally: &mut Tally,
) -> StoreResult<()> {
    let reposts: Vec<TimelineEntry> = entries
        .values()
        .filter(|e| e.is_repost())
        .cloned()
        .collect();
    if reposts.is_empty() {
        return Ok(());
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
    Ok(())
}
