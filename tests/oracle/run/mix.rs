//! The mix a virtual client draws from: the operations, their weights per focus, and
//! the dispatch of one drawn operation to the module that does and checks it.

use rand::RngExt;

use super::super::focus::{self, Focus};
use super::super::ops::{self, Relation};
use super::super::world::{Rng, Stats, World};
use super::super::{notes, paging, reads, reposts, streams, threads, tokens};

/// The weighted operations a client draws from, per focus.
fn weights(focus: Focus) -> &'static [(Op, u32)] {
    match focus {
        Focus::General => &[
            (Op::Post, 20),
            (Op::Delete, 6),
            (Op::Follow, 12),
            (Op::Unfollow, 7),
            (Op::Like, 6),
            (Op::Unlike, 3),
            (Op::Rename, 3),
            (Op::Token, 2),
            (Op::Timeline, 15),
            (Op::OwnPosts, 5),
            (Op::Profile, 8),
            (Op::Activity, 4),
            (Op::Flip, 4),
            (Op::FollowBurst, 3),
            (Op::Stream, 4),
            (Op::Block, 1),
            (Op::Unblock, 1),
            (Op::Mute, 1),
            (Op::Unmute, 1),
            (Op::HideRace, 1),
            (Op::Reply, 7),
            (Op::Notes, 6),
            (Op::Context, 2),
            (Op::Repost, 4),
            (Op::Unrepost, 2),
            (Op::RepostRace, 2),
            (Op::Dismiss, 3),
            (Op::Clear, 1),
            (Op::Newer, 3),
        ],
        Focus::LatePush => &[(Op::LatePush, 10)],
        Focus::Flip => &[
            (Op::FlipPair, 10),
            (Op::Post, 3),
            (Op::Timeline, 3),
            (Op::Delete, 1),
            (Op::Stream, 2),
        ],
        Focus::Token => &[(Op::TokenStorm, 10), (Op::Post, 1), (Op::Timeline, 1)],
        Focus::Counters => &[
            (Op::FollowStorm, 10),
            (Op::FollowBurst, 3),
            (Op::Post, 2),
            (Op::Profile, 2),
        ],
        Focus::Hybrid => &[
            (Op::Post, 20),
            (Op::Delete, 5),
            (Op::Follow, 25),
            (Op::Unfollow, 18),
            (Op::Flip, 4),
            (Op::Timeline, 20),
            (Op::Rename, 2),
            (Op::Profile, 4),
            (Op::Stream, 4),
            (Op::Reply, 8),
            (Op::Like, 4),
            (Op::Unlike, 2),
            (Op::Notes, 4),
            (Op::Repost, 5),
            (Op::Unrepost, 2),
            (Op::RepostRace, 3),
            (Op::Dismiss, 2),
            (Op::Newer, 2),
        ],
        Focus::Hide => &[
            (Op::HideRace, 10),
            (Op::Post, 10),
            (Op::Follow, 8),
            (Op::Unblock, 2),
            (Op::Unmute, 2),
            (Op::Timeline, 6),
            (Op::Delete, 2),
            (Op::Stream, 3),
            (Op::Profile, 2),
            (Op::Reply, 5),
            (Op::Like, 4),
            (Op::Unlike, 2),
            (Op::Notes, 6),
            (Op::Repost, 4),
            (Op::Unrepost, 2),
            (Op::RepostRace, 10),
            (Op::Dismiss, 3),
            (Op::Clear, 1),
        ],
    }
}

#[derive(Debug, Clone, Copy)]
enum Op {
    Post,
    Delete,
    Follow,
    Unfollow,
    Like,
    Unlike,
    Rename,
    Token,
    Timeline,
    OwnPosts,
    Profile,
    Activity,
    Flip,
    FollowBurst,
    LatePush,
    FlipPair,
    TokenStorm,
    FollowStorm,
    Stream,
    Block,
    Unblock,
    Mute,
    Unmute,
    HideRace,
    Reply,
    Notes,
    Context,
    Repost,
    Unrepost,
    RepostRace,
    Dismiss,
    Clear,
    Newer,
}

/// One operation, drawn by the weights of the run's focus, done and checked.
pub async fn one(world: &World, rng: &mut Rng) {
    let weights = weights(world.topology.focus);
    let total: u32 = weights.iter().map(|(_, w)| w).sum();
    let mut pick = rng.random_range(0..total);
    let op = weights
        .iter()
        .find(|(_, w)| {
            let hit = pick < *w;
            pick = pick.saturating_sub(*w);
            hit
        })
        .unwrap()
        .0;
    match op {
        Op::Post => ops::post(world, rng).await,
        Op::Delete => ops::delete(world, rng).await,
        Op::Follow => ops::toggle(world, rng, false, true).await,
        Op::Unfollow => ops::toggle(world, rng, false, false).await,
        Op::Like => ops::toggle(world, rng, true, true).await,
        Op::Unlike => ops::toggle(world, rng, true, false).await,
        Op::Rename => ops::rename(world, rng).await,
        Op::Token => tokens::token_race(world, rng, 3).await,
        Op::Timeline => reads::timeline(world, rng).await,
        Op::OwnPosts => reads::own_posts(world, rng).await,
        Op::Profile => reads::profile(world, rng).await,
        Op::Activity => reads::activity(world, rng).await,
        Op::Flip => ops::flip(world, rng).await,
        Op::FollowBurst => ops::follow_burst(world, rng).await,
        Op::LatePush => focus::late_push(world, rng).await,
        Op::FlipPair => focus::flip_pair(world, rng).await,
        Op::TokenStorm => tokens::token_race(world, rng, 10).await,
        Op::FollowStorm => focus::follow_storm(world, rng).await,
        Op::Stream => streams::stream(world, rng).await,
        Op::Block => ops::relation(world, rng, Relation::Block, true).await,
        Op::Unblock => ops::relation(world, rng, Relation::Block, false).await,
        Op::Mute => ops::relation(world, rng, Relation::Mute, true).await,
        Op::Unmute => ops::relation(world, rng, Relation::Mute, false).await,
        Op::HideRace => focus::hide_race(world, rng).await,
        Op::Reply => ops::reply(world, rng).await,
        Op::Notes => notes::read(world, rng).await,
        Op::Context => threads::read(world, rng).await,
        Op::Repost => reposts::repost(world, rng, true).await,
        Op::Unrepost => reposts::repost(world, rng, false).await,
        Op::RepostRace => focus::repost_race(world, rng).await,
        Op::Dismiss => notes::dismiss(world, rng).await,
        Op::Clear => notes::clear(world, rng).await,
        Op::Newer => paging::read(world, rng).await,
    }
    Stats::bump(&world.stats.ops);
}
