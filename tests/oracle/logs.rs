//! After quiescence: activity logs, the event log and tag counts against the history
//! and the sources. Follows and likes are idempotent, so whether one made a change is
//! known only when nothing overlapped it; counts are then held between the writes that
//! surely changed something and every write that may have.

use std::collections::BTreeMap;

use reqwest::{Method, StatusCode};
use serde_json::Value;
use socialite::derived::{Sources, newest_first};

use super::model::{Model, Toggle};
use super::reads::activity_entries;
use super::world::{Reply, World};

/// Every user's activity log. `rebuilt`: a history-lost rebuild may have replaced the
/// history with what the sources hold.
pub async fn activity(world: &World, s: &Sources, rebuilt: bool) -> Vec<String> {
    let mut faults = Vec::new();
    let up = world.cluster.up();
    for (n, user) in s.users.keys().enumerate() {
        let target = &up[n % up.len()];
        let token = world.token(user);
        let mut body = serde_json::json!({ "items": [] });
        let mut unreadable = false;
        for skip in (0..).step_by(100) {
            let path = format!("/v1/users/{user}/activity?limit=100&skip={skip}");
            let Some(page) = world.read(target, &path, Some(&token)).await else {
                unreadable = true;
                break;
            };
            let items = page["items"].as_array().cloned().unwrap_or_default();
            let done = items.len() < 100;
            body["items"].as_array_mut().unwrap().extend(items);
            if done {
                break;
            }
        }
        if unreadable {
            faults.push(format!("{user}'s activity unreadable"));
            continue;
        }
        let entries = activity_entries(&body);
        if let Some(fault) = newest_first(&entries) {
            faults.push(format!("{user}'s activity: {fault}"));
        }
        let mut served: BTreeMap<(String, String), usize> = BTreeMap::new();
        for ((kind, reference), _) in &entries {
            *served.entry((kind.clone(), reference.clone())).or_default() += 1;
        }
        let model = world.model();
        let mut expected: BTreeMap<(String, String), (usize, usize)> = BTreeMap::new();
        for (id, p) in s.posts.iter().filter(|(_, p)| p.author == *user) {
            let lo = usize::from(p.live() || !rebuilt);
            expected.insert(("post".into(), id.to_string()), (lo, 1));
        }
        let sides = [("follow", &model.pairs), ("like", &model.likes)];
        for (kind, map) in sides {
            for ((who, what), ops) in map.iter().filter(|((who, _), _)| who == user) {
                let (mut lo, hi) = Model::effective(ops, true);
                if rebuilt {
                    let stands = match kind {
                        "follow" => s.follows.contains_key(&(who.clone(), what.clone())),
                        _ => what
                            .parse()
                            .is_ok_and(|id| s.likes.contains(&(who.clone(), id))),
                    };
                    lo = usize::from(stands);
                }
                expected.insert((kind.into(), what.clone()), (lo, hi));
            }
        }
        for (key, count) in &served {
            if !expected.contains_key(key) {
                faults.push(format!(
                    "{user}'s activity holds {key:?} x{count}, never written"
                ));
            }
        }
        for (key, (lo, hi)) in &expected {
            let count = served.get(key).copied().unwrap_or(0);
            if count < *lo || count > *hi {
                faults.push(format!(
                    "{user}'s activity holds {key:?} x{count}, the history allows {lo}..={hi}"
                ));
            }
        }
    }
    faults
}

