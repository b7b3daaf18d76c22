//! The history and what it allows: every write with the interval its request was in
//! flight (and whether it took effect, or its outcome is unknown), and the questions the
//! checks ask of it: may this edge or post have existed during a read, must it have?
//! What blocks and mutes hid is asked in `model/hiding.rs`.

mod dismissals;
mod hiding;

pub use dismissals::{Dismissal, Fate};

use std::collections::{BTreeMap, HashMap};
use std::time::Instant;

/// Never: the end of a write whose outcome is unknown (killed process, timeout, 5xx).
pub const NEVER: i64 = i64::MAX;

/// A write's request, in microseconds since the run began: sent at `invoke`, answered
/// at `complete` ([`NEVER`] when the outcome is unknown).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Span {
    pub invoke: i64,
    pub complete: i64,
}

impl Span {
    pub fn acked(&self) -> bool {
        self.complete != NEVER
    }

    fn overlaps(&self, other: &Span) -> bool {
        self.invoke < other.complete && other.invoke < self.complete
    }
}

/// One follow (`on`) or unfollow, like or unlike.
#[derive(Debug, Clone, Copy)]
pub struct Toggle {
    pub on: bool,
    pub span: Span,
}

/// A mute or unmute, with how long a mute was asked to last (microseconds).
pub type TimedToggle = (Toggle, Option<i64>);

#[derive(Debug, Clone)]
pub struct PostM {
    pub author: String,
    pub text: String,
    pub id: Option<String>,
    pub create: Span,
    pub deletes: Vec<Span>,
    /// The index in [`Model::posts`] of the post it answers.
    pub reply_to: Option<usize>,
}

/// A repost id as the history knows it: who reposted which post, and the earliest time
/// it was known to stand (the answer of the `PUT` that named it, or the end of a read
/// that served it). An unrepost of the pair sent after that removed it for good: a new
/// repost of the pair takes a new id.
#[derive(Debug, Clone)]
pub struct RepostSeen {
    pub user: String,
    pub post: String,
    pub known: i64,
}

#[derive(Debug, Clone)]
pub struct UserM {
    pub token: String,
    /// An OAuth access token (`read write:notifications`) for the Mastodon view.
    pub masto_token: String,
    /// Every name the user was given or was being renamed to.
    pub names: Vec<(String, Span)>,
}

#[derive(Default)]
pub struct Model {
    pub users: BTreeMap<String, UserM>,
    pub posts: Vec<PostM>,
    pub by_id: HashMap<String, usize>,
    pub pairs: BTreeMap<(String, String), Vec<Toggle>>,
    pub likes: BTreeMap<(String, String), Vec<Toggle>>,
    /// Blocks by `(blocker, blocked)`.
    pub blocks: BTreeMap<(String, String), Vec<Toggle>>,
    /// Mutes by `(muter, muted)`, each `on` with how long it was asked to last.
    pub mutes: BTreeMap<(String, String), Vec<TimedToggle>>,
    /// The same mutes as they concern notifications, by `(muter, muted)`: a mute with
    /// `notifications: true` is `on` (with its duration), one with `false` and every
    /// unmute `off` (a second mute replaces the first's settings).
    pub notify_mutes: BTreeMap<(String, String), Vec<TimedToggle>>,
    /// Reposts and unreposts by `(reposter, post id)`.
    pub reposts: BTreeMap<(String, String), Vec<Toggle>>,
    /// Every repost id learnt (from a `PUT`'s answer or a read), and what it is.
    pub repost_ids: HashMap<String, RepostSeen>,
    /// Every dismissal and clear of notifications sent (`model/dismissals.rs`).
    pub dismissals: Vec<Dismissal>,
    /// At the convergence check: the (muter, muted) pairs listed with `notifications`.
    pub quiet_now: std::collections::BTreeSet<(String, String)>,
    /// Every operation, as it completed: `invoke..complete op -> result`.
    pub log: Vec<(i64, String)>,
    pub violations: Vec<String>,
    /// Users handed out to late-push scenarios so far (after the two fans).
    pub focus_taken: usize,
    /// Per user, where their chain of stream sessions stands; every session so far.
    pub streams: BTreeMap<String, super::streams::Cursor>,
    pub sessions: Vec<super::streams::Session>,
}

/// The nonce in a post's text names its index in [`Model::posts`].
pub fn nonce_of(text: &str) -> Option<usize> {
    text.split_whitespace()
        .find_map(|w| w.strip_prefix("n:"))
        .and_then(|n| n.parse().ok())
}

pub struct Clock(Instant);

impl Clock {
    pub fn new() -> Clock {
        Clock(Instant::now())
    }
    pub fn now(&self) -> i64 {
        self.0.elapsed().as_micros() as i64
    }
}

