//! Dismissals and clears of notifications, asked of the history ([the
//! API](../../../docs/api-personal.md), "Dismissing and clearing"). A dismissal records its
//! notification's cause (type, actor, post) up to the server's instant (at or after the
//! request was sent), a clear every notification of the user up to its instant; both are
//! immediate: the write that records them removes what they hide and moves the groups, and
//! every page reads them. A notification's time is its cause's write (or that write's
//! change), so a cause made before the dismissal was sent is hidden for good, and one made
//! again after the dismissal was answered notifies again: past the answer by more than the
//! store's time grain (`slack`: the MongoDB stand-in dates changes to the second).

use super::{Model, NEVER, Span};

/// The cause a dismissal named, in `/v1`'s words: (type, actor, post id).
pub type Cause = (String, String, Option<String>);

/// One dismissal (`cause` set) or clear (`cause` `None`) of `user`'s notifications.
#[derive(Debug, Clone)]
pub struct Dismissal {
    pub user: String,
    pub cause: Option<Cause>,
    pub span: Span,
}

/// What the dismissals of the history make of a notification that stands at the end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fate {
    Shown,
    Hidden,
    /// A dismissal or clear whose outcome is unknown, or that raced the cause.
    Unsure,
}

impl Dismissal {
    fn covers(&self, user: &str, kind: &str, actor: &str, post: Option<&str>) -> bool {
        // A refused one (never sent, or answered 404) is kept with `invoke` NEVER.
        self.user == user
            && self.span.invoke != NEVER
            && self
                .cause
                .as_ref()
                .is_none_or(|(k, a, p)| k == kind && a == actor && p.as_deref() == post)
    }

    fn describe(&self) -> String {
        let what = match &self.cause {
            Some((k, a, p)) => format!("dismissal of {k} by {a} ({p:?})"),
            None => "clear".to_owned(),
        };
        format!(
            "{}'s {what} [{}..{}]",
            self.user, self.span.invoke, self.span.complete
        )
    }
}

impl Model {
    /// The spans of every write that may have made a standing instance of the cause: the
    /// follows, likes or reposts sent (not the undos), or the post's create. Empty when
    /// the history cannot name them (a post whose create's answer was lost).
    fn cause_spans(&self, user: &str, kind: &str, actor: &str, post: Option<&str>) -> Vec<Span> {
        let ons = |ops: &[super::Toggle]| -> Vec<Span> {
            ops.iter().filter(|t| t.on).map(|t| t.span).collect()
        };
        match (kind, post) {
            ("follow", _) => ons(self.pair(actor, user)),
            ("like", Some(p)) => ons(self
                .likes
                .get(&(actor.to_owned(), p.to_owned()))
                .map_or(&[], Vec::as_slice)),
            ("repost", Some(p)) => ons(self.repost_ops(actor, p)),
            (_, Some(p)) => self
                .by_id
                .get(p)
                .map(|&i| vec![self.posts[i].create])
                .unwrap_or_default(),
            _ => Vec::new(),
        }
    }

    /// During the run: the acknowledged dismissal or clear, answered before `t0`, that
    /// surely took away this notification of `user`'s: every write that may have made
    /// its cause was answered before the dismissal was sent.
    pub fn surely_dismissed(
        &self,
        user: &str,
        kind: &str,
        actor: &str,
        post: Option<&str>,
        t0: i64,
    ) -> Option<String> {
        let spans = self.cause_spans(user, kind, actor, post);
        let made = spans.iter().map(|s| s.complete).max()?;
        self.dismissals
            .iter()
            .filter(|d| d.span.acked() && d.span.complete < t0)
            .filter(|d| d.covers(user, kind, actor, post))
            .find(|d| made < d.span.invoke)
            .map(Dismissal::describe)
    }

    /// At the end: what the dismissals make of a notification of `user`'s that stands,
    /// its cause's instance made in `made` (the window of the standing edge, or the
    /// post's create). Hidden when an acknowledged one was sent after `made` closed;
    /// shown when every one that may have happened was answered more than `slack` before
    /// `made` opened.
    pub fn dismissal_fate(
        &self,
        user: &str,
        (kind, actor, post): (&str, &str, Option<&str>),
        made: (i64, i64),
        slack: i64,
    ) -> Fate {
        let mut fate = Fate::Shown;
        for d in self
            .dismissals
            .iter()
            .filter(|d| d.covers(user, kind, actor, post))
        {
            if d.span.acked() && made.1 < d.span.invoke {
                return Fate::Hidden;
            }
            if d.span.complete == NEVER || made.0 <= d.span.complete.saturating_add(slack) {
                fate = Fate::Unsure;
            }
        }
        fate
    }

    /// The window in which the standing instance of a cause was made (see
    /// [`Model::dismissal_fate`]), when the history names its writes.
    pub fn made_window(
        &self,
        user: &str,
        kind: &str,
        actor: &str,
        post: Option<&str>,
    ) -> Option<(i64, i64)> {
        let toggles = match (kind, post) {
            ("follow", _) => Some(self.pair(actor, user)),
            ("like", Some(p)) => Some(
                self.likes
                    .get(&(actor.to_owned(), p.to_owned()))
                    .map_or(&[][..], Vec::as_slice),
            ),
            ("repost", Some(p)) => Some(self.repost_ops(actor, p)),
            _ => None,
        };
        match toggles {
            Some(ops) if ops.iter().any(|t| t.on) => {
                let w = Model::creation_window(ops);
                Some((w.from, w.to))
            }
            Some(_) => None,
            None => {
                let span = self.cause_spans(user, kind, actor, post).pop()?;
                Some((span.invoke, span.complete))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::Toggle;
    use super::*;

    #[test]
    fn fates() {
        let mut m = Model::default();
        let span = |invoke, complete| Span { invoke, complete };
        m.pairs.insert(
            ("a".into(), "u".into()),
            vec![Toggle {
                on: true,
                span: span(0, 10),
            }],
        );
        m.dismissals.push(Dismissal {
            user: "u".into(),
            cause: Some(("follow".into(), "a".into(), None)),
            span: span(20, 30),
        });
        assert!(m.surely_dismissed("u", "follow", "a", None, 31).is_some());
        assert!(m.surely_dismissed("u", "follow", "a", None, 29).is_none());
        assert!(m.surely_dismissed("u", "like", "a", None, 31).is_none());
        let cause = ("follow", "a", None);
        assert_eq!(m.dismissal_fate("u", cause, (0, 10), 0), Fate::Hidden);
        assert_eq!(m.dismissal_fate("u", cause, (25, 40), 0), Fate::Unsure);
        assert_eq!(m.dismissal_fate("u", cause, (31, 40), 0), Fate::Shown);
        assert_eq!(m.dismissal_fate("u", cause, (31, 40), 5), Fate::Unsure);
        m.dismissals[0].span.complete = NEVER;
        assert_eq!(m.dismissal_fate("u", cause, (0, 10), 0), Fate::Unsure);
    }
}
