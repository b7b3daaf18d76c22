//! Reposts in home timelines: which reposts a reader's timeline shows, given the
//! sources, and the seen-once rule that keeps each original to one item.
//!
//! A repost is an item at its own id (the posts' id space, minted when it was made),
//! by the reposter, carrying the original. It is a *candidate* in reader R's timeline
//! when the reposter is R or followed by R, the repost stands and the original is live,
//! and neither the reposter nor the original's author is hidden from R (a block either
//! way, a standing mute). The reply rule does not apply to reposts.
//!
//! **Seen once:** each original is served at most once over the whole walk, at its
//! oldest eligible occurrence. The occurrences are the original itself, where it would
//! be served as a post (author R or followed, not hidden, the reply rule), and the
//! candidate reposts of it. An original is older than any repost of it, so it wins
//! over every repost; else the oldest repost does. This is a function of the sources
//! at read time.
//!
//! The bucket strategies hold "at most" sets: a repost is surely served only when its
//! delivery was certain (the reader's own, or made after the follow that carries it)
//! and no older occurrence of its original may be served; it may be served when it is
//! a candidate and no older occurrence is surely served.

use std::collections::{BTreeMap, BTreeSet};

use super::{Shape, Sources, TimelineBounds, TimelineRules, shape};
use crate::domain::{PostId, Repost};

impl Sources {
    /// Whether repost `r` is a candidate in `reader`'s home timeline (see the module).
    pub fn repost_candidate(&self, reader: &str, r: &Repost) -> bool {
        let follows = r.user == reader
            || self
                .follows
                .contains_key(&(reader.to_owned(), r.user.clone()));
        let original = self.posts.get(&r.post.post).filter(|p| p.live());
        follows
            && original.is_some_and(|p| !self.hides(reader, &p.author))
            && !self.hides(reader, &r.user)
    }

    /// Whether a bucket strategy surely delivered repost `r` to `reader`: it is their
    /// own, or it was made after the follow of its reposter that stands now.
    fn repost_delivered(&self, reader: &str, r: &Repost) -> bool {
        if r.user == reader {
            return true;
        }
        let edge = self.follows.get(&(reader.to_owned(), r.user.clone()));
        match (edge, self.repost_windows.get(&r.id)) {
            (Some(edge), Some(made)) => edge.created.to < made.from,
            _ => false,
        }
    }

    /// The reposts `reader`'s materialised timeline must hold under `rules`, newest
    /// first: those its reads surely serve (the reposts of the lower bound of
    /// [`Sources::served_timeline`]). A timeline is delivered every standing repost by
    /// its reader and their followees (seen once and what the reader hides are applied
    /// at read time, and nothing is purged for them), but a repost that seen once drops,
    /// or whose reposter or original's author is hidden, is never served, so a timeline
    /// that lacks it is not wrong; nor, under the bucket strategies, is one lacking a
    /// repost not surely delivered (made before the follow that carries it). Hidden
    /// users count only as far as `blocks` and `mutes` say, and an older occurrence
    /// counts only when `self` holds it (the original as a post, an older repost): a
    /// slice of the sources that leaves them out asks for more than the reads serve.
    pub fn reposts_required(&self, reader: &str, rules: TimelineRules) -> Vec<PostId> {
        self.served_timeline(reader, rules)
            .lower
            .into_iter()
            .filter(|id| self.reposts.contains_key(id))
            .collect()
    }

