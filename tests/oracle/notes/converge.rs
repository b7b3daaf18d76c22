//! Notifications after quiescence: each user's notifications, plain and grouped, against
//! `socialite::derived::notifications`, fed the sources the run left (a like whose
//! outcome the history leaves unknown may go either way).

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;
use socialite::derived::Sources;
use socialite::derived::notifications::{NotificationKey, expected};
use socialite::domain::{NotificationType, NotifyPost, NotifySources, PostId};

use super::super::masto::{self, Api};
use super::super::model::Model;
use super::super::world::World;

fn kind_of(name: &str) -> Option<NotificationType> {
    NotificationType::parse(name)
}

/// The notifications the sources imply (keyed), and those that hang on a like whose
/// outcome the history leaves unknown (either way is right).
fn model_keys(
    model: &Model,
    s: &Sources,
    now: i64,
) -> (BTreeSet<NotificationKey>, BTreeSet<NotificationKey>) {
    let mut ns = NotifySources::default();
    for user in s.users.keys() {
        ns.users.insert(user.clone(), i64::MIN);
    }
    for pair in s.follows.keys() {
        ns.follows.insert(pair.clone(), 0);
    }
    for (id, p) in s.posts.iter().filter(|(_, p)| p.live()) {
        let post = NotifyPost {
            id: *id,
            author: p.author.clone(),
            text: p.text.clone(),
            reply_to: p.reply_to.clone(),
        };
        ns.posts.insert(*id, post);
    }
    let mut unsure = BTreeSet::new();
    for ((user, post), ops) in &model.likes {
        let Some(id) = post.parse::<PostId>().ok() else {
            continue;
        };
        let Some(p) = ns.posts.get(&id) else { continue };
        if Model::surely_holds(ops, now, now) {
            ns.likes.insert((user.clone(), id), 0);
        } else if Model::may_hold(ops, now, now) && p.author != *user {
            unsure.insert((
                p.author.clone(),
                NotificationType::Like,
                user.clone(),
                Some(id),
            ));
        }
    }
    for r in s.reposts.values() {
        if ns.posts.contains_key(&r.post.post) {
            ns.reposts
                .insert((r.user.clone(), r.post.post), r.id.timestamp_ms());
        }
    }
    (expected(&ns).into_keys().collect(), unsure)
}

/// After quiescence: each user's notifications, walked to the end, are the model's
/// (less what blocks and notification-hiding mutes standing now hide), newest first once
/// each; and their grouped view agrees with them. `quiet`: the (muter, muted) pairs
/// listed now with `notifications: true`.
pub async fn converge(
    world: &World,
    s: &Sources,
    quiet: &BTreeSet<(String, String)>,
) -> Vec<String> {
    let mut faults = Vec::new();
    let (all, unsure) = model_keys(&world.model(), s, world.now());
    let hidden = |user: &str, actor: &str| {
        let (u, a) = (user.to_owned(), actor.to_owned());
        s.blocks.contains(&(u.clone(), a.clone()))
            || s.blocks.contains(&(a.clone(), u.clone()))
            || quiet.contains(&(u, a))
    };
    for (n, user) in s.users.keys().enumerate() {
        let target = world.cluster.up()[0].clone();
        let mut plain = None;
        // The plain list through `/v1`, and for a seeded half of the users through the
        // Mastodon view too, each held to the model alike; the grouped view against the
        // `/v1` list.
        for &api in masto::at_convergence(world, n) {
            let via = masto::via(target.slot, api);
            let path = match api {
                Api::V1 => format!("/v1/users/{user}/notifications?limit=100"),
                Api::Masto => "/api/v1/notifications?limit=40".to_owned(),
            };
            let map = |n: &Value| masto::notification_item(user, n);
            let items = match masto::walk(world, &target, api, user, &path, "items", map).await {
                Ok(items) => items,
                Err(e) => {
                    faults.push(e);
                    continue;
                }
            };
            // (id, key) as served, newest first.
            let mut served: Vec<(String, NotificationKey)> = Vec::new();
            for item in &items {
                let kind = item["type"].as_str().unwrap_or_default();
                let Some(kind) = kind_of(kind) else {
                    faults.push(format!(
                        "{user}'s notifications via {via}: unknown type {item}"
                    ));
                    continue;
                };
                let post = item["post_id"].as_str().and_then(|p| p.parse().ok());
                let actor = item["actor"]["id"].as_str().unwrap_or_default().to_owned();
                let id = item["id"].as_str().unwrap_or_default().to_owned();
                served.push((id, (user.clone(), kind, actor, post)));
            }
            if served.windows(2).any(|w| w[0].0 <= w[1].0) {
                faults.push(format!(
                    "{user}'s notifications via {via} not newest first without duplicates"
                ));
            }
            let got: BTreeSet<&NotificationKey> = served.iter().map(|(_, k)| k).collect();
            let mine = |k: &&NotificationKey| k.0 == *user && !hidden(user, &k.2);
            let want: BTreeSet<&NotificationKey> = all.iter().filter(mine).collect();
            let missing: Vec<_> = want
                .difference(&got)
                .filter(|k| !unsure.contains(**k))
                .collect();
            let extra: Vec<_> = got
                .difference(&want)
                .filter(|k| !(unsure.contains(**k) && mine(k)))
                .collect();
            if !missing.is_empty() || !extra.is_empty() {
                faults.push(format!(
                    "{user}'s notifications via {via} ({} served): missing {missing:?}, not allowed {extra:?}",
                    served.len()
                ));
                continue;
            }
            if api == Api::V1 {
                plain = Some(served);
            }
        }
        if let Some(served) = plain {
            faults.extend(groups(world, user, &served, &all, &unsure, &hidden).await);
        }
    }
    faults
}

