//! What a store's notifications should be, given the sources as they stand: one
//! notification per standing cause (a follow edge, a like or a repost of someone else's live post,
//! a live reply to someone else's post, a live post mentioning a user who existed when it was
//! made), never of one's own act; and the grouped view over them. The worker's rebuild writes
//! exactly this; tests, the audit and the history checker compare against it.
//!
//! Times are those the sources record (an edge's or like's `created_at`, a post's id);
//! the worker dates a notification by its change instead, so comparisons use
//! [`NotificationKey`]s, not times.

use std::collections::{BTreeMap, BTreeSet};

use crate::domain::{
    Notification, NotificationGroup, NotificationType, PostId, group_notifications, mention_counts,
    notifies, post_notifies, rebuilt_notification_id,
};
pub use crate::domain::{NotifyPost, NotifySources};

/// (user, type, actor, post): what identifies a notification.
pub type NotificationKey = (String, NotificationType, String, Option<PostId>);

pub fn key_of(n: &Notification) -> NotificationKey {
    (n.user.clone(), n.kind, n.actor.clone(), n.post)
}

/// Every notification the sources imply, with the time of its cause, keyed: one per
/// standing cause, less those its recipient dismissed or cleared (`Dismissals`).
pub fn expected(sources: &NotifySources) -> BTreeMap<NotificationKey, i64> {
    let mut out = implied(sources);
    out.retain(|(user, kind, actor, post), at| {
        sources
            .dismissals
            .get(user)
            .is_none_or(|d| !d.hides(*kind, actor, *post, *at))
    });
    out
}

/// Every notification the standing causes imply, dismissed or not.
fn implied(sources: &NotifySources) -> BTreeMap<NotificationKey, i64> {
    let mut out = BTreeMap::new();
    for ((follower, followee), at) in &sources.follows {
        if notifies(followee, follower) {
            let key = (
                followee.clone(),
                NotificationType::Follow,
                follower.clone(),
                None,
            );
            out.insert(key, *at);
        }
    }
    for ((user, post), at) in &sources.likes {
        let Some(liked) = sources.posts.get(post) else {
            continue;
        };
        if notifies(&liked.author, user) {
            let key = (
                liked.author.clone(),
                NotificationType::Like,
                user.clone(),
                Some(*post),
            );
            out.insert(key, *at);
        }
    }
    for ((user, post), at) in &sources.reposts {
        let Some(reposted) = sources.posts.get(post) else {
            continue;
        };
        if notifies(&reposted.author, user) {
            let key = (
                reposted.author.clone(),
                NotificationType::Repost,
                user.clone(),
                Some(*post),
            );
            out.insert(key, *at);
        }
    }
    for post in sources.posts.values() {
        let at = post.id.timestamp_ms();
        for (user, kind) in post_notifies(&post.author, &post.text, post.reply_to.as_ref()) {
            let counts = match kind {
                NotificationType::Mention => sources
                    .users
                    .get(&user)
                    .is_some_and(|created| mention_counts(*created, at)),
                _ => true,
            };
            if counts {
                out.insert((user, kind, post.author.clone(), Some(post.id)), at);
            }
        }
    }
    out
}

/// The notifications of [`expected`] with rebuilt ids: per user, ranked by (time, key),
/// so ids sort in time order and are unique per user.
pub fn rebuilt(sources: &NotifySources) -> Vec<Notification> {
    let mut by_user: BTreeMap<String, Vec<(i64, NotificationKey)>> = BTreeMap::new();
    for (key, at) in expected(sources) {
        by_user.entry(key.0.clone()).or_default().push((at, key));
    }
    let mut out = Vec::new();
    for (_, mut items) in by_user {
        items.sort();
        for (rank, (at, (user, kind, actor, post))) in items.into_iter().enumerate() {
            out.push(Notification {
                id: rebuilt_notification_id(at, rank as u64),
                user,
                kind,
                actor,
                post,
                at_ms: at,
            });
        }
    }
    out
}

/// The grouped view of one user's notifications (any order in): one group per (type,
/// post), follows per type alone, newest first by each group's latest notification.
pub fn groups(notifications: &[Notification]) -> Vec<NotificationGroup> {
    group_notifications(notifications)
}

/// The keys of `notifications`, for comparing a store with [`expected`].
pub fn keys(notifications: &[Notification]) -> BTreeSet<NotificationKey> {
    notifications.iter().map(key_of).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::ReplyTo;

    fn post(id: PostId, author: &str, text: &str, reply_to: Option<ReplyTo>) -> NotifyPost {
        NotifyPost {
            id,
            author: author.into(),
            text: text.into(),
            reply_to,
        }
    }

    #[test]
    fn each_cause_notifies_its_target_and_never_the_actor() {
        let t = 1_700_000_000_000;
        let p1 = PostId::at(t, 1);
        let p2 = PostId::at(t + 5, 1);
        let mut s = NotifySources::default();
        for u in ["al", "bo", "cy"] {
            s.users.insert(u.into(), t - 1);
        }
        s.users.insert("late".into(), t + 100);
        s.follows.insert(("bo".into(), "al".into()), t);
        s.likes.insert(("bo".into(), p1), t + 1);
        s.likes.insert(("al".into(), p1), t + 2);
        s.posts
            .insert(p1, post(p1, "al", "hi @al @cy @late @nobody", None));
        let reply = ReplyTo {
            post: p1,
            author: "al".into(),
        };
        s.posts.insert(p2, post(p2, "bo", "@al yes", Some(reply)));
        let keys: Vec<_> = expected(&s).into_keys().collect();
        use NotificationType::*;
        assert_eq!(
            keys,
            [
                ("al".into(), Follow, "bo".into(), None),
                ("al".into(), Like, "bo".into(), Some(p1)),
                ("al".into(), Reply, "bo".into(), Some(p2)),
                ("cy".into(), Mention, "al".into(), Some(p1)),
            ]
        );
        let rebuilt = rebuilt(&s);
        let al: Vec<_> = rebuilt.iter().filter(|n| n.user == "al").collect();
        assert!(al.windows(2).all(|w| w[0].id < w[1].id));
        let g = groups(
            &rebuilt
                .iter()
                .filter(|n| n.user == "al")
                .cloned()
                .collect::<Vec<_>>(),
        );
        assert_eq!(g.len(), 3);
        assert_eq!(g[0].kind, Reply);
    }
}
