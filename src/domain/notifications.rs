//! Notifications: what a user is told of others' acts on them, and the one rule for which
//! source causes which notification (shared by the notifications worker, its rebuild, the
//! derived definition in `derived/notifications.rs`, and anything that reads the event
//! log for them), so they cannot diverge.
//!
//! A notification is keyed by (user, type, actor, post): one per cause. Its id is a
//! [`PostId`]-shaped value that sorts in creation order (see [`notification_id`]).

use std::collections::BTreeMap;

use serde::Serialize;

use super::{PostId, ReplyTo};

/// Mentions notified per post; later ones are ignored (as hashtags are capped).
pub const MAX_MENTIONS_PER_POST: usize = 10;
/// The latest actors a group of notifications names.
pub const GROUP_ACTORS: usize = 3;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum NotificationType {
    Follow,
    Like,
    Repost,
    Reply,
    Mention,
}

impl NotificationType {
    pub const ALL: [NotificationType; 5] = [
        NotificationType::Follow,
        NotificationType::Like,
        NotificationType::Repost,
        NotificationType::Reply,
        NotificationType::Mention,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            NotificationType::Follow => "follow",
            NotificationType::Like => "like",
            NotificationType::Repost => "repost",
            NotificationType::Reply => "reply",
            NotificationType::Mention => "mention",
        }
    }

    pub fn parse(s: &str) -> Option<NotificationType> {
        NotificationType::ALL.into_iter().find(|t| t.as_str() == s)
    }
}

/// A stored notification.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Notification {
    /// Sorts in creation order within the user's notifications.
    pub id: PostId,
    pub user: String,
    pub kind: NotificationType,
    pub actor: String,
    /// The post it is about: the liked post, the reply, the mentioning post; `None` for
    /// follows.
    pub post: Option<PostId>,
    pub at_ms: i64,
}

/// One group of the grouped view: a user's notifications of one type about one post (or,
/// for follows, of the type alone).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotificationGroup {
    pub kind: NotificationType,
    pub post: Option<PostId>,
    pub count: u64,
    /// The latest actors, newest first, at most [`GROUP_ACTORS`].
    pub actors: Vec<String>,
    /// The id of the group's latest notification: the group's place in the page order.
    pub latest_id: PostId,
    pub latest_at_ms: i64,
}

/// Which notifications a read returns.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NotificationFilter {
    /// Only these types; empty means every type.
    pub types: Vec<NotificationType>,
    /// Actors whose notifications are not served (blocked or muted by the reader).
    pub hidden: Vec<String>,
}

impl NotificationFilter {
    pub fn admits(&self, kind: NotificationType, actor: &str) -> bool {
        (self.types.is_empty() || self.types.contains(&kind))
            && !self.hidden.iter().any(|h| h == actor)
    }
}

/// Tails of ids made from a change (`seq`) stay below this bit; rebuilt ids set it, so the
/// two never collide.
const REBUILT_BIT: u64 = 1 << 47;

/// The id of a notification caused at `at_ms` by the change at feed order `seq`: its time,
/// then the change's feed order (its low 47 bits: two changes in one millisecond differ
/// there on both stores). One change notifies a user at most once, so ids are unique per
/// user.
pub fn notification_id(at_ms: i64, seq: u64) -> PostId {
    PostId::at(at_ms, seq & (REBUILT_BIT - 1))
}

/// The id of a rebuilt notification: its time, then its rank among the user's rebuilt
/// notifications (with the rebuilt bit set, so it never equals a change's id).
pub fn rebuilt_notification_id(at_ms: i64, rank: u64) -> PostId {
    PostId::at(at_ms, REBUILT_BIT | (rank & (REBUILT_BIT - 1)))
}

fn id_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

