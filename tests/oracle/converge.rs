//! After the run: wait for quiescence (every worker held, at lag 0, positions still),
//! read the sources back (resolving writes whose outcome was unknown), build the
//! [`Sources`] and check every derived datum against `socialite::derived`. The sources
//! are read back in `converge/readback.rs`.

mod readback;

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use serde_json::Value;
use socialite::derived::{Sources, TimelineRules};
use socialite::domain::PostId;

use super::cluster::Target;
use super::masto::{self, Api};
use super::world::World;

pub use readback::sources;

/// Totals read from `/v1/workers` at the end.
#[derive(Debug, Default, Clone, Copy)]
pub struct WorkerTotals {
    pub takeovers: u64,
    pub rebuilds: u64,
    pub history_lost: u64,
    /// Timeline pages served as kept (see `service::pages`) by the processes up at the
    /// end, from their `/metrics`: a lower bound, as a killed process takes its count
    /// with it. Every one was checked like any page.
    pub kept: u64,
}

/// `socialite_page_memo_hits_total` in a `/metrics` text (0 before the first).
fn kept_pages(metrics: &str) -> u64 {
    metrics
        .lines()
        .find_map(|line| line.strip_prefix("socialite_page_memo_hits_total "))
        .and_then(|n| n.trim().parse::<f64>().ok())
        .map_or(0, |n| n as u64)
}

/// Waits until every worker some process lists is held, at lag 0, with the same
/// positions over two polls.
pub async fn quiescence(world: &World) -> Result<WorkerTotals, String> {
    // A slow store (the stand-in under a long backlog) is given time while the positions
    // move; a minute without any move, or five in all, is a worker that does not finish.
    let start = Instant::now();
    let mut moved = Instant::now();
    let mut previous: Option<BTreeMap<String, String>> = None;
    loop {
        let mut held = BTreeMap::new();
        let mut names = BTreeSet::new();
        let mut totals = WorkerTotals::default();
        let mut lagging = false;
        for target in world.cluster.up() {
            let Some(body) = world.read(&target, "/v1/workers", None).await else {
                lagging = true;
                continue;
            };
            for w in body["workers"].as_array().into_iter().flatten() {
                let name = w["name"].as_str().unwrap_or_default().to_owned();
                names.insert(name.clone());
                totals.rebuilds += w["rebuilds"].as_u64().unwrap_or(0);
                totals.history_lost += w["history_lost"].as_u64().unwrap_or(0);
                if w["held_here"] == true {
                    let start = world.baseline.lock().unwrap().get(&name).copied();
                    let version = w["version"].as_u64().unwrap_or(0);
                    totals.takeovers += start.map_or(0, |start| version.saturating_sub(start));
                    lagging |= w["lag_changes"].as_u64() != Some(0);
                    held.insert(name, w["position"].to_string());
                }
            }
            if let Some(Value::String(metrics)) = world.read(&target, "/metrics", None).await {
                totals.kept += kept_pages(&metrics);
            }
        }
        let settled = !lagging && names.len() == held.len() && previous.as_ref() == Some(&held);
        if settled {
            return Ok(totals);
        }
        if previous.as_ref() != Some(&held) {
            moved = Instant::now();
        }
        if moved.elapsed() > Duration::from_secs(60) || start.elapsed() > Duration::from_secs(300) {
            return Err(format!(
                "no quiescence after {:?} ({:?} without a position moving): held {held:?} of {names:?}",
                start.elapsed(),
                moved.elapsed()
            ));
        }
        previous = Some(held);
        tokio::time::sleep(Duration::from_millis(world.topology.refresh_ms * 2 + 100)).await;
    }
}

/// Each worker's lease version as stored now, the baseline of the takeovers counted.
pub async fn baseline(world: &World) {
    let Some(target) = world.cluster.up().into_iter().next() else {
        return;
    };
    let Some(body) = world.read(&target, "/v1/workers", None).await else {
        return;
    };
    for w in body["workers"].as_array().into_iter().flatten() {
        if let (Some(name), Some(version)) = (w["name"].as_str(), w["version"].as_u64()) {
            world
                .baseline
                .lock()
                .unwrap()
                .insert(name.to_owned(), version);
        }
    }
}

/// Every derived datum against the sources. Returns what is wrong.
pub async fn derived(world: &World, s: &Sources) -> Vec<String> {
    let mut faults = Vec::new();
    let up = world.cluster.up();
    let rules = TimelineRules {
        strategy: world.topology.strategy,
        backfill_on_follow: world.topology.backfill,
    };
    for (n, user) in s.users.keys().enumerate() {
        let target = &up[n % up.len()];
        // The home timeline through `/v1`, and for a seeded half of the users through
        // the Mastodon view too, each held to the sources alike.
        for &api in masto::at_convergence(world, n) {
            faults.extend(home(world, s, target, api, user, rules).await);
        }
        let profile = world
            .read(target, &format!("/v1/users/{user}"), None)
            .await
            .unwrap_or_default();
        let shown = ["followers_count", "following_count", "posts_count"]
            .map(|f| profile[f].as_u64().unwrap_or(u64::MAX));
        let (a, b, c) = s.counters(user);
        if shown != [a, b, c] {
            faults.push(format!("{user}'s counters (followers, following, posts) via {}: {shown:?}, truth [{a}, {b}, {c}]", target.slot));
        }
    }
    faults
}

