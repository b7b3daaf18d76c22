//! What every derived datum should be, given the sources: the one definition that the
//! timeline oracle (`tests/oracle.rs`) holds the service to, and that an audit of a store
//! can hold its contents to.
//!
//! The sources are the truth: users and their display names, follow edges, posts and
//! likes. Everything else (timelines, counters, activity logs, the event log, tag counts)
//! is derived from them. These are pure functions over [`Sources`]; no storage, no HTTP.
//! This file has the sources, counters, tags and activity logs; home timelines are in
//! `derived/timelines.rs`, what their entries carry in `entries.rs`, notifications in
//! `notifications.rs`, reposts in `reposts.rs`, and a stored slice's faults in
//! `faults.rs`.
//!
//! Times are opaque ticks (milliseconds for a store, microseconds since the start of a
//! run for the oracle). A moment known only to lie somewhere in an interval, such as a
//! write whose request was in flight from `from` to `to`, is a [`Window`].

use std::collections::{BTreeMap, BTreeSet};

use crate::domain::{ActivityType, PostId, ReplyTo, hashtags};

mod entries;
mod faults;
pub mod notifications;
mod reposts;
mod timelines;

pub use entries::EntryFault;
pub use faults::{
    TimelineFaults, activity_missing, bucket_faults, cache_faults, newest_first, newest_first_once,
};
pub use timelines::{Shape, TimelineBounds, TimelineRules, shape};

/// An instant known only to lie in `[from, to]`; `to = i64::MAX` when it is not bounded
/// (a write whose outcome was learnt only later).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    pub from: i64,
    pub to: i64,
}

impl Window {
    pub const fn at(t: i64) -> Window {
        Window { from: t, to: t }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PostSource {
    pub author: String,
    pub text: String,
    pub created: Window,
    /// `None` while the post is live.
    pub deleted: Option<Window>,
    /// The post it answers and that post's author, as named at creation.
    pub reply_to: Option<ReplyTo>,
}

impl PostSource {
    pub fn live(&self) -> bool {
        self.deleted.is_none()
    }

    /// Whether the post may have been live at some moment of `during`.
    fn may_be_live(&self, during: Window) -> bool {
        self.created.from <= during.to && self.deleted.is_none_or(|d| d.to >= during.from)
    }
}

/// A follow edge as it stands: when the follow that created it ran.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FollowSource {
    pub created: Window,
}

/// Everything derived data is computed from. Deleted posts may be kept (with their
/// deletion window) so that the event and activity expectations can name them; an
/// audit of a store, which no longer has them, leaves them out.
#[derive(Debug, Clone, Default)]
pub struct Sources {
    /// Display name per user id.
    pub users: BTreeMap<String, String>,
    /// The user version each of `users`' names was read at, where known: what a name
    /// stamp of it may carry at most (see [`Sources::entry_faults`]).
    pub versions: BTreeMap<String, u64>,
    /// (follower, followee) of every current edge.
    pub follows: BTreeMap<(String, String), FollowSource>,
    pub posts: BTreeMap<PostId, PostSource>,
    /// (user, post) of every current like.
    pub likes: BTreeSet<(String, PostId)>,
    /// (blocker, blocked) of every current block.
    pub blocks: BTreeSet<(String, String)>,
    /// (muter, muted) of every mute standing at the instant the check describes.
    pub mutes: BTreeSet<(String, String)>,
    /// Every standing repost, by its own id (see `domain::reposts`).
    pub reposts: BTreeMap<PostId, crate::domain::Repost>,
    /// When each repost's request ran, where known (the bucket strategies' lower bound
    /// takes a repost only when it surely came after the follow that delivers it).
    pub repost_windows: BTreeMap<PostId, Window>,
}

impl Sources {
    fn live_posts_of<'a>(
        &'a self,
        author: &'a str,
    ) -> impl Iterator<Item = (&'a PostId, &'a PostSource)> + 'a {
        self.posts
            .iter()
            .filter(move |(_, p)| p.author == author && p.live())
    }

    /// The users `user` follows now.
    pub fn followees<'a>(
        &'a self,
        user: &'a str,
    ) -> impl Iterator<Item = (&'a str, &'a FollowSource)> + 'a {
        self.follows
            .range((user.to_owned(), String::new())..)
            .take_while(move |((follower, _), _)| follower == user)
            .map(|((_, followee), edge)| (followee.as_str(), edge))
    }

    /// A post's `replies_count`: how many live posts answer it.
    pub fn replies_count(&self, id: PostId) -> u64 {
        self.posts
            .values()
            .filter(|p| p.live() && p.reply_to.as_ref().is_some_and(|r| r.post == id))
            .count() as u64
    }

    /// A post's `reposts_count`: how many standing reposts of it exist, while it is
    /// live (a deleted post's reposts go with it).
    pub fn reposts_count(&self, id: PostId) -> u64 {
        if !self.posts.get(&id).is_some_and(|p| p.live()) {
            return 0;
        }
        self.reposts.values().filter(|r| r.post.post == id).count() as u64
    }

    /// (followers, following, posts) of `user`.
    pub fn counters(&self, user: &str) -> (u64, u64, u64) {
        let followers = self.follows.keys().filter(|(_, b)| b == user).count() as u64;
        let following = self.followees(user).count() as u64;
        let posts = self.live_posts_of(user).count() as u64;
        (followers, following, posts)
    }

    /// Live posts carrying `tag` (lower-case, without `#`).
    pub fn tag_count(&self, tag: &str) -> u64 {
        self.posts
            .values()
            .filter(|p| p.live() && hashtags(&p.text).iter().any(|t| t == tag))
            .count() as u64
    }

    /// Every tag of a live post.
    pub fn tags(&self) -> BTreeSet<String> {
        self.posts
            .values()
            .filter(|p| p.live())
            .flat_map(|p| hashtags(&p.text))
            .collect()
    }

    /// What an activity log rebuilt from these sources holds for `user`, as (type,
    /// reference): one entry per live post, current followee and current like.
    pub fn activity_from_sources(&self, user: &str) -> BTreeSet<(ActivityType, String)> {
        let posts = self
            .live_posts_of(user)
            .map(|(id, _)| (ActivityType::Post, id.to_string()));
        let follows = self
            .followees(user)
            .map(|(f, _)| (ActivityType::Follow, f.to_owned()));
        let likes = self
            .likes
            .iter()
            .filter(|(u, _)| u == user)
            .map(|(_, p)| (ActivityType::Like, p.to_string()));
        posts.chain(follows).chain(likes).collect()
    }
}