/// The event log (when this store keeps one) and tag counts: the faults, and the log as
/// served. `None` when there is none.
pub async fn events(
    world: &World,
    s: &Sources,
    rebuilt: bool,
) -> Option<(Vec<String>, Vec<Value>)> {
    let target = world.cluster.up().into_iter().next()?;
    let mut all: Vec<Value> = Vec::new();
    let mut after = String::from("0");
    let mut trimmed = false;
    loop {
        let path = format!("/v1/events?after={after}&limit=1000");
        let page = match world.call(&target, Method::GET, &path, None, None).await {
            Reply::Answer(StatusCode::OK, page) => page,
            // A tiny retention trims the event log as well as the change feed.
            Reply::Answer(StatusCode::GONE, _) if rebuilt => {
                trimmed = true;
                break;
            }
            Reply::Answer(StatusCode::SERVICE_UNAVAILABLE, _) | Reply::Refused | Reply::Lost => {
                return None;
            }
            Reply::Answer(status, body) => {
                return Some((vec![format!("GET {path}: {status} {body}")], all));
            }
        };
        let events = page["events"].as_array().cloned().unwrap_or_default();
        if events.is_empty() {
            break;
        }
        after = events.last().unwrap()["id"]
            .as_str()
            .unwrap_or("0")
            .to_owned();
        all.extend(events);
    }
    let mut faults = Vec::new();
    let ids: Vec<u64> = all
        .iter()
        .map(|e| e["id"].as_str().and_then(|i| i.parse().ok()).unwrap_or(0))
        .collect();
    if ids.windows(2).any(|w| w[0] >= w[1]) {
        faults.push("event ids not strictly increasing".to_owned());
    }
    let mut served: BTreeMap<(String, String), usize> = BTreeMap::new();
    for e in &all {
        let p = &e["payload"];
        let key = match e["type"].as_str().unwrap_or_default() {
            "post.created" | "post.deleted" => p["post"].as_str().unwrap_or_default().to_owned(),
            "user.followed" | "user.unfollowed" => format!(
                "{}>{}",
                p["follower"].as_str().unwrap_or_default(),
                p["followee"].as_str().unwrap_or_default()
            ),
            "post.liked" | "post.reposted" | "post.unreposted" => format!(
                "{}>{}",
                p["user"].as_str().unwrap_or_default(),
                p["post"].as_str().unwrap_or_default()
            ),
            "user.renamed" => format!(
                "{}>{}",
                p["user"].as_str().unwrap_or_default(),
                p["display_name"].as_str().unwrap_or_default()
            ),
            other => format!("unknown type {other}"),
        };
        *served
            .entry((e["type"].as_str().unwrap_or_default().to_owned(), key))
            .or_default() += 1;
    }
    let mut expected: BTreeMap<(String, String), (usize, usize)> = BTreeMap::new();
    for (id, p) in &s.posts {
        expected.insert(("post.created".into(), id.to_string()), (1, 1));
        let deleted = usize::from(!p.live());
        expected.insert(("post.deleted".into(), id.to_string()), (deleted, deleted));
    }
    {
        let model = world.model();
        let mut toggles = |kind: &str, map: &BTreeMap<(String, String), Vec<Toggle>>, on: bool| {
            for ((a, b), ops) in map {
                expected.insert(
                    (kind.to_owned(), format!("{a}>{b}")),
                    Model::effective(ops, on),
                );
            }
        };
        toggles("user.followed", &model.pairs, true);
        toggles("user.unfollowed", &model.pairs, false);
        toggles("post.liked", &model.likes, true);
        // A repost's event, and an unrepost's, the original's delete's included (its
        // reposts go with it: one more, and perhaps none of those sent after it).
        toggles("post.reposted", &model.reposts, true);
        for ((user, post), ops) in &model.reposts {
            let (mut lo, mut hi) = Model::effective(ops, false);
            let gone = post
                .parse::<socialite::domain::PostId>()
                .ok()
                .and_then(|id| s.posts.get(&id))
                .is_none_or(|p| !p.live());
            if gone {
                // One for the repost the delete took, when one surely stood through it
                // (the first delete answered, no unrepost sent before its answer).
                let delete = model
                    .by_id
                    .get(post)
                    .and_then(|&i| model.posts[i].deletes.iter().find(|d| d.acked()));
                let took = delete.is_some_and(|d| Model::surely_holds(ops, d.invoke, d.complete));
                (lo, hi) = (usize::from(took), hi + 1);
            }
            expected.insert(
                ("post.unreposted".into(), format!("{user}>{post}")),
                (lo, hi),
            );
        }
        for (user, u) in &model.users {
            for (name, span) in u.names.iter().skip(1) {
                let lo = usize::from(span.acked());
                expected.insert(("user.renamed".into(), format!("{user}>{name}")), (lo, 1));
            }
        }
    }
    if !rebuilt && !trimmed {
        compare("event log", &served, &expected, &mut faults);
    }
    for tag in s
        .tags()
        .into_iter()
        .chain(["rust".to_owned(), "t_1".to_owned()])
    {
        let Some(body) = world.read(&target, &format!("/v1/tags/{tag}"), None).await else {
            faults.push(format!("tag {tag} unreadable"));
            continue;
        };
        let (shown, truth) = (body["total"].as_u64(), s.tag_count(&tag));
        if shown != Some(truth) {
            faults.push(format!(
                "tag {tag}: {shown:?} live posts shown, {truth} in truth"
            ));
        }
    }
    Some((faults, all))
}

fn compare(
    what: &str,
    served: &BTreeMap<(String, String), usize>,
    expected: &BTreeMap<(String, String), (usize, usize)>,
    faults: &mut Vec<String>,
) {
    for (key, count) in served {
        if !expected.contains_key(key) {
            faults.push(format!("{what} holds {key:?} x{count}, never written"));
        }
    }
    for (key, (lo, hi)) in expected {
        let count = served.get(key).copied().unwrap_or(0);
        if count < *lo || count > *hi {
            faults.push(format!(
                "{what} holds {key:?} x{count}, the history allows {lo}..={hi}"
            ));
        }
    }
}