impl Model {
    pub fn record(&mut self, span: Span, line: String) {
        let end = if span.acked() {
            format!("{:>10}", span.complete)
        } else {
            "   unknown".into()
        };
        self.log
            .push((span.invoke, format!("{:>10}..{end} {line}", span.invoke)));
    }

    pub fn violation(&mut self, what: String) {
        eprintln!("oracle: VIOLATION {what}");
        self.violations.push(what);
    }

    /// Learns the id of a post from a served text, for posts whose create was unknown.
    pub fn learn(&mut self, id: &str, text: &str) -> Option<usize> {
        if let Some(&i) = self.by_id.get(id) {
            return Some(i);
        }
        let i = nonce_of(text)?;
        let post = self.posts.get_mut(i)?;
        if post.id.is_none() {
            post.id = Some(id.to_owned());
            self.by_id.insert(id.to_owned(), i);
            return Some(i);
        }
        None
    }

    /// Whether the edge (or like) may have existed at some moment of `[t0, t1]`: some
    /// `on` sent before `t1` not surely undone by an `off` sent after it was answered
    /// and answered before `t0`.
    pub fn may_hold(ops: &[Toggle], t0: i64, t1: i64) -> bool {
        ops.iter().filter(|f| f.on && f.span.invoke < t1).any(|f| {
            !ops.iter()
                .any(|u| !u.on && u.span.invoke > f.span.complete && u.span.complete < t0)
        })
    }

    /// Whether the edge surely existed through `[t0, t1]`: an `on` answered before `t0`
    /// that no `off` sent before `t1` could have undone.
    pub fn surely_holds(ops: &[Toggle], t0: i64, t1: i64) -> bool {
        ops.iter()
            .filter(|f| f.on && f.span.complete < t0)
            .any(|f| {
                !ops.iter()
                    .any(|u| !u.on && u.span.invoke < t1 && u.span.complete > f.span.invoke)
            })
    }

    /// (surely effective, possibly effective) toggles in `on` direction: those that
    /// must have changed the state (no overlap, the state before surely the opposite),
    /// and every one that may have.
    pub fn effective(ops: &[Toggle], on: bool) -> (usize, usize) {
        let mut sorted: Vec<&Toggle> = ops.iter().collect();
        sorted.sort_by_key(|t| t.span.invoke);
        let mut surely = 0;
        for (i, op) in sorted.iter().enumerate() {
            if op.on != on || !op.span.acked() {
                continue;
            }
            if sorted
                .iter()
                .any(|o| !std::ptr::eq(*o, *op) && o.span.overlaps(&op.span))
            {
                continue;
            }
            let before = sorted[..i].iter().next_back();
            let fresh = match before {
                None => on,
                Some(prev) => prev.on != on && prev.span.acked(),
            };
            if fresh {
                surely += 1;
            }
        }
        (surely, ops.iter().filter(|o| o.on == on).count())
    }

    /// The window in which the edge as it stands (it exists now) was created. An off
    /// whose outcome is unknown (its request met a kill) may not have landed, and then
    /// the edge is older than it: only an acknowledged off bounds the creation below.
    pub fn creation_window(ops: &[Toggle]) -> socialite::derived::Window {
        let last_off = ops
            .iter()
            .filter(|u| !u.on && u.span.acked())
            .map(|u| u.span.invoke)
            .max();
        let candidates: Vec<&Toggle> = ops
            .iter()
            .filter(|f| f.on && last_off.is_none_or(|t| f.span.complete > t))
            .collect();
        let from = candidates.iter().map(|f| f.span.invoke).min().unwrap_or(0);
        let offs_end = ops.iter().filter(|u| !u.on).map(|u| u.span.complete).max();
        let to = if offs_end.is_none_or(|end| end < from) {
            // No unfollow can come after the first follow: the first answer proves it.
            candidates
                .iter()
                .map(|f| f.span.complete)
                .min()
                .unwrap_or(NEVER)
        } else {
            candidates
                .iter()
                .map(|f| f.span.complete)
                .chain(offs_end)
                .max()
                .unwrap_or(NEVER)
        };
        socialite::derived::Window { from, to }
    }

    /// Learns repost `id` of `post` by `user`, known to stand at `at`; what is wrong if
    /// the id is known as another pair's.
    pub fn learn_repost(&mut self, id: &str, user: &str, post: &str, at: i64) -> Option<String> {
        let seen = self
            .repost_ids
            .entry(id.to_owned())
            .or_insert_with(|| RepostSeen {
                user: user.to_owned(),
                post: post.to_owned(),
                known: at,
            });
        seen.known = seen.known.min(at);
        (seen.user != user || seen.post != post).then(|| {
            format!(
                "repost {id} served as {user}'s of {post}, known as {}'s of {}",
                seen.user, seen.post
            )
        })
    }

    pub fn repost_ops(&self, user: &str, post: &str) -> &[Toggle] {
        self.reposts
            .get(&(user.to_owned(), post.to_owned()))
            .map_or(&[], Vec::as_slice)
    }