impl Sources {
    /// The count of every tag of a live post, as [`Sources::tag_count`] gives each one,
    /// in one pass: what an audit sums over pages of posts.
    pub fn tag_totals(&self) -> BTreeMap<String, u64> {
        let mut totals = BTreeMap::new();
        for post in self.posts.values().filter(|p| p.live()) {
            let mut tags = hashtags(&post.text);
            tags.sort_unstable();
            tags.dedup();
            for tag in tags {
                *totals.entry(tag).or_insert(0) += 1;
            }
        }
        totals
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::FeedStrategy;

    fn post(author: &str, t: i64) -> PostSource {
        PostSource {
            author: author.into(),
            text: format!("{author} at {t} #t{t}"),
            created: Window::at(t),
            deleted: None,
            reply_to: None,
        }
    }

    #[test]
    fn a_posts_repost_count_is_its_standing_reposts_while_it_lives() {
        let mut s = Sources::default();
        let (original, other) = (PostId::at(1, 0), PostId::at(2, 0));
        s.posts.insert(original, post("a", 1));
        s.posts.insert(other, post("a", 2));
        for (t, user, of) in [(3, "b", original), (4, "c", original), (5, "b", other)] {
            let repost = crate::domain::Repost {
                id: PostId::at(t, 0),
                user: user.into(),
                post: ReplyTo {
                    post: of,
                    author: "a".into(),
                },
            };
            s.reposts.insert(repost.id, repost);
        }
        assert_eq!(s.reposts_count(original), 2);
        assert_eq!(s.reposts_count(other), 1);
        s.posts.get_mut(&original).unwrap().deleted = Some(Window::at(6));
        assert_eq!(s.reposts_count(original), 0);
    }

    #[test]
    fn a_sandwich_takes_the_backfill_and_later_posts_and_excludes_the_rest() {
        let mut s = Sources::default();
        for t in 1..=6 {
            s.posts.insert(PostId::at(t, 0), post("a", t));
        }
        s.follows.insert(
            ("r".into(), "a".into()),
            FollowSource {
                created: Window { from: 4, to: 4 },
            },
        );
        let rules = TimelineRules {
            strategy: FeedStrategy::SizedBuckets,
            backfill_on_follow: 2,
        };
        let bounds = s.timeline("r", rules);
        let ms = |v: &[PostId]| v.iter().map(|p| p.timestamp_ms()).collect::<Vec<_>>();
        // 5 and 6 after the follow; 4 was written during it, so the backfill of 2 took
        // 3 and either 4 or 2.
        assert_eq!(ms(&bounds.lower), [6, 5, 3]);
        assert_eq!(ms(&bounds.upper), [6, 5, 4, 3, 2, 1]);
        let exact = s.timeline(
            "r",
            TimelineRules {
                strategy: FeedStrategy::Cache,
                ..rules
            },
        );
        assert_eq!(exact.lower, exact.upper);
        assert_eq!(s.counters("a"), (1, 0, 6));
        assert_eq!(s.tag_count("t3"), 1);
    }

    #[test]
    fn a_log_served_out_of_order_or_twice_is_named() {
        assert!(newest_first_once(&[("a", 2), ("b", 1)]).is_none());
        assert!(newest_first_once(&[("a", 1), ("b", 2)]).is_some());
        assert!(newest_first_once(&[("a", 2), ("a", 2)]).is_some());
    }

    #[test]
    fn a_cache_must_cover_from_its_oldest_entry_and_hold_nothing_else() {
        let ids: Vec<PostId> = (1..=5).map(|t| PostId::at(t, 0)).collect();
        let bounds = TimelineBounds {
            lower: ids.iter().rev().copied().collect(),
            upper: ids.iter().rev().copied().collect(),
        };
        let stray = PostId::at(9, 0);
        let cache: BTreeSet<PostId> = [ids[1], ids[3], ids[4], stray].into();
        let faults = cache_faults(&bounds, &cache, true, |_| false);
        assert_eq!(faults.extra, [stray]);
        assert_eq!(
            faults.missing,
            [ids[2]],
            "below the oldest (ids[0]) is not required"
        );
        let merged = cache_faults(&bounds, &cache, true, |id| *id == ids[2]);
        assert!(merged.missing.is_empty());
        assert!(
            cache_faults(&bounds, &cache, false, |_| false)
                .missing
                .is_empty()
        );
        let buckets = bucket_faults(&bounds, &cache);
        assert_eq!(buckets.missing, [ids[2], ids[0]]);
        let mut s = Sources::default();
        s.posts.insert(ids[0], post("a", 1));
        s.posts.insert(ids[1], post("a", 1));
        assert_eq!(s.tag_totals()["t1"], s.tag_count("t1"));
    }
}
