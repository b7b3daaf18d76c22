//! Home timelines as the sources define them: which posts a strategy's whole timeline
//! must and may hold ([`Shape`]: exactly, or between a lower and an upper bound for the
//! bucket strategies, whose lower bound takes a follow's backfill and the posts after
//! it), and what reads of it serve: less the replies the home rule hides and the posts
//! of authors hidden from the reader, with the reposts it shows (`reposts.rs`).

use std::collections::BTreeSet;

use super::{PostSource, Sources, Window};
use crate::domain::{FeedStrategy, PostId, reply_visible};

/// The settings the timeline rules depend on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TimelineRules {
    pub strategy: FeedStrategy,
    pub backfill_on_follow: u32,
}

/// How a strategy's whole timeline relates to the sources.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// Exactly the reader's own live posts and the live posts of everyone they follow.
    Exact,
    /// Between a lower bound (own posts, a follow's backfill, posts after the follow)
    /// and the exact set above.
    Sandwich,
}

/// The one place a strategy's timeline semantics are chosen; a new strategy adds an arm.
pub fn shape(strategy: FeedStrategy) -> Shape {
    match strategy {
        FeedStrategy::FanoutOnRead | FeedStrategy::Cache | FeedStrategy::Hybrid => Shape::Exact,
        FeedStrategy::TimedBuckets | FeedStrategy::SizedBuckets => Shape::Sandwich,
    }
}

/// A whole timeline's bounds: every post of `lower` must be served, nothing outside
/// `upper`; both newest first.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TimelineBounds {
    pub lower: Vec<PostId>,
    pub upper: Vec<PostId>,
}

impl Sources {
    /// `user`'s whole home timeline's bounds under `rules`.
    pub fn timeline(&self, user: &str, rules: TimelineRules) -> TimelineBounds {
        let mut upper: BTreeSet<PostId> = self.live_posts_of(user).map(|(id, _)| *id).collect();
        let mut lower = upper.clone();
        for (followee, edge) in self.followees(user) {
            let posts: Vec<(&PostId, &PostSource)> = self.live_posts_of(followee).collect();
            upper.extend(posts.iter().map(|(id, _)| **id));
            match shape(rules.strategy) {
                Shape::Exact => lower.extend(posts.iter().map(|(id, _)| **id)),
                Shape::Sandwich => lower.extend(self.delivered_by_follow(
                    followee,
                    edge.created,
                    rules.backfill_on_follow,
                )),
            }
        }
        TimelineBounds {
            lower: lower.into_iter().rev().collect(),
            upper: upper.into_iter().rev().collect(),
        }
    }

    /// What reads of `user`'s home timeline serve: [`Sources::timeline`] (what the
    /// strategy stores, replies and muted authors included) less the replies the home
    /// rule hides by the follow graph as it is now ([`Sources::reply_shown`]) and the
    /// posts of authors hidden from `user` ([`Sources::hides`]), which reads apply; with
    /// the reposts it shows, each original once (`derived/reposts.rs`).
    pub fn served_timeline(&self, user: &str, rules: TimelineRules) -> TimelineBounds {
        let stored = self.timeline(user, rules);
        let shown = |id: &PostId| {
            self.reply_shown(user, id)
                && self
                    .posts
                    .get(id)
                    .is_none_or(|p| !self.hides(user, &p.author))
        };
        let posts = TimelineBounds {
            lower: stored.lower.into_iter().filter(shown).collect(),
            upper: stored.upper.into_iter().filter(shown).collect(),
        };
        self.with_reposts(user, rules, posts)
    }

    /// Whether `user`'s home timeline shows the post `id` as far as the reply rule
    /// goes ([`reply_visible`] with the current follows).
    pub fn reply_shown(&self, user: &str, id: &PostId) -> bool {
        let Some(post) = self.posts.get(id) else {
            return true;
        };
        let parent = post.reply_to.as_ref().map(|r| r.author.as_str());
        let follows_parent =
            parent.is_some_and(|p| self.follows.contains_key(&(user.to_owned(), p.to_owned())));
        reply_visible(user, &post.author, parent, follows_parent)
    }

    /// Whether `author`'s posts are hidden from `reader`: a block either way, or a mute
    /// of the author by the reader.
    pub fn hides(&self, reader: &str, author: &str) -> bool {
        let (r, a) = (reader.to_owned(), author.to_owned());
        reader != author
            && (self.mutes.contains(&(r.clone(), a.clone()))
                || self.blocks.contains(&(r.clone(), a.clone()))
                || self.blocks.contains(&(a, r)))
    }

    /// The live posts of `followee` a follow that ran during `follow` certainly
    /// delivered: those created after it (fanned out to the edge), and those its
    /// backfill of the newest `backfill` posts must have taken whatever the posts
    /// created or deleted during the follow did.
    fn delivered_by_follow(&self, followee: &str, follow: Window, backfill: u32) -> Vec<PostId> {
        let mut certain = Vec::new();
        // Newest first: posts that may have been live during the follow and are newer
        // than the one looked at, any of which the backfill may have taken instead.
        let mut newer_maybe = 0u32;
        for (id, post) in self
            .posts
            .iter()
            .rev()
            .filter(|(_, p)| p.author == followee)
        {
            if post.created.from > follow.to {
                if post.live() {
                    certain.push(*id);
                }
                continue;
            }
            let surely_there = post.created.to < follow.from && post.live();
            if surely_there && newer_maybe < backfill {
                certain.push(*id);
            }
            if post.may_be_live(follow) {
                newer_maybe += 1;
            }
        }
        certain
    }
}
