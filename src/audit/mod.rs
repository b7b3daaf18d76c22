//! `socialite audit`: every derived datum compared with what the sources imply, by the
//! one definition in [`crate::derived`] that the history checker also uses.
//!
//! - **Per user**, in id order, a page at a time (`users.rs`): the counters, the activity
//!   log, and the materialised timeline under the strategy's rules, every field of each
//!   entry held to its post and its author's profile (`entries.rs`). Each user's slice of
//!   the sources (their edges, posts, likes, and the posts their timeline names or must
//!   name) is read with bounded queries into a [`crate::derived::Sources`]; followers are
//!   counted a page at a time. Memory is bounded by one page of users and the largest
//!   single user's slice, never by the data set.
//!   Each user's notifications both ways (`notifications.rs`): those their own follows,
//!   likes and posts should have made (missing), and those stored for them whose cause
//!   no longer stands (extra); and their timeline holds no author in a block with them.
//! - **Once** (`store.rs`): every post in id order (its delivery marker, its
//!   `replies_count` against the posts answering it and its `reposts_count` against
//!   the reposts standing of it (`replies.rs`), and its tags
//!   summed into one count per tag), the markers of deleted posts, the tag totals, and
//!   the event log's order against the change feed.
//! - **The eventual window** (`window.rs`): beside a live server a discrepancy may be a
//!   change not applied yet. Each one found is checked again once every worker it
//!   depends on has applied every change committed before it was seen; one seen again,
//!   unchanged (for a user: with no follow or like of theirs changed meanwhile), is
//!   *wrong*; one that changed is checked again (three rounds at most);
//!   one whose workers do not get there in time is *pending*.
//! - **Name words** (`name_words.rs`): each user's entries of the display-name word
//!   index against the words of their name (in the per-user pass), and, once, every
//!   entry against the users that exist.
//! - **Repair** (`repair.rs`): the workers' own rebuilds, under their leases.

pub mod command;
mod entries;
mod events;
mod name_words;
mod notifications;
pub mod repair;
mod replies;
mod report;
mod reposts;
mod slice;
mod store;
mod users;
mod window;

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use crate::derived::TimelineRules;
use crate::domain::{FeedStrategy, PostId};
use crate::store::{Store, StoreResult};

pub use report::Report;
pub use window::Verdict;

/// What an audit compares.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Kind {
    Counters,
    Activity,
    Timelines,
    Deliveries,
    Tags,
    Events,
    Notifications,
    Replies,
    Reposts,
    TagIndex,
    NameWords,
}

impl Kind {
    pub const ALL: [Kind; 11] = [
        Kind::Counters,
        Kind::Activity,
        Kind::Timelines,
        Kind::Deliveries,
        Kind::Tags,
        Kind::Events,
        Kind::Notifications,
        Kind::Replies,
        Kind::Reposts,
        Kind::TagIndex,
        Kind::NameWords,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Counters => "counters",
            Kind::Activity => "activity",
            Kind::Timelines => "timelines",
            Kind::Deliveries => "deliveries",
            Kind::Tags => "tags",
            Kind::Events => "events",
            Kind::Notifications => "notifications",
            Kind::Replies => "replies",
            Kind::Reposts => "reposts",
            Kind::TagIndex => "tag_index",
            Kind::NameWords => "name_words",
        }
    }

    /// The workers whose progress decides whether a discrepancy of this kind may still
    /// be a change they have not applied.
    pub fn workers(self) -> &'static [&'static str] {
        match self {
            Kind::Counters => &["counters"],
            Kind::Activity => &["activity"],
            Kind::Timelines | Kind::Deliveries => &["timelines"],
            Kind::Tags => &["events", "aggregates"],
            Kind::Events => &["events"],
            Kind::Notifications => &["notifications"],
            // A reply's count moves with the reply itself (embedded: in its transaction;
            // MongoDB: an `$inc` right after), and a repost's likewise; on MongoDB the
            // counters worker settles what a writer that died before its `$inc` left.
            Kind::Replies | Kind::Reposts => &["counters"],
            // Written with the post itself (embedded: in its transaction; MongoDB: in
            // its document): nothing to wait for.
            Kind::TagIndex => &[],
            // Embedded: written in the name's transaction. MongoDB: right after the name,
            // and synced by the counters worker for every user change it applies.
            Kind::NameWords => &["counters"],
        }
    }
}

/// What a discrepancy is checked again as: one user, one post, or a whole pass.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Unit {
    User(String),
    Post(PostId),
    Tags,
    /// The tag index the tag timeline reads (`post_tags`; MongoDB's posts' `tags`).
    TagIndex,
    Events,
}

