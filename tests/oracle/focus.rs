//! Per-seed focus: most seeds draw from the general mix, the others bias the topology and
//! the operations towards one class of edge, so that a short budget still reaches it:
//! late pushes below a cache's oldest entry, an unfollow racing a follow of one pair, a
//! token used while it is revoked, a recount racing a follow, and hybrid authors crossing
//! their threshold both ways. The operations that stage those races are in
//! `focus/races.rs`.

mod races;

use rand::RngExt;
use socialite::domain::FeedStrategy;

use super::cluster::Topology;
use super::world::Rng;
use crate::common::Kind;

pub use races::{flip_pair, follow_storm, hide_race, late_push, repost_race};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Focus {
    General,
    /// A cache built and trimmed below its size before a worker's late push of an older
    /// post (`cache` strategy, several processes, delayed wake-ups).
    LatePush,
    /// An unfollow and a follow of one standing pair at once through two processes, with
    /// jitter between each edge write and its timeline upkeep.
    Flip,
    /// Tokens used many times while they are revoked, with jitter between a token's
    /// lookup and its caching.
    Token,
    /// Quick follows of one user and profile reads, with jitter in recounts.
    Counters,
    /// `hybrid` with a threshold of 2 to 4, authors crossing it both ways.
    Hybrid,
    /// Blocks and mutes (some timed) of authors a reader's page just showed, around
    /// kept pages and on every process, with the general mix beside them.
    Hide,
}

impl Focus {
    /// Seeds 1 to 5 (the fixed ones) each take one focus; other seeds are general half
    /// the time. `SOCIALITE_ORACLE_FOCUS` (a focus's name, as `Debug` prints it, in any
    /// case) gives every seed that one, to hunt one class of edge.
    pub fn of(seed: u64) -> Focus {
        const FOCI: [Focus; 6] = [
            Focus::LatePush,
            Focus::Flip,
            Focus::Token,
            Focus::Counters,
            Focus::Hybrid,
            Focus::Hide,
        ];
        if let Ok(name) = std::env::var("SOCIALITE_ORACLE_FOCUS") {
            let all = [Focus::General].into_iter().chain(FOCI);
            return all
                .into_iter()
                .find(|f| format!("{f:?}").eq_ignore_ascii_case(name.trim()))
                .unwrap_or_else(|| panic!("SOCIALITE_ORACLE_FOCUS={name}: no such focus"));
        }
        match seed {
            1..=6 => FOCI[seed as usize - 1],
            _ if (seed >> 7).is_multiple_of(2) => Focus::General,
            _ => FOCI[(seed % 6) as usize],
        }
    }

    /// Bends the general topology `t` towards this focus.
    pub fn shape(self, t: &mut Topology, rng: &mut Rng) {
        match self {
            Focus::General => {}
            Focus::LatePush => {
                t.strategy = FeedStrategy::Cache;
                t.processes = rng.random_range(2..=3);
                t.inline_fanout_max = rng.random_range(1..=2);
                t.cache_size = rng.random_range(3..=4);
                t.wake_delay_ms = rng.random_range(400..=700);
                t.users = 40;
                t.kills = false;
                t.faults = None;
                t.trim = false;
            }
            Focus::Flip => {
                // Bucket strategies hold every backfilled post; a cache only those
                // above its bottom.
                let strategies = [FeedStrategy::SizedBuckets, FeedStrategy::TimedBuckets];
                t.strategy = strategies[rng.random_range(0..strategies.len())];
                t.processes = rng.random_range(2..=3);
                // Short stalls at a third of the points: an unfollow held between its
                // edge write and its upkeep while the follow runs through.
                t.faults = Some((0.0, 0.35));
                t.stall_ms = Some(rng.random_range(40..=80));
                t.jitter_ms = rng.random_range(0..=5);
                t.kills = false;
                t.trim = false;
            }
            Focus::Token => {
                t.processes = rng.random_range(1..=2);
                t.jitter_ms = rng.random_range(5..=15);
                t.kills = false;
                t.faults = None;
                t.trim = false;
            }
            Focus::Counters => {
                t.processes = 1;
                t.jitter_ms = rng.random_range(20..=50);
                t.users = rng.random_range(8..=12);
                t.kills = false;
                t.faults = None;
                t.trim = false;
            }
            Focus::Hybrid => {
                t.strategy = FeedStrategy::Hybrid;
                t.users = rng.random_range(6..=8);
            }
            Focus::Hide => {
                // The strategies that keep pages (on the embedded store), several
                // processes: a kept page on one, a block or mute through it, a page on
                // another. The general mix has blocks and mutes under every strategy.
                // `cache` three times in four: `hybrid`'s pages are kept only while no
                // celebrity is merged in, rare among this few users.
                let keeping = [FeedStrategy::Cache, FeedStrategy::Hybrid];
                t.strategy = keeping[usize::from(rng.random_bool(0.25))];
                // Only embedded content keeps pages.
                t.embed = true;
                t.processes = rng.random_range(2..=3);
                t.users = rng.random_range(6..=10);
            }
        }
        if t.strategy == FeedStrategy::Hybrid {
            t.hybrid_threshold = rng.random_range(2..=4);
        }
        if t.kind == Kind::Mongo && self == Focus::LatePush {
            // The stand-in is slower: room for the cache's build or backfill, and the
            // delete, before the worker's next step (a step every refresh + delay).
            t.wake_delay_ms += 1_200;
        }
    }
}