/// `user`'s grouped view, walked to the end, against their plain list `served` (already
/// held to the model) and the model's keys `all` (hidden actors included: a group's count
/// is the stored one). A group whose actors are all visible is exact: its count, its
/// latest three actors as the plain list orders them, its latest id.
async fn groups(
    world: &World,
    user: &str,
    served: &[(String, NotificationKey)],
    all: &BTreeSet<NotificationKey>,
    unsure: &BTreeSet<NotificationKey>,
    hidden: &dyn Fn(&str, &str) -> bool,
) -> Vec<String> {
    type Group = (NotificationType, Option<PostId>);
    let path = format!("/v1/users/{user}/notifications?grouped=true&limit=100");
    let target = world.cluster.up()[0].clone();
    let walked = masto::walk(world, &target, Api::V1, user, &path, "groups", Value::clone);
    let got = match walked.await {
        Ok(groups) => groups,
        Err(e) => return vec![e],
    };
    // Per group: the model's actors (sure, unsure) and the plain list's, newest first.
    let mut model: BTreeMap<Group, (Vec<&str>, Vec<&str>)> = BTreeMap::new();
    for k in all.iter().filter(|k| k.0 == user) {
        model.entry((k.1, k.3)).or_default().0.push(&k.2);
    }
    for k in unsure.iter().filter(|k| k.0 == user) {
        model.entry((k.1, k.3)).or_default().1.push(&k.2);
    }
    let mut plain: BTreeMap<Group, Vec<(&str, &str)>> = BTreeMap::new();
    for (id, k) in served {
        plain.entry((k.1, k.3)).or_default().push((id, &k.2));
    }
    let mut faults = Vec::new();
    let mut seen = BTreeSet::new();
    let mut last: Option<String> = None;
    for g in &got {
        let Some(kind) = g["type"].as_str().and_then(kind_of) else {
            faults.push(format!("{user}'s groups: unknown type {g}"));
            continue;
        };
        let post: Option<PostId> = g["post_id"].as_str().and_then(|p| p.parse().ok());
        let key = (kind, post);
        let latest = g["latest_id"].as_str().unwrap_or_default().to_owned();
        if last.as_ref().is_some_and(|l| *l <= latest) || !seen.insert(key) {
            faults.push(format!("{user}'s groups not newest first once each: {g}"));
        }
        last = Some(latest.clone());
        let count = g["count"].as_u64().unwrap_or(u64::MAX);
        let actors: Vec<&str> = g["actors"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|a| a["id"].as_str())
            .collect();
        let (sure, maybe) = model.get(&key).cloned().unwrap_or_default();
        let lo = sure.len() as u64;
        if count < lo || count > lo + maybe.len() as u64 {
            faults.push(format!(
                "{user}'s group {kind:?} {post:?}: count {count}, the model {lo} (+{} unsure)",
                maybe.len()
            ));
        }
        for a in &actors {
            if hidden(user, a) || !(sure.contains(a) || maybe.contains(a)) {
                faults.push(format!(
                    "{user}'s group {kind:?} {post:?} names {a}, not a visible actor of it"
                ));
            }
        }
        let exact = maybe.is_empty() && sure.iter().all(|a| !hidden(user, a));
        let order = plain.get(&key).cloned().unwrap_or_default();
        let head: Vec<&str> = order.iter().take(3).map(|(_, a)| *a).collect();
        if exact && (actors != head || order.first().map(|(id, _)| *id) != Some(&latest)) {
            faults.push(format!(
                "{user}'s group {kind:?} {post:?}: actors {actors:?} latest {latest}, the plain list's {order:?}"
            ));
        }
    }
    for (key, (sure, maybe)) in &model {
        let visible = !sure.is_empty() && maybe.is_empty() && sure.iter().all(|a| !hidden(user, a));
        if visible && !seen.contains(key) {
            faults.push(format!("{user}'s group {key:?} of {sure:?} is missing"));
        }
    }
    faults
}
