//! One user's notifications, both ways, judged by the derived definition
//! ([`crate::derived::notifications::expected`]) over a slice of the sources:
//!
//! - **Missing**, from the user as actor: the notifications their follows, likes,
//!   reposts and posts imply (the slice the per-user pass already read, plus their
//!   reposts, the posts they like or repost and the users their posts mention), each
//!   looked up by its key.
//! - **Extra**, from the user as recipient: their stored notifications a page at a time,
//!   each page against the sources its notifications name (the follow edge, the like,
//!   the repost, the post, the user's creation time); one the definition does not imply
//!   has a cause that no longer stands, or was dismissed or cleared by the user.
//!
//! Every notification is one user's as recipient and another's as actor, so the pass over
//! every user covers both ways of each one. Memory: one page, and the user's own slice.
//! Notifications between users in a block stay stored (they are hidden at read time, as
//! a mute hides them), so neither way looks at blocks or mutes.

use std::collections::BTreeSet;

use super::slice::PAGE;
use super::{Finding, Fix, Kind, Settings, Tally};
use crate::derived::Sources;
use crate::derived::notifications::{NotificationKey, expected, key_of};
use crate::domain::{
    NotificationFilter, NotificationType, NotifyPost, NotifySources, Post, PostId, User,
    post_notifies,
};
use crate::store::{Store, StoreResult};

fn finding(user: &str, detail: String) -> Finding {
    Finding::of_user(Kind::Notifications, user, detail, Fix::Rebuild)
}

fn describe(key: &NotificationKey) -> String {
    let (user, kind, actor, post) = key;
    match post {
        Some(post) => format!(
            "{user}'s {} notification by {actor} of {post}",
            kind.as_str()
        ),
        None => format!("{user}'s {} notification by {actor}", kind.as_str()),
    }
}

fn notify_post(post: &Post) -> NotifyPost {
    NotifyPost {
        id: post.id,
        author: post.author.clone(),
        text: post.text.clone(),
        reply_to: post.reply_to.clone(),
    }
}

/// `user`'s notifications both ways into `tally`; `sources` is the user's slice (their
/// edges, live posts and likes) as the per-user pass read it.
pub(super) async fn check(
    store: &Store,
    settings: &Settings,
    user: &User,
    sources: &Sources,
    tally: &mut Tally,
) -> StoreResult<()> {
    tally.checked(Kind::Notifications, 1);
    for key in missing(store, user, sources).await? {
        let detail = format!("{} is missing: its cause stands", describe(&key));
        tally.found(finding(&user.id, detail), settings.keep);
    }
    // The stored id is part of the finding: a notification the worker made anew
    // between two checks (a follow undone and done again) has another, so it never
    // reads as the same finding found again.
    for (key, id) in extra(store, user).await? {
        let detail = format!(
            "{} is held: its cause does not stand (notification {id})",
            describe(&key)
        );
        tally.found(finding(&user.id, detail), settings.keep);
    }
    Ok(())
}

