//! `socialite seed`'s data set: a Socialite-style graph and posts, drawn from one seed.
//! The command writes it with the bulk loader (`bulk::seed`); [`run`] writes it through
//! the service's operations instead, one API write at a time, as tests compare.
//!
//! User `u{i}` follows `min(Zipf(max_follows), i)` distinct earlier users, each picked by
//! Zipf (θ = 0.99) over the earlier ids, so low ids become the popular accounts. Every
//! random choice is drawn up front from one seeded generator, so the data set (users,
//! edges, texts) is the same for the same seed whatever the write concurrency.

use std::collections::HashSet;
use std::future::Future;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use anyhow::Context;
use futures::{StreamExt, TryStreamExt};
use indicatif::{ProgressBar, ProgressStyle};

use crate::service::MuteRequest;
use crate::service::Social;

mod draws;
pub mod reposts;
pub mod social;

pub use draws::Draws;
pub use reposts::{Reposts, SeedRepost};
pub use social::{Replies, SeedMute};

pub const ZIPF_THETA: f64 = 0.99;
/// Writes in flight at once; the embedded store serialises them anyway, MongoDB does not.
const CONCURRENCY: usize = 16;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SeedArgs {
    pub users: usize,
    pub max_follows: usize,
    pub posts_per_user: usize,
    pub seed: u64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SeedPlan {
    pub users: Vec<String>,
    /// `(follower, followee)` index pairs.
    pub follows: Vec<(usize, usize)>,
    /// `(author index, text)`, in the order they are posted.
    pub posts: Vec<(usize, String)>,
    /// `(post, parent)` plan indexes of the replies, in post order (`social.rs`).
    pub replies: Vec<(usize, usize)>,
    /// `(user, other)` index pairs.
    pub blocks: Vec<(usize, usize)>,
    pub mutes: Vec<SeedMute>,
    /// Reposts by followers of the posts' authors (`seed/reposts.rs`), in follow order.
    pub reposts: Vec<SeedRepost>,
}

impl SeedPlan {
    /// The follows that stand once the blocks have removed those beside them.
    pub fn standing_follows(&self) -> Vec<(usize, usize)> {
        let blocked: HashSet<(usize, usize)> = self
            .blocks
            .iter()
            .flat_map(|&(a, b)| [(a, b), (b, a)])
            .collect();
        self.follows
            .iter()
            .copied()
            .filter(|edge| !blocked.contains(edge))
            .collect()
    }
}

pub fn user_id(index: usize) -> String {
    format!("u{index}")
}

/// Draws the whole data set from `args.seed`.
pub fn plan(args: &SeedArgs) -> SeedPlan {
    let mut draws = Draws::new(args);
    let users: Vec<String> = (0..args.users).map(user_id).collect();
    let mut follows = Vec::new();
    let mut chosen = Vec::new();
    for follower in 1..args.users {
        draws.follows_of(follower, &mut chosen);
        follows.extend(chosen.iter().map(|&followee| (follower, followee)));
    }
    let mut posts = Vec::with_capacity(args.users * args.posts_per_user);
    let (mut replies, mut parents) = (Vec::new(), Replies::new(args));
    for _round in 0..args.posts_per_user {
        for author in 0..args.users {
            let mut text = String::new();
            draws.text(&mut text);
            if let Some(parent) = parents.parent(posts.len()) {
                replies.push((posts.len(), parent));
            }
            posts.push((author, text));
        }
    }
    let (blocks, mutes) = social::relations(args);
    let mut drawer = Reposts::new(args, &blocks);
    let reposts = follows
        .iter()
        .filter_map(|&(follower, followee)| drawer.of_follow(follower, followee))
        .collect();
    SeedPlan {
        users,
        follows,
        posts,
        replies,
        blocks,
        mutes,
        reposts,
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SeedReport {
    pub users: usize,
    pub follows: usize,
    pub posts: usize,
    pub blocks: usize,
    pub mutes: usize,
    pub reposts: usize,
    pub seconds: f64,
}

impl SeedReport {
    pub fn rows_per_second(&self) -> f64 {
        (self.users + self.follows + self.posts) as f64 / self.seconds.max(1e-9)
    }
}

fn progress(len: usize, what: &str) -> ProgressBar {
    let bar = ProgressBar::new(len as u64);
    bar.set_style(
        ProgressStyle::with_template("{msg:>8} [{bar:40}] {pos}/{len} {per_sec} eta {eta}")
            .expect("a valid template")
            .progress_chars("=> "),
    );
    bar.set_message(what.to_owned());
    bar
}

/// Runs `write` over `items` with bounded concurrency, counting them on a progress bar.
async fn phase<T, F, Fut>(what: &str, items: Vec<T>, write: F) -> anyhow::Result<()>
where
    F: Fn(T) -> Fut,
    Fut: Future<Output = crate::store::StoreResult<()>>,
{
    let bar = progress(items.len(), what);
    futures::stream::iter(items)
        .map(|item| {
            let (bar, written) = (bar.clone(), write(item));
            async move {
                written.await?;
                bar.inc(1);
                anyhow::Ok(())
            }
        })
        .buffer_unordered(CONCURRENCY)
        .try_collect::<()>()
        .await?;
    bar.finish();
    Ok(())
}

/// Writes the plan: users, then the graph, then posts (which fan out as configured).
pub async fn run(social: Arc<Social>, plan: &SeedPlan) -> anyhow::Result<SeedReport> {
    run_with_tokens(social, plan, None).await
}

/// As [`run`]; with `tokens`, also issues every user an API token and writes them to
/// that file as a JSON array, the token of `u{i}` at index `i` (what the k6 scripts
/// read, since the server keeps only hashes).
pub async fn run_with_tokens(
    social: Arc<Social>,
    plan: &SeedPlan,
    tokens: Option<&Path>,
) -> anyhow::Result<SeedReport> {
    if tokens.is_some() {
        anyhow::ensure!(
            social.auth().issues_tokens(),
            "--tokens-out needs auth.mode = token, not {}",
            social.auth().mode()
        );
    }
    let started = Instant::now();
    let issued = Arc::new(Mutex::new(vec![String::new(); plan.users.len()]));
    let with_tokens = tokens.is_some();
    phase(
        "users",
        plan.users.iter().cloned().enumerate().collect(),
        |(index, id)| {
            let (social, issued) = (social.clone(), issued.clone());
            async move {
                if !with_tokens {
                    return social.create_user(&id, &id).await.map(drop);
                }
                let (_, token) = social.register(&id, &id).await?;
                if let Some(token) = token {
                    issued.lock().unwrap_or_else(|p| p.into_inner())[index] = token.token;
                }
                Ok(())
            }
        },
    )
    .await?;
    if let Some(path) = tokens {
        let issued = issued.lock().unwrap_or_else(|p| p.into_inner());
        let json = serde_json::to_vec(&*issued)?;
        std::fs::write(path, json).with_context(|| format!("writing {}", path.display()))?;
    }
    phase("follows", plan.follows.clone(), |(follower, followee)| {
        let social = social.clone();
        async move {
            let (follower, followee) = (user_id(follower), user_id(followee));
            social.follow(&follower, &followee).await.map(drop)
        }
    })
    .await?;
    // Replies wait for their parents: the other posts first, at once, then the replies
    // one at a time in plan order (a reply may answer a reply).
    let ids = Arc::new(Mutex::new(vec![None; plan.posts.len()]));
    let replying: HashSet<usize> = plan.replies.iter().map(|(k, _)| *k).collect();
    let plain: Vec<(usize, &(usize, String))> = plan
        .posts
        .iter()
        .enumerate()
        .filter(|(k, _)| !replying.contains(k))
        .collect();
    phase("posts", plain, |(k, (author, text))| {
        let (social, ids) = (social.clone(), ids.clone());
        async move {
            let post = social.post(&user_id(*author), text).await?;
            ids.lock().unwrap_or_else(|p| p.into_inner())[k] = Some(post.id);
            Ok(())
        }
    })
    .await?;
    for &(k, parent) in &plan.replies {
        let parent = ids.lock().unwrap_or_else(|p| p.into_inner())[parent];
        let (author, text) = &plan.posts[k];
        let post = social.post_reply(&user_id(*author), text, parent).await?;
        ids.lock().unwrap_or_else(|p| p.into_inner())[k] = Some(post.id);
    }
    phase("reposts", plan.reposts.clone(), |repost| {
        let (social, ids) = (social.clone(), ids.clone());
        async move {
            let post = ids.lock().unwrap_or_else(|p| p.into_inner())[repost.post];
            let post = post.ok_or_else(|| {
                crate::store::StoreError::Backend(anyhow::anyhow!("a repost before its post"))
            })?;
            social.repost(&user_id(repost.user), post).await.map(drop)
        }
    })
    .await?;
    phase("blocks", plan.blocks.clone(), |(user, other)| {
        let social = social.clone();
        async move {
            social
                .block(&user_id(user), &user_id(other))
                .await
                .map(drop)
        }
    })
    .await?;
    phase("mutes", plan.mutes.clone(), |mute| {
        let social = social.clone();
        async move {
            let request = MuteRequest {
                notifications: mute.notifications,
                duration_ms: mute.lasts_ms,
            };
            let (user, other) = (user_id(mute.user), user_id(mute.other));
            social.mute(&user, &other, request).await.map(drop)
        }
    })
    .await?;
    Ok(SeedReport {
        users: plan.users.len(),
        follows: plan.follows.len(),
        posts: plan.posts.len(),
        blocks: plan.blocks.len(),
        mutes: plan.mutes.len(),
        reposts: plan.reposts.len(),
        seconds: started.elapsed().as_secs_f64(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(seed: u64) -> SeedArgs {
        SeedArgs {
            users: 2000,
            max_follows: 50,
            posts_per_user: 2,
            seed,
        }
    }

    #[test]
    fn the_same_seed_gives_the_same_data_set() {
        assert_eq!(plan(&args(7)), plan(&args(7)));
        assert_ne!(plan(&args(7)), plan(&args(8)));
    }

    #[test]
    fn users_follow_distinct_earlier_users_with_popular_low_ids() {
        let plan = plan(&args(42));
        let mut followers = vec![0usize; 2000];
        let mut per_user: Vec<HashSet<usize>> = vec![HashSet::new(); 2000];
        for &(follower, followee) in &plan.follows {
            assert!(followee < follower, "only earlier users are followed");
            assert!(per_user[follower].insert(followee), "no duplicate edges");
            followers[followee] += 1;
        }
        assert!(per_user.iter().all(|f| f.len() <= 50));
        assert!(per_user[1].len() <= 1 && per_user[3].len() <= 3);
        // Zipf: the first ten ids have far more followers than ten ids in the middle.
        let head: usize = followers[..10].iter().sum();
        let middle: usize = followers[1000..1010].iter().sum();
        assert!(head > 20 * middle.max(1), "head {head} middle {middle}");
        // And the number of follows per user is skewed too: many follow few.
        let few = per_user.iter().filter(|f| f.len() <= 5).count();
        // P(Zipf(50, 0.99) <= 5) = H(5)/H(50), about one half.
        assert!(few > 800, "{few} users follow five or fewer");
    }

    #[test]
    fn post_texts_are_10_to_140_characters() {
        let plan = plan(&args(1));
        assert_eq!(plan.posts.len(), 4000);
        assert!(
            plan.posts
                .iter()
                .all(|(_, t)| (10..=140).contains(&t.chars().count()))
        );
        let lengths: HashSet<usize> = plan.posts.iter().map(|(_, t)| t.len()).collect();
        assert!(lengths.len() > 100, "lengths vary");
    }
}
