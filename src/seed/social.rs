//! The social part of `socialite seed`'s data set: replies, blocks and mutes, each drawn
//! from a generator of its own seeded from the seed, so the follows and texts of a seed
//! are the ones it drew before these existed.
//!
//! - **Replies:** each post after the first answers an earlier one with probability
//!   [`REPLY_PER_MILLE`]‰; a third of those continue the author's own previous post (a
//!   self-thread, from the second round on), the rest answer one of the
//!   [`REPLY_WINDOW_ROUNDS`] rounds of posts before it.
//! - **Blocks:** each user blocks one other user, drawn uniformly, with probability
//!   [`BLOCK_PER_MILLE`]‰; the follows between the two, either way, are removed, as the
//!   API's block removes them.
//! - **Mutes:** each user mutes one other user with probability [`MUTE_PER_MILLE`]‰;
//!   half of the mutes are timed (1 hour to 30 days after they are made), and a quarter
//!   leave notifications on.

use rand::rngs::Xoshiro256PlusPlus;
use rand::{RngExt, SeedableRng};

use super::SeedArgs;

pub const REPLY_PER_MILLE: u32 = 30;
pub const REPLY_WINDOW_ROUNDS: usize = 4;
pub const BLOCK_PER_MILLE: u32 = 10;
pub const MUTE_PER_MILLE: u32 = 20;
const HOUR_MS: i64 = 3_600_000;

/// Salts of the generators, so that each draws its own stream from the one seed.
const REPLIES_SALT: u64 = 0x7265_706c_6965_7301;
const RELATIONS_SALT: u64 = 0x626c_6f63_6b73_0002;

/// A mute of the plan.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SeedMute {
    pub user: usize,
    pub other: usize,
    pub notifications: bool,
    /// How long after it is made the mute ends; `None`: for ever.
    pub lasts_ms: Option<i64>,
}

/// Which post each post answers, drawn post by post in plan order.
pub struct Replies {
    rng: Xoshiro256PlusPlus,
    users: usize,
}

impl Replies {
    pub fn new(args: &SeedArgs) -> Replies {
        Replies {
            rng: Xoshiro256PlusPlus::seed_from_u64(args.seed ^ REPLIES_SALT),
            users: args.users,
        }
    }

    /// The plan index of the post that post `k` answers, if it is a reply. Call for
    /// k = 0, 1, ... in turn.
    pub fn parent(&mut self, k: usize) -> Option<usize> {
        let roll = self.rng.random_range(0..1000);
        if k == 0 || roll >= REPLY_PER_MILLE {
            return None;
        }
        if self.rng.random_range(0..3) == 0 && k >= self.users {
            return Some(k - self.users);
        }
        let window = k.min(REPLY_WINDOW_ROUNDS * self.users.max(1));
        Some(k - 1 - self.rng.random_range(0..window))
    }
}

/// The blocks `(user, other)` and mutes of the data set.
pub fn relations(args: &SeedArgs) -> (Vec<(usize, usize)>, Vec<SeedMute>) {
    let (mut blocks, mut mutes) = (Vec::new(), Vec::new());
    if args.users < 2 {
        return (blocks, mutes);
    }
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(args.seed ^ RELATIONS_SALT);
    let other_than = |rng: &mut Xoshiro256PlusPlus, user: usize| {
        let other = rng.random_range(0..args.users - 1);
        if other >= user { other + 1 } else { other }
    };
    for user in 0..args.users {
        if rng.random_range(0..1000) < BLOCK_PER_MILLE {
            blocks.push((user, other_than(&mut rng, user)));
        }
        if rng.random_range(0..1000) < MUTE_PER_MILLE {
            let other = other_than(&mut rng, user);
            let notifications = rng.random_range(0..4) == 0;
            let lasts_ms = rng
                .random_bool(0.5)
                .then(|| HOUR_MS * rng.random_range(1..=720));
            mutes.push(SeedMute {
                user,
                other,
                notifications,
                lasts_ms,
            });
        }
    }
    (blocks, mutes)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(users: usize) -> SeedArgs {
        SeedArgs {
            users,
            max_follows: 10,
            posts_per_user: 5,
            seed: 11,
        }
    }

    #[test]
    fn replies_answer_earlier_posts_at_a_few_percent_with_self_threads() {
        let args = args(2000);
        let mut replies = Replies::new(&args);
        let posts = args.users * args.posts_per_user;
        let parents: Vec<(usize, usize)> = (0..posts)
            .filter_map(|k| replies.parent(k).map(|p| (k, p)))
            .collect();
        assert!(parents.iter().all(|(k, p)| p < k));
        let share = parents.len() as f64 / posts as f64;
        assert!((0.02..0.04).contains(&share), "{share}");
        let own = parents
            .iter()
            .filter(|(k, p)| k % args.users == p % args.users)
            .count();
        assert!(own * 5 > parents.len() && own * 2 < parents.len(), "{own}");
        let mut again = Replies::new(&args);
        let drawn: Vec<(usize, usize)> = (0..posts)
            .filter_map(|k| again.parent(k).map(|p| (k, p)))
            .collect();
        assert_eq!(drawn, parents, "the same seed draws the same replies");
    }

    #[test]
    fn a_few_users_block_or_mute_and_some_mutes_are_timed() {
        let (blocks, mutes) = relations(&args(10_000));
        assert!((50..150).contains(&blocks.len()), "{}", blocks.len());
        assert!((120..280).contains(&mutes.len()), "{}", mutes.len());
        assert!(blocks.iter().all(|(a, b)| a != b) && mutes.iter().all(|m| m.user != m.other));
        let timed = mutes.iter().filter(|m| m.lasts_ms.is_some()).count();
        assert!(
            timed * 4 > mutes.len() && timed * 4 < 3 * mutes.len(),
            "{timed}"
        );
        assert_eq!(relations(&args(10_000)), (blocks, mutes));
    }
}