/// The notifications `user`'s own acts imply that no notification is stored under.
async fn missing(
    store: &Store,
    user: &User,
    sources: &Sources,
) -> StoreResult<Vec<NotificationKey>> {
    let id = user.id.as_str();
    let mut s = NotifySources::default();
    for (edge, _) in sources.follows.iter().filter(|((f, _), _)| f == id) {
        s.follows.insert(edge.clone(), 0);
    }
    for like in sources.likes.iter().filter(|(u, _)| u == id) {
        s.likes.insert(like.clone(), 0);
    }
    let mut mentioned = BTreeSet::new();
    for (post, p) in sources.posts.iter().filter(|(_, p)| p.author == id) {
        let reply_to = p.reply_to.clone();
        for (target, kind) in post_notifies(id, &p.text, reply_to.as_ref()) {
            if kind == NotificationType::Mention {
                mentioned.insert(target);
            }
        }
        let post = NotifyPost {
            id: *post,
            author: p.author.clone(),
            text: p.text.clone(),
            reply_to,
        };
        s.posts.insert(post.id, post);
    }
    // The user's reposts, a page at a time.
    let mut before = None;
    loop {
        let page = store.reposts.reposts_by(id, before, PAGE).await?;
        for repost in &page {
            s.reposts
                .insert((id.to_owned(), repost.post.post), repost.id.timestamp_ms());
        }
        if page.len() < PAGE {
            break;
        }
        before = page.last().map(|r| r.id);
    }
    // The posts the user likes or reposts, for their authors (a like of a deleted post
    // notifies no one, as the definition says when the post is absent).
    let liked: Vec<PostId> = s
        .likes
        .keys()
        .chain(s.reposts.keys())
        .map(|(_, p)| *p)
        .collect();
    for chunk in liked.chunks(PAGE) {
        for post in store.content.posts_by_ids(chunk, &[]).await? {
            s.posts.entry(post.id).or_insert_with(|| notify_post(&post));
        }
    }
    for target in mentioned {
        if let Some(u) = store.users.user(&target).await? {
            s.users.insert(u.id, u.created_at_ms);
        }
    }
    // The liked posts' own replies and mentions are their authors' acts, not this user's.
    let implied = expected(&s);
    let want: Vec<NotificationKey> = implied
        .keys()
        .filter(|(_, _, actor, _)| actor == id)
        .cloned()
        .collect();
    let mut absent = Vec::new();
    for chunk in want.chunks(PAGE) {
        let held: BTreeSet<NotificationKey> = store
            .audit
            .notifications_held(chunk)
            .await?
            .into_iter()
            .collect();
        absent.extend(chunk.iter().filter(|k| !held.contains(*k)).cloned());
    }
    // Those their recipients dismissed or cleared are not missing. This slice dates
    // follows and likes at 0, so any dismissal of the cause, or any clear, covers them:
    // a cause done again after its dismissal is not checked this way (the recipient's
    // own pass, `extra`, still checks what is stored).
    let mut dismissals: std::collections::BTreeMap<String, crate::domain::Dismissals> =
        Default::default();
    let mut out = Vec::new();
    for key in absent {
        let (user, kind, actor, post) = &key;
        if !dismissals.contains_key(user) {
            let d = store.notifications.dismissals(user).await?;
            dismissals.insert(user.clone(), d);
        }
        let at = implied.get(&key).copied().unwrap_or(0);
        if !dismissals[user].hides(*kind, actor, *post, at) {
            out.push(key);
        }
    }
    Ok(out)
}

/// `user`'s stored notifications whose cause no longer stands, with their ids.
async fn extra(store: &Store, user: &User) -> StoreResult<Vec<(NotificationKey, PostId)>> {
    let id = user.id.as_str();
    let all = NotificationFilter::default();
    let dismissals = store.notifications.dismissals(id).await?;
    let mut out = Vec::new();
    let mut before = None;
    loop {
        let page = store
            .notifications
            .notifications(id, &all, before, PAGE)
            .await?;
        let mut s = NotifySources::default();
        s.users.insert(id.to_owned(), user.created_at_ms);
        let mut likes = Vec::new();
        let mut reposts: Vec<(String, PostId)> = Vec::new();
        let mut posts = Vec::new();
        for n in &page {
            match n.kind {
                NotificationType::Follow => {
                    if store.graph.edge(&n.actor, id).await?.is_some() {
                        s.follows.insert((n.actor.clone(), id.to_owned()), 0);
                    }
                }
                NotificationType::Like => {
                    likes.extend(n.post.map(|p| (n.actor.clone(), p)));
                    posts.extend(n.post);
                }
                NotificationType::Repost => {
                    reposts.extend(n.post.map(|p| (n.actor.clone(), p)));
                    posts.extend(n.post);
                }
                _ => posts.extend(n.post),
            }
        }
        for like in store.activity.likes_standing(&likes).await? {
            s.likes.insert(like, 0);
        }
        if !reposts.is_empty() {
            // One query for the page's reposts: those of its posts by its reposters,
            // kept when they pair up as a notification names them.
            let (actors, reposted): (Vec<String>, Vec<PostId>) = reposts.iter().cloned().unzip();
            for r in store
                .reposts
                .reposts_of(&reposted, &actors, PostId::MAX)
                .await?
            {
                let pair = (r.user, r.post.post);
                if reposts.contains(&pair) {
                    s.reposts.insert(pair, r.id.timestamp_ms());
                }
            }
        }
        for post in store.content.posts_by_ids(&posts, &[]).await? {
            s.posts.insert(post.id, notify_post(&post));
        }
        let implied = expected(&s);
        // A stored notification the user dismissed or cleared is held as wrongly as
        // one whose cause is gone.
        out.extend(
            page.iter()
                .filter(|n| !implied.contains_key(&key_of(n)) || dismissals.hides_notification(n))
                .map(|n| (key_of(n), n.id)),
        );
        if page.len() < PAGE {
            return Ok(out);
        }
        before = page.last().map(|n| n.id);
    }
}
