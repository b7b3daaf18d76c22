//! Notifications after quiescence: each user's notifications, plain and grouped, against
//! `socialite::derived::notifications`, fed the sources the run left (a like whose
//! outcome the history leaves unknown may go either way).

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;
use socialite::derived::Sources;
use socialite::derived::notifications::{NotificationKey, expected};
use socialite::domain::{NotificationType, NotifyPost, NotifySources, PostId};

use super::super::masto::{self, Api};
use super::super::model::{Fate, Model, NEVER};
use super::super::world::World;
use crate::common::Kind;

fn kind_of(name: &str) -> Option<NotificationType> {
    NotificationType::parse(name)
}

/// The notifications the sources imply (keyed), and those that hang on a like whose
/// outcome the history leaves unknown, or on a dismissal or clear whose outcome is
/// unknown or that raced the cause (either way is right). One a dismissal or clear
/// surely took away is in neither (`model/dismissals.rs`; `slack` the store's time
/// grain).
fn model_keys(
    model: &Model,
    s: &Sources,
    now: i64,
    slack: i64,
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
    let mut sure = BTreeSet::new();
    let keys = expected(&ns).into_keys().map(|k| (k, true));
    for (k, certain) in keys.chain(std::mem::take(&mut unsure).into_iter().map(|k| (k, false))) {
        let post = k.3.map(|p| p.to_string());
        let cause = (k.1.as_str(), k.2.as_str(), post.as_deref());
        let made = model
            .made_window(&k.0, cause.0, cause.1, cause.2)
            .unwrap_or((0, NEVER));
        match model.dismissal_fate(&k.0, cause, made, slack) {
            Fate::Hidden => {}
            Fate::Shown if certain => {
                sure.insert(k);
            }
            Fate::Shown | Fate::Unsure => {
                unsure.insert(k);
            }
        }
    }
    (sure, unsure)
}

/// The time grain of a notification's date past its cause's answer, in the model's
/// microseconds: a millisecond on the embedded store, a second on the MongoDB stand-in
/// (which dates changes to the second).
fn slack(world: &World) -> i64 {
    match world.topology.kind {
        Kind::Embedded => 2_000,
        Kind::Mongo => 1_100_000,
    }
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
    let (all, unsure) = model_keys(&world.model(), s, world.now(), slack(world));
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
            // The grouped view through `/v1`, and through `/api/v2` for the users read
            // through the Mastodon view, each against the plain list and the model.
            for &api in masto::at_convergence(world, n) {
                let got = match api {
                    Api::V1 => {
                        let path = format!("/v1/users/{user}/notifications?grouped=true&limit=100");
                        let walked =
                            masto::walk(world, &target, api, user, &path, "groups", Value::clone);
                        walked.await
                    }
                    Api::Masto => super::grouped::walk_v2(world, &target, user).await,
                };
                let label = match api {
                    Api::V1 => "groups",
                    Api::Masto => "v2 groups",
                };
                match got {
                    Ok(got) => {
                        let known = Known {
                            served: &served,
                            all: &all,
                            unsure: &unsure,
                        };
                        faults.extend(groups(world, user, label, &got, known, &hidden));
                    }
                    Err(e) => faults.push(e),
                }
            }
        }
    }
    faults
}

/// What the grouped view is held to: the plain list as served (already held to the
/// model) and the model's keys (`all` sure, `unsure` either way).
struct Known<'a> {
    served: &'a [(String, NotificationKey)],
    all: &'a BTreeSet<NotificationKey>,
    unsure: &'a BTreeSet<NotificationKey>,
}

