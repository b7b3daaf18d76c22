//! The data set's random draws: who follows whom (Zipf over the earlier ids) and each
//! post's text, from one seeded generator in one fixed order.

use std::collections::HashSet;

use rand::rngs::Xoshiro256PlusPlus;
use rand::{RngExt, SeedableRng};
use rand_distr::{Distribution, Zipf};

use super::{SeedArgs, ZIPF_THETA};

const ALPHABET: &[u8] = b"abcdefghijklmnopqrstuvwxyz ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";

/// The data set's random draws, in the one order that defines it: every user's follows
/// (`u1`, `u2`, ... in turn), then every post's text (round by round, every user in
/// turn). The bulk seeder draws as it writes; [`plan`] collects the same draws.
pub struct Draws {
    rng: Xoshiro256PlusPlus,
    how_many: Option<Zipf<f64>>,
    chosen: HashSet<usize>,
}

impl Draws {
    pub fn new(args: &SeedArgs) -> Draws {
        Draws {
            rng: Xoshiro256PlusPlus::seed_from_u64(args.seed),
            how_many: (args.max_follows > 0)
                .then(|| Zipf::new(args.max_follows as f64, ZIPF_THETA).expect("max_follows >= 1")),
            chosen: HashSet::new(),
        }
    }

    /// The users `follower` follows, ascending, into `out` (cleared first). Call for
    /// followers 1, 2, ... in turn, before any [`Draws::text`].
    pub fn follows_of(&mut self, follower: usize, out: &mut Vec<usize>) {
        out.clear();
        let Some(how_many) = &self.how_many else {
            return;
        };
        let wanted = (how_many.sample(&mut self.rng) as usize).min(follower);
        let whom = Zipf::new(follower as f64, ZIPF_THETA).expect("follower >= 1");
        self.chosen.clear();
        // Zipf favours a few ids, so bound the draws and fill up in id order.
        for _ in 0..wanted * 8 {
            if self.chosen.len() == wanted {
                break;
            }
            self.chosen.insert(whom.sample(&mut self.rng) as usize - 1);
        }
        let mut next = 0;
        while self.chosen.len() < wanted {
            self.chosen.insert(next);
            next += 1;
        }
        out.extend(self.chosen.iter().copied());
        out.sort_unstable();
    }

    /// The next post's text, 10 to 140 characters, appended to `out`.
    pub fn text(&mut self, out: &mut String) {
        let len = self.rng.random_range(10..=140);
        for _ in 0..len {
            out.push(ALPHABET[self.rng.random_range(0..ALPHABET.len())] as char);
        }
    }
}