    /// Whether repost `id` may have stood at some moment of `[t0, t1]`: a repost of the
    /// pair was sent before `t1`, no unrepost sent after the id was known to stand was
    /// answered before `t0`, and the original may have been live.
    pub fn repost_may_stand(&self, id: &str, t0: i64, t1: i64) -> bool {
        let Some(seen) = self.repost_ids.get(id) else {
            return false;
        };
        let ops = self.repost_ops(&seen.user, &seen.post);
        let sent = ops.iter().any(|t| t.on && t.span.invoke < t1);
        let undone = ops
            .iter()
            .any(|t| !t.on && t.span.invoke > seen.known && t.span.complete < t0);
        let original = self
            .by_id
            .get(&seen.post)
            .is_none_or(|&i| self.post_may_be_live(i, t0, t1));
        sent && !undone && original
    }

    pub fn post_may_be_live(&self, i: usize, t0: i64, t1: i64) -> bool {
        let p = &self.posts[i];
        p.create.invoke < t1 && !p.deletes.iter().any(|d| d.complete < t0)
    }

    pub fn post_surely_live(&self, i: usize, t0: i64, t1: i64) -> bool {
        let p = &self.posts[i];
        p.create.complete < t0 && !p.deletes.iter().any(|d| d.invoke < t1)
    }

    pub fn names_of(&self, user: &str, before: i64) -> Vec<&str> {
        self.users[user]
            .names
            .iter()
            .filter(|(_, s)| s.invoke < before)
            .map(|(n, _)| n.as_str())
            .collect()
    }

    /// The names `user` may show to a read spanning `[t0, t1]`: given before `t1`, and
    /// not replaced before `t0` by a rename that surely came after (names are immediate
    /// on every strategy: cache pages check their stamps against the profile).
    pub fn fresh_names_of(&self, user: &str, t0: i64, t1: i64) -> Vec<&str> {
        let names = &self.users[user].names;
        names
            .iter()
            .filter(|(_, s)| s.invoke < t1)
            .filter(|(_, s)| {
                !names
                    .iter()
                    .any(|(_, later)| s.complete < later.invoke && later.complete < t0)
            })
            .map(|(n, _)| n.as_str())
            .collect()
    }

    pub fn pair(&self, a: &str, b: &str) -> &[Toggle] {
        self.pairs
            .get(&(a.to_owned(), b.to_owned()))
            .map_or(&[], Vec::as_slice)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(on: bool, invoke: i64, complete: i64) -> Toggle {
        Toggle {
            on,
            span: Span { invoke, complete },
        }
    }

    #[test]
    fn toggles() {
        let ops = [t(true, 0, 10), t(false, 20, 30)];
        assert!(Model::may_hold(&ops, 25, 26));
        assert!(!Model::may_hold(&ops, 31, 40));
        assert!(Model::surely_holds(&ops, 11, 19));
        assert!(!Model::surely_holds(&ops, 11, 21));
        assert_eq!(Model::effective(&ops, true), (1, 1));
        let w = Model::creation_window(&[t(true, 0, 10), t(true, 20, 30)]);
        assert_eq!((w.from, w.to), (0, 10));
        let w = Model::creation_window(&[t(false, 0, 10), t(true, 5, 30)]);
        assert_eq!((w.from, w.to), (5, 30));
        // An unfollow that met a kill may not have landed: the follow before it may be
        // the one that made the edge.
        let w = Model::creation_window(&[t(true, 0, 10), t(false, 20, NEVER), t(true, 40, 50)]);
        assert_eq!((w.from, w.to), (0, NEVER));
    }

    #[test]
    fn hiding() {
        let mut m = Model::default();
        let key = ("r".to_owned(), "a".to_owned());
        m.blocks
            .insert(key.clone(), vec![t(true, 0, 10), t(false, 50, 60)]);
        assert!(m.surely_hidden("r", "a", 11, 49).is_some());
        assert!(
            m.surely_hidden("a", "r", 11, 49).is_some(),
            "a block hides both ways"
        );
        assert!(m.surely_hidden("r", "a", 11, 51).is_none());
        assert!(m.may_hide("r", "a", 55, 70));
        assert!(!m.may_hide("r", "a", 61, 70));
        m.blocks.clear();
        m.mutes.insert(key, vec![(t(true, 0, 10), Some(100))]);
        assert!(m.surely_hidden("r", "a", 11, 99).is_some());
        assert!(
            m.surely_hidden("r", "a", 11, 101).is_none(),
            "it may have expired"
        );
        assert!(
            m.surely_hidden("a", "r", 11, 99).is_none(),
            "a mute is one way"
        );
        assert!(m.may_hide("r", "a", 105, 106));
        assert!(!m.may_hide("r", "a", 111, 120));
    }
}
