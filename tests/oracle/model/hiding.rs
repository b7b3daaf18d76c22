//! What blocks and mutes allow, asked of the history: whether a block (either way) or a
//! mute, timed or not, surely hid an author's posts or an actor's notifications through
//! a read, or may have hidden them at some moment of it.

use super::{Model, TimedToggle, Toggle};

impl Model {
    /// Whether `author`'s posts were surely hidden from `reader` through `[t0, t1]`: a
    /// block either way, or a mute by the reader, answered before `t0`, that no undo
    /// sent before `t1` could have lifted, and (for a mute with a duration) whose expiry
    /// cannot have come before `t1`: the server dates it from its own clock somewhere in
    /// the request's flight, so no earlier than `invoke + duration`.
    pub fn surely_hidden(&self, reader: &str, author: &str, t0: i64, t1: i64) -> Option<String> {
        for (a, b) in [(reader, author), (author, reader)] {
            if Model::surely_holds(self.blocks_of(a, b), t0, t1) {
                return Some(format!("{a} blocks {b}"));
            }
        }
        Model::surely_muted(self.mutes_of(reader, author), t0, t1)
            .then(|| format!("{reader} mutes {author}"))
    }

    /// Whether a mute surely stood through `[t0, t1]` by its toggles. A timed mute that
    /// may have expired by `t1` counts as an unmute: it replaced any earlier mute's
    /// settings, so nothing it followed surely stands either.
    pub fn surely_muted(ops: &[TimedToggle], t0: i64, t1: i64) -> bool {
        let lasting: Vec<Toggle> = ops
            .iter()
            .map(|(t, lasts)| match lasts {
                Some(d) if t.on && t.span.invoke.saturating_add(*d) <= t1 => {
                    Toggle { on: false, ..*t }
                }
                _ => *t,
            })
            .collect();
        Model::surely_holds(&lasting, t0, t1)
    }

    /// Whether `actor`'s notifications were surely hidden from `user` through `[t0, t1]`:
    /// a block either way, or a mute of the actor that hides notifications, answered
    /// before `t0` and not liftable before `t1` (as [`Model::surely_hidden`]).
    pub fn surely_silenced(&self, user: &str, actor: &str, t0: i64, t1: i64) -> Option<String> {
        for (a, b) in [(user, actor), (actor, user)] {
            if Model::surely_holds(self.blocks_of(a, b), t0, t1) {
                return Some(format!("{a} blocks {b}"));
            }
        }
        let ops = self
            .notify_mutes
            .get(&(user.to_owned(), actor.to_owned()))
            .map_or(&[][..], Vec::as_slice);
        Model::surely_muted(ops, t0, t1).then(|| format!("{user} mutes {actor}'s notifications"))
    }

    /// Whether a block or mute between the two may have stood at some moment of `[t0, t1]`
    /// (a timed mute: until its latest possible expiry).
    pub fn may_hide(&self, reader: &str, author: &str, t0: i64, t1: i64) -> bool {
        let blocked = [(reader, author), (author, reader)]
            .iter()
            .any(|(a, b)| Model::may_hold(self.blocks_of(a, b), t0, t1));
        let muted = self.mutes_of(reader, author).iter().any(|(t, lasts)| {
            t.on && t.span.invoke < t1
                && lasts.is_none_or(|d| t.span.complete.saturating_add(d) > t0)
                && !self
                    .mutes_of(reader, author)
                    .iter()
                    .any(|(u, _)| !u.on && u.span.invoke > t.span.complete && u.span.complete < t0)
        });
        blocked || muted
    }

    pub fn blocks_of(&self, a: &str, b: &str) -> &[Toggle] {
        self.blocks
            .get(&(a.to_owned(), b.to_owned()))
            .map_or(&[], Vec::as_slice)
    }

    pub fn mutes_of(&self, a: &str, b: &str) -> &[TimedToggle] {
        self.mutes
            .get(&(a.to_owned(), b.to_owned()))
            .map_or(&[], Vec::as_slice)
    }
}
