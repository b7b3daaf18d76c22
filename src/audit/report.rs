//! What an audit found: per kind, how much was checked and what is wrong or pending, the
//! first few of each, and the exit status.

use std::collections::BTreeMap;
use std::fmt;
use std::time::Duration;

use super::window::Verdict;
use super::{Finding, Kind, Tally};

/// Discrepancies printed per kind.
pub const SHOWN: usize = 10;

#[derive(Debug)]
pub struct Report {
    pub checked: BTreeMap<Kind, u64>,
    pub wrong: BTreeMap<Kind, Vec<Finding>>,
    pub pending: BTreeMap<Kind, Vec<Finding>>,
    /// Found beyond what was kept per kind, not checked again.
    pub unverified: BTreeMap<Kind, u64>,
    pub pending_why: Option<String>,
    pub skipped: BTreeMap<Kind, String>,
    pub elapsed: Duration,
    /// How long the per-user pass and the whole-store passes took.
    pub passes: [Duration; 2],
}

impl Report {
    pub(super) fn new(tally: Tally, verdict: Verdict, elapsed: Duration) -> Report {
        Report {
            checked: tally.checked,
            wrong: verdict.wrong,
            pending: verdict.pending,
            unverified: tally.overflow,
            pending_why: verdict.pending_why,
            skipped: tally.skipped,
            elapsed,
            passes: Default::default(),
        }
    }

    fn count(map: &BTreeMap<Kind, Vec<Finding>>, kind: Kind) -> usize {
        map.get(&kind).map_or(0, Vec::len)
    }

    pub fn wrong_count(&self, kind: Kind) -> usize {
        Self::count(&self.wrong, kind)
    }

    pub fn pending_count(&self, kind: Kind) -> usize {
        Self::count(&self.pending, kind)
    }

    /// The kinds with a discrepancy that is wrong.
    pub fn wrong_kinds(&self) -> Vec<Kind> {
        Kind::ALL
            .into_iter()
            .filter(|k| self.wrong_count(*k) > 0)
            .collect()
    }

    /// Found beyond what was kept of `kind`, not checked again: they share the verdict of
    /// the ones checked, wrong when any of those was.
    fn unverified(&self, kind: Kind) -> (u64, u64) {
        let n = self.unverified.get(&kind).copied().unwrap_or(0);
        if self.wrong_count(kind) > 0 {
            (n, 0)
        } else {
            (0, n)
        }
    }

    pub fn clean(&self) -> bool {
        self.wrong_kinds().is_empty()
    }

    /// 0 clean (pending discrepancies allowed), 1 discrepancies.
    pub fn exit_code(&self) -> u8 {
        if self.clean() { 0 } else { 1 }
    }
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "{:<11} {:>12} {:>8} {:>8}",
            "kind", "checked", "wrong", "pending"
        )?;
        for kind in Kind::ALL {
            if let Some(why) = self.skipped.get(&kind) {
                writeln!(f, "{:<11} skipped: {why}", kind.as_str())?;
                continue;
            }
            let (wrong, pending) = self.unverified(kind);
            writeln!(
                f,
                "{:<11} {:>12} {:>8} {:>8}",
                kind.as_str(),
                self.checked.get(&kind).copied().unwrap_or(0),
                wrong + self.wrong_count(kind) as u64,
                pending + self.pending_count(kind) as u64
            )?;
        }
        for (label, map) in [("wrong", &self.wrong), ("pending", &self.pending)] {
            for (kind, findings) in map {
                writeln!(f, "\n{} {label} ({}):", kind.as_str(), findings.len())?;
                for finding in findings.iter().take(SHOWN) {
                    writeln!(f, "  {}", finding.detail)?;
                }
                if findings.len() > SHOWN {
                    writeln!(f, "  ... and {} more", findings.len() - SHOWN)?;
                }
            }
        }
        for (kind, n) in &self.unverified {
            let verdict = if self.wrong_count(*kind) > 0 {
                "wrong"
            } else {
                "pending"
            };
            writeln!(
                f,
                "\n{}: {n} more found, not checked again (counted as {verdict}, as those checked)",
                kind.as_str()
            )?;
        }
        if let Some(why) = &self.pending_why {
            writeln!(f, "\npending: {why}")?;
        }
        let verdict = if self.clean() {
            "clean"
        } else {
            "DISCREPANCIES"
        };
        write!(
            f,
            "\naudit {verdict} in {:.1} s (users {:.1} s, posts and logs {:.1} s)",
            self.elapsed.as_secs_f64(),
            self.passes[0].as_secs_f64(),
            self.passes[1].as_secs_f64()
        )
    }
}