    /// `posts` (the bounds of the posts `reader`'s timeline serves, see
    /// [`Sources::served_timeline`]) with the reposts it serves, each original once.
    pub(super) fn with_reposts(
        &self,
        reader: &str,
        rules: TimelineRules,
        posts: TimelineBounds,
    ) -> TimelineBounds {
        let candidates: Vec<&Repost> = self
            .reposts
            .values()
            .filter(|r| self.repost_candidate(reader, r))
            .collect();
        // Per original, the occurrences that may be served, oldest first: the original
        // as a post where it may be served, then its candidate reposts.
        let upper_posts: BTreeSet<PostId> = posts.upper.iter().copied().collect();
        let mut occurrences: BTreeMap<PostId, Vec<PostId>> = BTreeMap::new();
        for r in &candidates {
            let o = occurrences.entry(r.post.post).or_default();
            if o.is_empty() && upper_posts.contains(&r.post.post) {
                o.push(r.post.post);
            }
            o.push(r.id);
        }
        let oldest = |r: &Repost| occurrences[&r.post.post].first() == Some(&r.id);
        let (lower_reposts, upper_reposts): (Vec<PostId>, Vec<PostId>) = match shape(rules.strategy)
        {
            Shape::Exact => {
                let shown: Vec<PostId> = candidates
                    .iter()
                    .filter(|r| oldest(r))
                    .map(|r| r.id)
                    .collect();
                (shown.clone(), shown)
            }
            Shape::Sandwich => {
                let lower: Vec<PostId> = candidates
                    .iter()
                    .filter(|r| oldest(r) && self.repost_delivered(reader, r))
                    .map(|r| r.id)
                    .collect();
                // The original, or a repost of it, surely served: nothing newer of
                // it may be.
                let sure: BTreeMap<PostId, PostId> = posts
                    .lower
                    .iter()
                    .map(|p| (*p, *p))
                    .chain(lower.iter().map(|id| (self.reposts[id].post.post, *id)))
                    .collect();
                let upper = candidates
                    .iter()
                    .filter(|r| sure.get(&r.post.post).is_none_or(|s| *s >= r.id))
                    .map(|r| r.id)
                    .collect();
                (lower, upper)
            }
        };
        let merge = |posts: Vec<PostId>, reposts: Vec<PostId>| -> Vec<PostId> {
            let all: BTreeSet<PostId> = posts.into_iter().chain(reposts).collect();
            all.into_iter().rev().collect()
        };
        TimelineBounds {
            lower: merge(posts.lower, lower_reposts),
            upper: merge(posts.upper, upper_reposts),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::{FollowSource, PostSource, Window};
    use super::*;
    use crate::domain::{FeedStrategy, ReplyTo};

    fn post(author: &str, t: i64) -> PostSource {
        PostSource {
            author: author.into(),
            text: format!("{author} at {t}"),
            created: Window::at(t),
            deleted: None,
            reply_to: None,
        }
    }

    fn repost(s: &mut Sources, t: i64, user: &str, of: PostId) -> PostId {
        let id = PostId::at(t, 1);
        let author = s.posts[&of].author.clone();
        s.reposts.insert(
            id,
            Repost {
                id,
                user: user.into(),
                post: ReplyTo { post: of, author },
            },
        );
        s.repost_windows.insert(id, Window::at(t));
        id
    }

    fn follow(s: &mut Sources, a: &str, b: &str, t: i64) {
        s.follows.insert(
            (a.into(), b.into()),
            FollowSource {
                created: Window::at(t),
            },
        );
    }

    const CACHE: TimelineRules = TimelineRules {
        strategy: FeedStrategy::Cache,
        backfill_on_follow: 10,
    };

    #[test]
    fn each_original_is_served_once_at_its_oldest_eligible_occurrence() {
        let mut s = Sources::default();
        let (p, q) = (PostId::at(10, 0), PostId::at(11, 0));
        s.posts.insert(p, post("a", 10));
        s.posts.insert(q, post("x", 11));
        follow(&mut s, "r", "a", 1);
        follow(&mut s, "r", "b", 1);
        follow(&mut s, "r", "c", 1);
        let b_p = repost(&mut s, 20, "b", p);
        let b_q = repost(&mut s, 21, "b", q);
        let c_q = repost(&mut s, 22, "c", q);
        let own = repost(&mut s, 23, "r", q);
        let got = s.served_timeline("r", CACHE);
        // p is served as itself (r follows a), so b's repost of it is not; q's author
        // is not followed, so its oldest repost (b's) stands for it.
        assert_eq!(got.upper, [b_q, p]);
        assert_eq!(got.lower, got.upper);
        // b unfollowed: c's repost is now the oldest occurrence of q.
        s.follows.remove(&("r".into(), "b".into()));
        assert_eq!(s.served_timeline("r", CACHE).upper, [c_q, p]);
        // c muted, and the original's author blocked: no repost of q is served.
        s.mutes.insert(("r".into(), "c".into()));
        assert_eq!(s.served_timeline("r", CACHE).upper, [own, p]);
        s.blocks.insert(("x".into(), "r".into()));
        assert_eq!(s.served_timeline("r", CACHE).upper, [p]);
        // The original deleted: none of its reposts.
        s.posts.get_mut(&p).unwrap().deleted = Some(Window::at(30));
        s.blocks.clear();
        s.mutes.clear();
        follow(&mut s, "r", "b", 1);
        assert_eq!(s.served_timeline("r", CACHE).upper, [b_q]);
        let _ = b_p;
    }

    #[test]
    fn a_repost_of_a_reply_ignores_the_reply_rule() {
        let mut s = Sources::default();
        let (root, reply) = (PostId::at(10, 0), PostId::at(11, 0));
        s.posts.insert(root, post("z", 10));
        let mut answer = post("a", 11);
        answer.reply_to = Some(ReplyTo {
            post: root,
            author: "z".into(),
        });
        s.posts.insert(reply, answer);
        follow(&mut s, "r", "a", 1);
        follow(&mut s, "r", "b", 1);
        let b_reply = repost(&mut s, 20, "b", reply);
        // The reply itself is hidden by the home rule (r does not follow z), so the
        // repost is its oldest eligible occurrence.
        assert_eq!(s.served_timeline("r", CACHE).upper, [b_reply]);
        follow(&mut s, "r", "z", 1);
        assert_eq!(s.served_timeline("r", CACHE).upper, [reply, root]);
    }

    #[test]
    fn a_timeline_must_hold_the_reposts_its_reads_serve_and_no_other() {
        let mut s = Sources::default();
        let (p, q) = (PostId::at(10, 0), PostId::at(11, 0));
        s.posts.insert(p, post("a", 10));
        s.posts.insert(q, post("x", 11));
        follow(&mut s, "r", "a", 1);
        follow(&mut s, "r", "b", 1);
        follow(&mut s, "r", "c", 1);
        // p's original is served (r follows a): no repost of it is required.
        repost(&mut s, 20, "b", p);
        // q: b's repost is the first, c's and r's own are seen-once's to drop.
        let b_q = repost(&mut s, 21, "b", q);
        repost(&mut s, 22, "c", q);
        repost(&mut s, 23, "r", q);
        assert_eq!(s.reposts_required("r", CACHE), [b_q]);
        // b muted: c's is the first now; x blocked: none of q's.
        s.mutes.insert(("r".into(), "b".into()));
        let c_q = PostId::at(22, 1);
        assert_eq!(s.reposts_required("r", CACHE), [c_q]);
        s.blocks.insert(("r".into(), "x".into()));
        assert!(s.reposts_required("r", CACHE).is_empty());
    }

    #[test]
    fn buckets_hold_a_repost_surely_only_when_it_surely_came_and_nothing_older_may_show() {
        let mut s = Sources::default();
        let (p, q) = (PostId::at(10, 0), PostId::at(11, 0));
        s.posts.insert(p, post("x", 10));
        s.posts.insert(q, post("y", 11));
        follow(&mut s, "r", "b", 15);
        follow(&mut s, "r", "c", 1);
        let before = repost(&mut s, 12, "b", p);
        let after = repost(&mut s, 20, "c", p);
        let sure = repost(&mut s, 21, "b", q);
        let rules = TimelineRules {
            strategy: FeedStrategy::SizedBuckets,
            backfill_on_follow: 10,
        };
        let got = s.served_timeline("r", rules);
        // b's repost of p came before r followed b: perhaps held, so c's newer one of p
        // may show instead; b's repost of q came after the follow: surely held.
        assert_eq!(got.lower, [sure]);
        assert_eq!(got.upper, [sure, after, before]);
    }
}
