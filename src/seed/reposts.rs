//! The reposts of `socialite seed`'s data set, drawn from a generator of their own
//! seeded from the seed, so a seed's follows, texts, replies, blocks and mutes are the
//! ones it drew before reposts existed.
//!
//! Reposts are made by followers of the post's author, so popular authors (Zipf's low
//! ids) get most of them: every follow, in plan order (follower by follower, each one's
//! followees ascending), reposts one of its followee's posts (a round drawn uniformly)
//! with the probability that makes reposts number about [`REPOST_PER_MILLE`]‰ of the
//! posts, given the mean of the follows drawn per user. A follow between two users in a
//! block (either way) reposts nothing: the block removes the follow, and the API refuses
//! a repost of a post whose author blocks the reposter. Each repost is made 1 ms to one
//! round of posts after its post, and never after the newest post's time plus 1 ms.

use std::collections::HashSet;

use rand::rngs::Xoshiro256PlusPlus;
use rand::{RngExt, SeedableRng};

use super::{SeedArgs, ZIPF_THETA};

/// Reposts per 1000 posts, about.
pub const REPOST_PER_MILLE: u32 = 50;
const REPOSTS_SALT: u64 = 0x7265_706f_7374_7303;

/// A repost of the plan: `user` reposts post `post` (a plan index) `delay_ms` after it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SeedRepost {
    pub user: usize,
    pub post: usize,
    pub delay_ms: i64,
}

impl SeedRepost {
    /// The repost's time, given the time of plan post `k` (`post_ms(k)`).
    pub fn at_ms(&self, post_ms: impl Fn(usize) -> i64) -> i64 {
        post_ms(self.post) + self.delay_ms
    }

    /// A tail for the repost's id, unique per (user, post) and never a post's (0).
    pub fn id_tail(&self, users: usize) -> u64 {
        1 + (self.post as u64) * (users as u64) + self.user as u64
    }
}

/// The mean of Zipf(`n`, θ): the follows drawn per user, before the cap at the
/// follower's index.
fn zipf_mean(n: usize) -> f64 {
    let (mut weights, mut weighted) = (0.0, 0.0);
    for k in 1..=n {
        let w = (k as f64).powf(-ZIPF_THETA);
        weights += w;
        weighted += w * k as f64;
    }
    if weights == 0.0 {
        0.0
    } else {
        weighted / weights
    }
}

/// Which follows repost, drawn follow by follow in plan order.
pub struct Reposts {
    rng: Xoshiro256PlusPlus,
    per_follow: f64,
    users: usize,
    posts_per_user: usize,
    blocked: HashSet<(usize, usize)>,
}

impl Reposts {
    /// `blocks`: the plan's `(user, other)` blocks.
    pub fn new(args: &SeedArgs, blocks: &[(usize, usize)]) -> Reposts {
        let mean = zipf_mean(args.max_follows);
        let wanted = f64::from(REPOST_PER_MILLE) / 1000.0 * args.posts_per_user as f64;
        Reposts {
            rng: Xoshiro256PlusPlus::seed_from_u64(args.seed ^ REPOSTS_SALT),
            per_follow: if mean > 0.0 {
                (wanted / mean).min(1.0)
            } else {
                0.0
            },
            users: args.users,
            posts_per_user: args.posts_per_user,
            blocked: blocks.iter().flat_map(|&(a, b)| [(a, b), (b, a)]).collect(),
        }
    }

    /// The repost the follow `follower` -> `followee` makes, if any. Call for every
    /// follow in plan order.
    pub fn of_follow(&mut self, follower: usize, followee: usize) -> Option<SeedRepost> {
        let reposts = self.rng.random_bool(self.per_follow);
        let round = self.rng.random_range(0..self.posts_per_user.max(1));
        let delay = self.rng.random_range(1..=self.users.max(1) as i64);
        if !reposts || self.posts_per_user == 0 || self.blocked.contains(&(follower, followee)) {
            return None;
        }
        let post = round * self.users + followee;
        let newest = self.users * self.posts_per_user - 1;
        Some(SeedRepost {
            user: follower,
            post,
            delay_ms: delay.min((newest - post) as i64 + 1),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn about_five_percent_of_posts_reposted_by_followers_of_popular_authors() {
        let args = SeedArgs {
            users: 3000,
            max_follows: 50,
            posts_per_user: 4,
            seed: 5,
        };
        let plan = crate::seed::plan(&args);
        let posts = plan.posts.len();
        let share = plan.reposts.len() as f64 / posts as f64;
        assert!((0.035..0.07).contains(&share), "{share}");
        let follows: HashSet<(usize, usize)> = plan.standing_follows().into_iter().collect();
        let mut per_author = vec![0usize; args.users];
        for r in &plan.reposts {
            let author = r.post % args.users;
            assert!(follows.contains(&(r.user, author)), "by a follower: {r:?}");
            assert!(
                r.delay_ms >= 1 && r.post + (r.delay_ms as usize) <= posts,
                "{r:?}"
            );
            per_author[author] += 1;
        }
        let head: usize = per_author[..30].iter().sum();
        let tail: usize = per_author[1500..1530].iter().sum();
        assert!(head > 10 * tail.max(1), "head {head} tail {tail}");
        let pairs: HashSet<(usize, usize)> =
            plan.reposts.iter().map(|r| (r.user, r.post)).collect();
        assert_eq!(
            pairs.len(),
            plan.reposts.len(),
            "one repost per user and post"
        );
        assert_eq!(
            crate::seed::plan(&args).reposts,
            plan.reposts,
            "the same seed"
        );
    }

    /// The checker and its fixtures depend on a seed's data set: drawing the reposts
    /// must leave everything else as it was drawn before reposts existed (this digest
    /// is of the plan as `main` drew it at 12e3b31, before the reposts).
    #[test]
    fn the_reposts_leave_the_rest_of_a_seed_unchanged() {
        use sha2::{Digest, Sha256};
        let args = SeedArgs {
            users: 300,
            max_follows: 20,
            posts_per_user: 3,
            seed: 9,
        };
        let plan = crate::seed::plan(&args);
        assert!(!plan.reposts.is_empty());
        let rest = format!(
            "{:?}",
            (
                &plan.follows,
                &plan.posts,
                &plan.replies,
                &plan.blocks,
                &plan.mutes
            )
        );
        let digest = hex::encode(Sha256::digest(rest.as_bytes()));
        assert_eq!(
            digest,
            "669d38e34378d3a51f8b5a5230c053ec94259e4a039625d5cc044d11471a9ce0"
        );
    }
}