/// KNOWN, gated: on MongoDB a dismissal or clear killed part way leaves its claim on
/// the group, and the group's count one too high, until a settler finishes it
/// (`mongo::notifications::takings`): the user's next dismissal or clear, the audit's
/// repair or a rebuild. No background sweep settles it yet, so a user who never
/// dismisses again keeps the count one high. The checker found the original bug on its
/// own (fresh MongoDB seed 1795862969311709302, 1 process, kill -9s: u4's follow group
/// counted 2 with 1 follow served, after a `DELETE /v1/users/u4/notifications/...` of
/// u5's follow met a kill). While this is `true`, a MongoDB group's count may stand
/// above what the plain list implies by as many of the user's dismissals and clears as
/// met a kill, and nothing else is relaxed. Set it to `false` (and drop the allowance
/// in [`groups`]) once a sweep settles every stale claim; the seed above then replays
/// the check.
pub const MONGO_COUNT_AFTER_KILLED_DISMISSAL: bool = true;

/// `user`'s grouped view `got` (walked to the end, as `/v1` groups) against their plain
/// list and the model's keys (hidden actors included: a group's count is the stored
/// one). The count is the plain list's for the group (where the model left a like or a
/// dismissal unsure, the plain list says how it went) plus the keys of actors a block or
/// mute hides from the plain list; a group whose actors are all visible is exact: its
/// latest three actors as the plain list orders them, its latest id.
fn groups(
    world: &World,
    user: &str,
    label: &str,
    got: &[Value],
    known: Known,
    hidden: &dyn Fn(&str, &str) -> bool,
) -> Vec<String> {
    type Group = (NotificationType, Option<PostId>);
    let Known {
        served,
        all,
        unsure,
    } = known;
    let killed = match world.topology.kind {
        Kind::Mongo if MONGO_COUNT_AFTER_KILLED_DISMISSAL => {
            world.model().unknown_dismissals(user) as u64
        }
        _ => 0,
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
    for g in got {
        let Some(kind) = g["type"].as_str().and_then(kind_of) else {
            faults.push(format!("{user}'s {label}: unknown type {g}"));
            continue;
        };
        let post: Option<PostId> = g["post_id"].as_str().and_then(|p| p.parse().ok());
        let key = (kind, post);
        let latest = g["latest_id"].as_str().unwrap_or_default().to_owned();
        if last.as_ref().is_some_and(|l| *l <= latest) || !seen.insert(key) {
            faults.push(format!("{user}'s {label} not newest first once each: {g}"));
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
        let order = plain.get(&key).cloned().unwrap_or_default();
        let listed = order.len() as u64;
        let lo = listed + sure.iter().filter(|a| hidden(user, a)).count() as u64;
        let hi = lo + maybe.iter().filter(|a| hidden(user, a)).count() as u64;
        if count > hi && count <= hi + killed {
            eprintln!(
                "oracle: KNOWN MongoDB bug allowed (MONGO_COUNT_AFTER_KILLED_DISMISSAL): {user}'s {label} {kind:?} {post:?} counts {count}, {hi} implied, after {killed} killed dismissals"
            );
        }
        if count < lo || count > hi + killed {
            faults.push(format!(
                "{user}'s {label} {kind:?} {post:?}: count {count}, the plain list {listed} + hidden {}..={} (the model {} sure {sure:?}, unsure {maybe:?}; {killed} killed dismissals allowed)",
                lo - listed,
                hi - listed,
                sure.len()
            ));
        }
        for a in &actors {
            if hidden(user, a) || !(sure.contains(a) || maybe.contains(a)) {
                faults.push(format!(
                    "{user}'s {label} {kind:?} {post:?} names {a}, not a visible actor of it"
                ));
            }
        }
        let exact = maybe.is_empty() && sure.iter().all(|a| !hidden(user, a));
        let head: Vec<&str> = order.iter().take(3).map(|(_, a)| *a).collect();
        if exact && (actors != head || order.first().map(|(id, _)| *id) != Some(&latest)) {
            faults.push(format!(
                "{user}'s {label} {kind:?} {post:?}: actors {actors:?} latest {latest}, the plain list's {order:?}"
            ));
        }
    }
    for (key, (sure, maybe)) in &model {
        let visible = !sure.is_empty() && maybe.is_empty() && sure.iter().all(|a| !hidden(user, a));
        if visible && !seen.contains(key) {
            faults.push(format!("{user}'s {label}: {key:?} of {sure:?} is missing"));
        }
    }
    faults
}
