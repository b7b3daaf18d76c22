//! The eventual window. Beside a live server, derived data trails its sources by the
//! workers' lag, so a discrepancy may be a change not applied yet. The rule:
//!
//! 1. A discrepancy found at wall-clock time `t` (the end of the pass) may wait only
//!    for changes committed before `t`.
//! 2. The audit waits until every worker the discrepancy's kind depends on (see
//!    [`Kind::workers`]) has applied every such change: the first change after its
//!    committed position (on the change feed, or the event log for the aggregates) is
//!    younger than `t`, or there is none. Wall-clock times of changes are the writer's
//!    clock; processes on other machines are assumed within a second of this one, which
//!    the wait adds.
//! 3. It then checks the discrepancy's unit (a user, a post, the tags, the event log)
//!    again. Found again unchanged: *wrong*. Gone: it was in the window, and is not
//!    reported. Found changed (new writes touched the unit): checked again the same way,
//!    three rounds in all, and *pending* if it never settles.
//! 4. A user's finding is found again unchanged only if no follow or like of theirs
//!    changed after the previous check began, as the change feed shows. An edge undone
//!    and made again between two checks can leave the same posts missing under a new
//!    edge, or the same entries held under no edge: two moments of an eventual state
//!    that read alike. So a user's finding from the pass is first checked again with
//!    the feed's head marked, and called wrong no sooner than the second check again.
//! 5. When those workers do not get there within `--wait`, or no process holds their
//!    leases (an offline store whose workers stopped behind the feed), the discrepancy
//!    is *pending*: the workers apply those changes when they next run.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::{Finding, Kind, Settings, Unit, recheck};
use crate::domain::{ChangePosition, now_ms};
use crate::store::{ChangeFeed, Store, StoreError, StoreResult};
use crate::workers::aggregates::EventFeed;

const ROUNDS: usize = 3;
const POLL: Duration = Duration::from_millis(100);
/// Tolerated difference between this clock and a writer's.
const SKEW_MS: i64 = 1000;
/// Changes read per query of the feed.
const FEED_PAGE: usize = 1000;

/// Every discrepancy, judged.
#[derive(Debug, Default)]
pub struct Verdict {
    pub wrong: BTreeMap<Kind, Vec<Finding>>,
    pub pending: BTreeMap<Kind, Vec<Finding>>,
    /// Why the pending ones are pending.
    pub pending_why: Option<String>,
}

pub(super) async fn settle(
    store: &Store,
    settings: &Settings,
    mut candidates: BTreeSet<Finding>,
) -> StoreResult<Verdict> {
    let mut verdict = Verdict::default();
    // The feed's head before the previous round's checks; `None` before the first.
    let mut mark: Option<Option<ChangePosition>> = None;
    for _ in 0..ROUNDS {
        if candidates.is_empty() {
            return Ok(verdict);
        }
        let seen_at = now_ms();
        let kinds: BTreeSet<Kind> = candidates.iter().map(|f| f.kind).collect();
        if let Err(why) = wait_for_workers(store, &kinds, seen_at, settings.wait).await? {
            verdict.pending_why = Some(why);
            break;
        }
        let head = store.change_feed.head().await?;
        let units: BTreeSet<&Unit> = candidates.iter().map(|f| &f.unit).collect();
        let mut again = BTreeSet::new();
        for unit in units {
            again.extend(recheck(store, settings, unit).await?);
        }
        let touched = match &mark {
            Some(position) => touched_users(store, position.as_ref()).await?,
            None => None,
        };
        // `None`: any user may have been touched.
        let settled = |f: &Finding| match &f.unit {
            Unit::User(id) => touched.as_ref().is_some_and(|t| !t.contains(id)),
            _ => true,
        };
        let (same, changed): (BTreeSet<Finding>, BTreeSet<Finding>) = again
            .into_iter()
            .partition(|f| candidates.contains(f) && settled(f));
        mark = Some(head);
        for finding in same {
            verdict.wrong.entry(finding.kind).or_default().push(finding);
        }
        candidates = changed;
    }
    for finding in candidates {
        verdict
            .pending
            .entry(finding.kind)
            .or_default()
            .push(finding);
    }
    Ok(verdict)
}

/// The users whose follows or likes changed after `mark`, up to now; `None` when the
/// feed no longer holds what followed `mark`.
async fn touched_users(
    store: &Store,
    mark: Option<&ChangePosition>,
) -> StoreResult<Option<BTreeSet<String>>> {
    let until = now_ms();
    let mut users = BTreeSet::new();
    let mut after = mark.cloned();
    loop {
        let page = match store.change_feed.changes(after.as_ref(), FEED_PAGE).await {
            Ok(page) => page,
            Err(StoreError::HistoryLost(_) | StoreError::NoPosition(_)) => return Ok(None),
            Err(error) => return Err(error),
        };
        for change in &page {
            if matches!(change.collection.as_str(), "follows" | "likes")
                && let Some((user, _)) = change.key.split_once('/')
            {
                users.insert(user.to_owned());
            }
        }
        // Changes after `until` came after the checks this decides on.
        match page.last() {
            Some(last) if last.at_ms <= until => after = Some(last.position.clone()),
            _ => return Ok(Some(users)),
        }
    }
}

/// `Ok(Ok(()))` once the workers of `kinds` applied every change committed before
/// `seen_at`; `Ok(Err(why))` when they do not within `wait`.
async fn wait_for_workers(
    store: &Store,
    kinds: &BTreeSet<Kind>,
    seen_at: i64,
    wait: Duration,
) -> StoreResult<Result<(), String>> {
    let mut names: Vec<&str> = kinds
        .iter()
        .flat_map(|k| k.workers().iter().copied())
        .collect();
    names.sort_unstable();
    names.dedup();
    let deadline = Instant::now() + wait;
    let events: Arc<dyn ChangeFeed> = Arc::new(EventFeed::new(store.events.clone()));
    loop {
        let leases = store.leases.leases().await?;
        let mut behind = Vec::new();
        let mut alive = false;
        for name in &names {
            let lease = leases.iter().find(|l| l.name == *name);
            alive |= lease.is_some_and(|l| l.holder.is_some() && l.expires_at_ms > now_ms());
            let feed = match *name {
                "aggregates" => &events,
                _ => &store.change_feed,
            };
            let position = lease.and_then(|l| l.position.as_ref());
            let next = match feed.changes(position, 1).await {
                Ok(next) => next,
                Err(StoreError::HistoryLost(_) | StoreError::NoPosition(_)) => {
                    behind.push(*name);
                    continue;
                }
                Err(error) => return Err(error),
            };
            if next.first().is_some_and(|c| c.at_ms <= seen_at + SKEW_MS) {
                behind.push(*name);
            }
        }
        if behind.is_empty() {
            return Ok(Ok(()));
        }
        if !alive {
            return Ok(Err(format!(
                "the {} worker(s) have changes to apply and no process runs them",
                behind.join(", ")
            )));
        }
        if Instant::now() >= deadline {
            return Ok(Err(format!(
                "the {} worker(s) did not apply the changes before the discrepancy within {:?}",
                behind.join(", "),
                wait
            )));
        }
        tokio::time::sleep(POLL).await;
    }
}