/// The distinct user ids mentioned in `text`, in order of first appearance, at most
/// [`MAX_MENTIONS_PER_POST`].
///
/// Parsed like hashtags: an `@` starts a mention only at the start of the text or after a
/// character that cannot be part of one (so `a@b`, `@@b` and `mail@host` hold none); the
/// id is the longest run of ASCII letters, digits and `_` after it (what
/// `validate_user_id` admits), taken only when it is 1-32 long (a longer run is no
/// mention). Ids are case-sensitive, as user ids are.
pub fn mentions(text: &str) -> Vec<String> {
    let bytes = text.as_bytes();
    let mut found: Vec<String> = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let starts = bytes[i] == b'@'
            && (i == 0 || {
                // The character before, which may be multi-byte (never an id byte then).
                let p = bytes[i - 1];
                !id_byte(p) && p != b'@'
            });
        if !starts {
            i += 1;
            continue;
        }
        let run = bytes[i + 1..].iter().take_while(|b| id_byte(**b)).count();
        let id = &text[i + 1..i + 1 + run];
        i += 1 + run;
        if !(1..=32).contains(&run) {
            continue;
        }
        if !found.iter().any(|f| f == id) {
            found.push(id.to_owned());
            if found.len() == MAX_MENTIONS_PER_POST {
                break;
            }
        }
    }
    found
}

/// Who a new post notifies, and of what: the author of the post it answers (`reply`), then
/// each user it mentions (`mention`), never its own author, and a user it both answers and
/// mentions only once (as `reply`). Whether a mentioned user exists is the caller's check
/// (see [`mention_counts`]).
pub fn post_notifies(
    author: &str,
    text: &str,
    reply_to: Option<&ReplyTo>,
) -> Vec<(String, NotificationType)> {
    let mut out = Vec::new();
    if let Some(parent) = reply_to
        && parent.author != author
    {
        out.push((parent.author.clone(), NotificationType::Reply));
    }
    for user in mentions(text) {
        if user != author && reply_to.is_none_or(|p| p.author != user) {
            out.push((user, NotificationType::Mention));
        }
    }
    out
}

/// Whether a mention of a user created at `user_created_ms` in a post made at
/// `post_ms` notifies them: only users who existed when the post was made, so the
/// worker (which sees the post before a later sign-up) and a rebuild agree.
pub fn mention_counts(user_created_ms: i64, post_ms: i64) -> bool {
    user_created_ms <= post_ms
}

/// Whether `actor` acting on something of `user`'s notifies them: never of one's own act.
pub fn notifies(user: &str, actor: &str) -> bool {
    user != actor
}

/// The grouped view of one user's notifications (any order in): one group per (type,
/// post), follows per type alone, newest first by each group's latest notification.
pub fn group_notifications(notifications: &[Notification]) -> Vec<NotificationGroup> {
    let mut by_group: BTreeMap<(NotificationType, Option<PostId>), Vec<&Notification>> =
        BTreeMap::new();
    for n in notifications {
        by_group.entry((n.kind, n.post)).or_default().push(n);
    }
    let mut out: Vec<NotificationGroup> = by_group
        .into_iter()
        .map(|((kind, post), mut items)| {
            items.sort_by_key(|n| std::cmp::Reverse(n.id));
            NotificationGroup {
                kind,
                post,
                count: items.len() as u64,
                actors: items
                    .iter()
                    .take(GROUP_ACTORS)
                    .map(|n| n.actor.clone())
                    .collect(),
                latest_id: items[0].id,
                latest_at_ms: items[0].at_ms,
            }
        })
        .collect();
    out.sort_by_key(|g| std::cmp::Reverse(g.latest_id));
    out
}

/// A post as the notifications see it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotifyPost {
    pub id: PostId,
    pub author: String,
    pub text: String,
    pub reply_to: Option<ReplyTo>,
}