/// `user`'s home timeline through `api`, walked to the end at pages of 5, against the
/// sources under `rules`: exactly the posts the timeline serves
/// (`Sources::served_timeline`), newest first, each post once, names and texts as they
/// stand, and every kept first page its head. Returns what is wrong, naming the API.
async fn home(
    world: &World,
    s: &Sources,
    target: &Target,
    api: Api,
    user: &str,
    rules: TimelineRules,
) -> Vec<String> {
    let path = masto::home_path(api, user, 5);
    let walked = masto::walk(world, target, api, user, &path, "items", masto::status_item);
    let items = match walked.await {
        Ok(items) => items,
        Err(e) => return vec![e],
    };
    let mut faults = Vec::new();
    let via = masto::via(target.slot, api);
    let bounds = s.served_timeline(user, rules);
    let served: Vec<PostId> = items
        .iter()
        .filter_map(|i| i["id"].as_str()?.parse().ok())
        .collect();
    faults.extend(seen_once(user, &via, s, &items));
    if served.windows(2).any(|w| w[0] <= w[1]) {
        faults.push(format!(
            "{user}'s timeline via {via} not newest first without duplicates: {served:?}"
        ));
    }
    faults.extend(super::reads::kept_heads(world, api, user, &served).await);
    let set: BTreeSet<PostId> = served.iter().copied().collect();
    let missing: Vec<String> = bounds
        .lower
        .iter()
        .filter(|p| !set.contains(p))
        .map(|p| describe(s, p))
        .collect();
    let upper: BTreeSet<PostId> = bounds.upper.iter().copied().collect();
    let extra: Vec<String> = served
        .iter()
        .filter(|p| !upper.contains(p))
        .map(|p| describe(s, p))
        .collect();
    if !missing.is_empty() || !extra.is_empty() {
        faults.push(format!(
            "{user}'s timeline via {via} ({} served): missing {missing:?}, not allowed {extra:?}",
            served.len()
        ));
    }
    for item in &items {
        let original;
        let item = match super::reposts::as_repost(item) {
            Some(r) => {
                original = r.original;
                &original
            }
            None => item,
        };
        let author = item["author"].as_str().unwrap_or_default();
        let name = item["author_display_name"].as_str().unwrap_or_default();
        if s.users.get(author).is_some_and(|n| n != name) {
            faults.push(format!(
                "{user}'s timeline via {via}: {} by {author} named {name:?}, now {:?}",
                item["id"], s.users[author]
            ));
            break;
        }
        let id: Option<PostId> = item["id"].as_str().and_then(|i| i.parse().ok());
        if let Some(p) = id.and_then(|id| s.posts.get(&id))
            && item["text"].as_str() != Some(p.text.as_str())
        {
            faults.push(format!(
                "{user}'s timeline via {via}: {} with text {}, written {:?}",
                item["id"], item["text"], p.text
            ));
        }
    }
    faults
}

fn describe(s: &Sources, id: &PostId) -> String {
    match (s.posts.get(id), s.reposts.get(id)) {
        (Some(p), _) => format!("{id} {}:{:?} created {:?}", p.author, p.text, p.created),
        (None, Some(r)) => format!("{id} {}'s repost of {}", r.user, describe(s, &r.post.post)),
        (None, None) => id.to_string(),
    }
}

/// A converged walk of `user`'s timeline: each post shown once, and each repost item
/// the repost the sources hold (its reposter and original).
fn seen_once(user: &str, via: &str, s: &Sources, items: &[Value]) -> Vec<String> {
    let mut faults = Vec::new();
    let mut shown = BTreeSet::new();
    for item in items {
        let post = super::reposts::shown_post(item);
        if !shown.insert(post.clone()) {
            faults.push(format!(
                "{user}'s timeline via {via} shows {post} twice (again as {})",
                item["id"]
            ));
        }
        let Some(r) = super::reposts::as_repost(item) else {
            continue;
        };
        let held =
            r.id.parse::<PostId>()
                .ok()
                .and_then(|id| s.reposts.get(&id));
        if !held.is_some_and(|h| h.user == r.by && h.post.post.to_string() == post) {
            faults.push(format!(
                "{user}'s timeline via {via}: repost {} by {} of {post}, the sources hold {held:?}",
                r.id, r.by
            ));
        }
    }
    faults
}