/// What would mend one discrepancy beyond its kind's rebuild.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Fix {
    /// The rebuild of the kind's worker is all it takes.
    Rebuild,
    /// Drop the user's cache: their next read builds it again from the sources.
    DropCache(String),
    /// Take a deleted post out of every timeline.
    Retract(PostId),
    /// Bring the user's timeline in line with the edge to this author.
    SyncEdge(String, String),
    /// Fan the post out again (idempotent).
    FanOut(PostId),
    /// Take the post out of every timeline and fan it out again: its entries made anew
    /// from the post and its author's profile.
    Redeliver(PostId),
    /// Write the tag index again from the posts' text.
    Reindex,
    /// Nothing derives this again (the event log is history).
    None,
}

/// One discrepancy: what, where, and how it differs.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Finding {
    pub kind: Kind,
    pub unit: Unit,
    pub detail: String,
    pub fix: Fix,
}

impl Finding {
    /// A discrepancy in one user's data.
    pub(crate) fn of_user(kind: Kind, user: &str, detail: String, fix: Fix) -> Finding {
        Finding {
            kind,
            unit: Unit::User(user.to_owned()),
            detail,
            fix,
        }
    }
}

/// How an audit runs.
#[derive(Debug, Clone)]
pub struct Settings {
    pub rules: TimelineRules,
    /// How long to wait for the workers to apply what a discrepancy may be waiting for.
    pub wait: Duration,
    /// Users checked at once.
    pub concurrency: usize,
    /// Discrepancies kept per kind to check again; more are counted, not checked again.
    pub keep: usize,
}

impl Settings {
    pub fn new(strategy: FeedStrategy, backfill_on_follow: u32) -> Settings {
        Settings {
            rules: TimelineRules {
                strategy,
                backfill_on_follow,
            },
            wait: Duration::from_secs(30),
            concurrency: 8,
            keep: 1000,
        }
    }
}

/// What the passes report as they go (for the progress bar).
pub trait Progress: Send + Sync {
    fn phase(&self, _name: &str, _total: u64) {}
    fn advance(&self, _n: u64) {}
}

impl Progress for () {}

/// Counts per kind, and the discrepancies found by a pass, the first `keep` of a kind.
#[derive(Debug, Default)]
pub(crate) struct Tally {
    pub checked: BTreeMap<Kind, u64>,
    pub found: BTreeMap<Kind, Vec<Finding>>,
    /// Found beyond `keep`, per kind: counted, not checked again.
    pub overflow: BTreeMap<Kind, u64>,
    /// Kinds this store does not keep (an event log that is off), with why.
    pub skipped: BTreeMap<Kind, String>,
}

impl Tally {
    pub fn checked(&mut self, kind: Kind, n: u64) {
        *self.checked.entry(kind).or_default() += n;
    }

    pub fn found(&mut self, finding: Finding, keep: usize) {
        let kept = self.found.entry(finding.kind).or_default();
        if kept.len() < keep {
            kept.push(finding);
        } else {
            *self.overflow.entry(finding.kind).or_default() += 1;
        }
    }

    fn absorb(&mut self, other: Tally, keep: usize) {
        for (kind, n) in other.checked {
            self.checked(kind, n);
        }
        for (kind, n) in other.overflow {
            *self.overflow.entry(kind).or_default() += n;
        }
        for finding in other.found.into_values().flatten() {
            self.found(finding, keep);
        }
        self.skipped.extend(other.skipped);
    }
}

/// Audits `store`: every pass, then the discrepancies checked again within the
/// eventual window (see the module's documentation).
pub async fn audit(
    store: &Store,
    settings: &Settings,
    progress: &dyn Progress,
) -> StoreResult<Report> {
    let started = Instant::now();
    let mut tally = users::pass(store, settings, progress).await?;
    let users = started.elapsed();
    tally.absorb(store::pass(store, settings, progress).await?, settings.keep);
    let whole = started.elapsed() - users;
    let candidates: BTreeSet<Finding> = tally.found.values().flatten().cloned().collect();
    progress.phase("settling", candidates.len() as u64);
    let verdict = window::settle(store, settings, candidates).await?;
    let mut report = Report::new(tally, verdict, started.elapsed());
    report.passes = [users, whole];
    Ok(report)
}

/// Checks one unit again, as the passes did.
pub(crate) async fn recheck(
    store: &Store,
    settings: &Settings,
    unit: &Unit,
) -> StoreResult<Vec<Finding>> {
    let mut tally = Tally::default();
    match unit {
        Unit::User(id) => {
            if let Some(user) = store.users.user(id).await? {
                users::check(store, settings, &user, &mut tally).await?;
            } else {
                name_words::check_missing(store, settings, id, &mut tally).await?;
            }
        }
        Unit::Post(id) => store::check_post(store, settings, *id, &mut tally).await?,
        Unit::Tags => store::tags(store, settings, &mut tally, &()).await?,
        Unit::TagIndex => store::tag_index(store, settings, &mut tally).await?,
        Unit::Events => events::events(store, settings, &mut tally).await?,
    }
    Ok(tally.found.into_values().flatten().collect())
}