/// The sources notifications derive from, as they stand.
#[derive(Debug, Clone, Default)]
pub struct NotifySources {
    /// Creation time per user.
    pub users: BTreeMap<String, i64>,
    /// (follower, followee) → created_at.
    pub follows: BTreeMap<(String, String), i64>,
    /// (user, post) → created_at.
    pub likes: BTreeMap<(String, PostId), i64>,
    /// (reposter, post) → the repost's time (its id's).
    pub reposts: BTreeMap<(String, PostId), i64>,
    pub posts: BTreeMap<PostId, NotifyPost>,
    /// What each user took away from their notifications (absent: nothing).
    pub dismissals: BTreeMap<String, Dismissals>,
}

/// What a user took away from their notifications: a source of its own, which the
/// worker, every rebuild, the audit and every view respect, so a rebuild never brings a
/// dismissed notification back. A notification is hidden when its time is at or before
/// the user's clear (`cleared_ms`), or at or before the dismissal of its cause (its
/// type, actor and post): a cause done again after its dismissal (a like undone and
/// given again) notifies again. Times are the causes' (a rebuilt notification's) or
/// their changes' (the worker's, a little later): both at or before the instant of the
/// dismissal of a notification that was shown.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Dismissals {
    /// Every notification at or before this time is cleared.
    pub cleared_ms: Option<i64>,
    /// (type, actor, post) → the time up to which that cause's notification is dismissed.
    pub dismissed: BTreeMap<(NotificationType, String, Option<PostId>), i64>,
}

impl Dismissals {
    /// Whether the notification of this cause, made at `at_ms`, is taken away.
    pub fn hides(
        &self,
        kind: NotificationType,
        actor: &str,
        post: Option<PostId>,
        at_ms: i64,
    ) -> bool {
        self.cleared_ms.is_some_and(|c| at_ms <= c)
            || self
                .dismissed
                .get(&(kind, actor.to_owned(), post))
                .is_some_and(|d| at_ms <= *d)
    }

    /// Whether it hides `n`.
    pub fn hides_notification(&self, n: &Notification) -> bool {
        self.hides(n.kind, &n.actor, n.post, n.at_ms)
    }

    pub fn is_empty(&self) -> bool {
        self.cleared_ms.is_none() && self.dismissed.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mentions_are_parsed_like_hashtags() {
        assert_eq!(mentions("hi @alice and @bob_2, @alice"), ["alice", "bob_2"]);
        assert_eq!(mentions("mail a@b @@c @ alone @!"), Vec::<String>::new());
        assert_eq!(mentions("(@x) @y. é@z"), ["x", "y", "z"]);
        assert_eq!(mentions("@Ann @ann"), ["Ann", "ann"]);
        assert!(mentions(&format!("@{}", "a".repeat(33))).is_empty());
        assert_eq!(mentions(&format!("@{}", "a".repeat(32))).len(), 1);
        let many: String = (0..15).map(|i| format!("@u{i} ")).collect();
        assert_eq!(mentions(&many).len(), MAX_MENTIONS_PER_POST);
    }

    #[test]
    fn a_post_never_notifies_its_author_and_a_reply_target_once() {
        let parent = ReplyTo {
            post: PostId::at(1_700_000_000_000, 1),
            author: "bob".into(),
        };
        assert_eq!(
            post_notifies("al", "@al @bob @cy", Some(&parent)),
            [
                ("bob".to_owned(), NotificationType::Reply),
                ("cy".to_owned(), NotificationType::Mention)
            ]
        );
        let own = ReplyTo {
            author: "al".into(),
            ..parent
        };
        assert!(post_notifies("al", "thread", Some(&own)).is_empty());
    }

    #[test]
    fn ids_sort_by_time_and_never_collide_with_rebuilt_ones() {
        let a = notification_id(1_700_000_000_000, 5);
        let b = notification_id(1_700_000_000_000, 6);
        let c = notification_id(1_700_000_000_001, 1);
        assert!(a < b && b < c);
        assert_eq!(a.timestamp_ms(), 1_700_000_000_000);
        assert_ne!(
            notification_id(1_700_000_000_000, 3),
            rebuilt_notification_id(1_700_000_000_000, 3)
        );
    }
}
