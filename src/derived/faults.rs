//! How a stored slice of derived data can be wrong against what the sources imply: the
//! faults of a timeline slice against its bounds, activity entries missing, and order
//! checks. Shared by the timeline oracle and the audit.

use std::collections::BTreeSet;

use super::{Sources, TimelineBounds};
use crate::domain::{ActivityType, PostId};

/// What is wrong with a stored slice of a timeline against its [`TimelineBounds`]:
/// entries outside `upper` (a deleted post, an author not followed), and posts of
/// `lower` the slice must hold but does not. Both newest first.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TimelineFaults {
    pub extra: Vec<PostId>,
    pub missing: Vec<PostId>,
}

impl TimelineFaults {
    pub fn is_empty(&self) -> bool {
        self.extra.is_empty() && self.missing.is_empty()
    }
}

/// A materialised timeline (buckets) against its bounds: nothing outside `upper`, and
/// everything of `lower`, where the bounds were computed from every post they name.
pub fn bucket_faults(bounds: &TimelineBounds, entries: &BTreeSet<PostId>) -> TimelineFaults {
    let upper: BTreeSet<&PostId> = bounds.upper.iter().collect();
    TimelineFaults {
        extra: entries
            .iter()
            .rev()
            .filter(|id| !upper.contains(id))
            .copied()
            .collect(),
        missing: bounds
            .lower
            .iter()
            .filter(|id| !entries.contains(id))
            .copied()
            .collect(),
    }
}

/// A capped cache against its owner's bounds (see `feed::cache`): every entry within
/// `upper`; and, once the cache is `ready`, the coverage invariant: every post of
/// `lower` at or above the cache's oldest entry is in it, except those `merged` at read
/// time instead (the hybrid strategy's celebrities). The bounds need only name the posts
/// at or above the oldest entry, and the entries' own posts.
pub fn cache_faults(
    bounds: &TimelineBounds,
    entries: &BTreeSet<PostId>,
    ready: bool,
    merged: impl Fn(&PostId) -> bool,
) -> TimelineFaults {
    let upper: BTreeSet<&PostId> = bounds.upper.iter().collect();
    let extra = entries
        .iter()
        .rev()
        .filter(|id| !upper.contains(id))
        .copied()
        .collect();
    let missing = match (ready, entries.first()) {
        (true, Some(oldest)) => bounds
            .lower
            .iter()
            .filter(|id| *id >= oldest && !entries.contains(id) && !merged(id))
            .copied()
            .collect(),
        _ => Vec::new(),
    };
    TimelineFaults { extra, missing }
}

/// The entries of `user`'s activity log that a log kept from the change feed must hold:
/// everything a rebuild from `self` would (see [`Sources::activity_from_sources`]). A
/// kept log may hold more (deleted posts, undone follows and likes stay in the history),
/// so only what is missing is a fault.
pub fn activity_missing(
    sources: &Sources,
    user: &str,
    log: &[(ActivityType, String)],
) -> Vec<(ActivityType, String)> {
    let held: BTreeSet<(ActivityType, &str)> = log.iter().map(|(t, r)| (*t, r.as_str())).collect();
    sources
        .activity_from_sources(user)
        .into_iter()
        .filter(|(t, r)| !held.contains(&(*t, r.as_str())))
        .collect()
}

/// Checks a log that must be newest first: `(key, time)` pairs in the order served.
/// Returns what is wrong, if anything. Two entries of one key at one time may both be
/// right where times are coarse (a follow, an unfollow and a follow again within one
/// second of MongoDB's change times); counts against the history tell those apart.
pub fn newest_first<K: std::fmt::Debug>(entries: &[(K, i64)]) -> Option<String> {
    entries
        .windows(2)
        .find(|w| w[0].1 < w[1].1)
        .map(|w| format!("not newest first: {:?} before {:?}", w[0], w[1]))
}

/// Checks a log that must be newest first with each entry once: `(key, time)` pairs in
/// the order served. Returns what is wrong, if anything.
pub fn newest_first_once<K: Ord + std::fmt::Debug>(entries: &[(K, i64)]) -> Option<String> {
    if let Some(fault) = newest_first(entries) {
        return Some(fault);
    }
    let mut seen = BTreeSet::new();
    entries
        .iter()
        .find(|e| !seen.insert((&e.0, e.1)))
        .map(|e| format!("served twice: {e:?}"))
}
