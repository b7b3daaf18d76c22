//! After the run: wait for quiescence (every worker held, at lag 0, positions still),
//! read the sources back (resolving writes whose outcome was unknown), build the
//! [`Sources`] and check every derived datum against `socialite::derived`.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use serde_json::Value;
use socialite::derived::{PostSource, Sources, TimelineRules, Window};
use socialite::domain::PostId;

use super::cluster::Target;
use super::masto::{self, Api};
use super::model::{Model, NEVER, Toggle};
use super::world::World;

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

/// Every page of a list, following `next_cursor` with `before` or `cursor`.
async fn walk(
    world: &World,
    target: &Target,
    path: &str,
    param: &str,
    token: Option<&str>,
) -> Result<Vec<Value>, String> {
    let mut items = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let sep = if path.contains('?') { '&' } else { '?' };
        let page_path = match &cursor {
            Some(c) => format!("{path}{sep}{param}={c}"),
            None => path.to_owned(),
        };
        let page = world
            .read(target, &page_path, token)
            .await
            .ok_or(format!("GET {page_path} failed"))?;
        items.extend(page["items"].as_array().cloned().unwrap_or_default());
        match page["next_cursor"].as_str() {
            Some(next) => cursor = Some(next.to_owned()),
            None => return Ok(items),
        }
        if items.len() > 100_000 {
            return Err(format!("{path} never ends"));
        }
    }
}

/// The sources as the store holds them, checked against the history, as [`Sources`].
pub async fn sources(world: &World, target: &Target) -> Result<(Sources, Vec<String>), String> {
    let users: Vec<String> = world.model().users.keys().cloned().collect();
    let mut faults = Vec::new();
    let mut s = Sources::default();
    let mut stored: BTreeMap<String, String> = BTreeMap::new();
    // Per stored post: its `replies_count` and the post its `reply_to` names.
    let mut threads: BTreeMap<String, (u64, Option<String>)> = BTreeMap::new();
    // Per stored post, its `reposts_count`; every repost listed, by its reposter.
    let mut reposts_counts: BTreeMap<String, u64> = BTreeMap::new();
    let mut listed_reposts: Vec<(String, super::reposts::RepostItem)> = Vec::new();
    expire_timed_mutes(world).await;
    let now = world.now();
    let relations = relations(world, target, &users).await?;
    (s.blocks, s.mutes) = (relations.0, relations.1);
    faults.extend(relations.2);
    for user in &users {
        let profile = world
            .read(target, &format!("/v1/users/{user}"), None)
            .await
            .ok_or("profile")?;
        s.users.insert(
            user.clone(),
            profile["display_name"]
                .as_str()
                .unwrap_or_default()
                .to_owned(),
        );
        for post in walk(
            world,
            target,
            &format!("/v1/users/{user}/posts?limit=100"),
            "before",
            None,
        )
        .await?
        {
            let id = post["id"].as_str().unwrap_or_default().to_owned();
            if let Some(r) = super::reposts::as_repost(&post) {
                listed_reposts.push((user.clone(), r));
                continue;
            }
            let replies = post["replies_count"].as_u64().unwrap_or(u64::MAX);
            reposts_counts.insert(
                id.clone(),
                post["reposts_count"].as_u64().unwrap_or(u64::MAX),
            );
            let parent = post["reply_to"]["post"].as_str().map(str::to_owned);
            threads.insert(id.clone(), (replies, parent));
            stored.insert(id, post["text"].as_str().unwrap_or_default().to_owned());
        }
        let path = format!("/v1/users/{user}/following?limit=100");
        for f in walk(world, target, &path, "cursor", None).await? {
            let followee = f["id"].as_str().unwrap_or_default().to_owned();
            s.follows.insert(
                (user.clone(), followee),
                socialite::derived::FollowSource {
                    created: Window::at(0),
                },
            );
        }
    }
    let mut model = world.model();
    for (id, text) in &stored {
        if model.learn(id, text).is_none() {
            faults.push(format!("stored post {id} {text:?} was never written"));
        }
    }
    for (i, p) in model.posts.clone().into_iter().enumerate() {
        let Some(id) = p.id.clone() else { continue };
        let live = stored.contains_key(&id);
        let deleted = (!live).then(|| {
            let from = p.deletes.iter().map(|d| d.invoke).min().unwrap_or(now);
            let to = p.deletes.iter().map(|d| d.complete).max().unwrap_or(NEVER);
            Window { from, to }
        });
        if live && p.deletes.iter().any(|d| d.acked()) {
            faults.push(format!(
                "post {id} ({}) is stored after its delete was acknowledged",
                p.author
            ));
        }
        if !live && p.deletes.is_empty() {
            faults.push(format!(
                "post {id} ({} {:?}, write {:?}) was lost",
                p.author, p.text, p.create
            ));
        }
        let parsed: PostId = id.parse().map_err(|_| format!("bad post id {id}"))?;
        let created = Window {
            from: p.create.invoke,
            to: p.create.complete,
        };
        let reply_to = match p.reply_to {
            Some(parent) => {
                let parent = &model.posts[parent];
                let id = parent.id.as_deref().unwrap_or_default();
                Some(socialite::domain::ReplyTo {
                    post: id.parse().map_err(|_| format!("bad parent id {id:?}"))?,
                    author: parent.author.clone(),
                })
            }
            None => None,
        };
        if let Some((_, served)) = threads.get(&id)
            && *served != reply_to.as_ref().map(|r| r.post.to_string())
        {
            faults.push(format!(
                "post {id} ({}) stored answering {served:?}, written answering {:?}",
                p.author,
                reply_to.as_ref().map(|r| r.post)
            ));
        }
        s.posts.insert(
            parsed,
            PostSource {
                author: p.author.clone(),
                text: p.text.clone(),
                created,
                deleted,
                reply_to,
            },
        );
        let _ = i;
    }
    for (id, (count, _)) in &threads {
        let Ok(parsed) = id.parse::<PostId>() else {
            continue;
        };
        let truth = s.replies_count(parsed);
        if *count != truth {
            let author = s.posts.get(&parsed).map(|p| p.author.clone());
            faults.push(format!(
                "post {id} ({author:?}) has replies_count {count}, {truth} live replies answer it"
            ));
        }
    }
    faults.extend(super::reposts::listed(
        &mut model,
        &mut s,
        &listed_reposts,
        &reposts_counts,
        now,
    ));
    for ((a, b), ops) in &model.pairs {
        let exists = s.follows.contains_key(&(a.clone(), b.clone()));
        if exists && !Model::may_hold(ops, now, now) {
            faults.push(format!(
                "edge {a}->{b} exists, yet its unfollow was acknowledged last"
            ));
        }
        if !exists && Model::surely_holds(ops, now, now) {
            faults.push(format!("edge {a}->{b} was lost"));
        }
    }
    for ((a, b), edge) in s.follows.iter_mut() {
        let ops = model.pair(a, b);
        if ops.is_empty() {
            faults.push(format!("edge {a}->{b} exists, never followed"));
        }
        edge.created = Model::creation_window(ops);
    }
    for ((user, post), ops) in &model.likes {
        if Model::surely_holds(ops, now, now)
            && let Ok(id) = post.parse()
            && s.posts.get(&id).is_some_and(PostSource::live)
        {
            s.likes.insert((user.clone(), id));
        }
    }
    for user in &users {
        let name = &s.users[user];
        let acked_last = model.users[user]
            .names
            .iter()
            .filter(|(_, sp)| sp.invoke != NEVER)
            .max_by_key(|(_, sp)| sp.invoke)
            .cloned();
        let names = model.names_of(user, NEVER);
        if !names.contains(&name.as_str()) {
            faults.push(format!("{user}'s name {name:?} was never given"));
        }
        if let Some((last, span)) = acked_last {
            let overlapped = model.users[user]
                .names
                .iter()
                .any(|(n, sp)| *n != last && sp.invoke != NEVER && sp.complete > span.invoke);
            if span.acked() && !overlapped && *name != last {
                faults.push(format!(
                    "{user}'s name is {name:?}, the last rename was {last:?}"
                ));
            }
        }
    }
    Ok((s, faults))
}

/// Waits until every timed mute of the run has surely expired, so that what is hidden
/// at the checks is what the untimed ones say. A mute expires at most its duration after
/// it was answered, or after now for one whose answer never came.
async fn expire_timed_mutes(world: &World) {
    let now = world.now();
    let until = world
        .model()
        .mutes
        .values()
        .flatten()
        .filter_map(|(t, lasts)| Some(t.span.complete.min(now) + (*lasts)?))
        .max();
    if let Some(until) = until.filter(|u| *u > now) {
        let wait = Duration::from_micros((until - now) as u64) + Duration::from_millis(50);
        tokio::time::sleep(wait).await;
    }
}

/// Every user's blocks and (standing) mutes as the store lists them, checked against
/// the history: a pair listed that was surely lifted, or one surely standing that is not
/// listed, is a fault.
async fn relations(
    world: &World,
    target: &Target,
    users: &[String],
) -> Result<
    (
        BTreeSet<(String, String)>,
        BTreeSet<(String, String)>,
        Vec<String>,
    ),
    String,
> {
    let (mut blocks, mut mutes, mut faults) = (BTreeSet::new(), BTreeSet::new(), Vec::new());
    let mut quiet = BTreeSet::new();
    for user in users {
        let token = world.token(user);
        for (noun, set) in [("blocks", &mut blocks), ("mutes", &mut mutes)] {
            let path = format!("/v1/users/{user}/{noun}?limit=100");
            for item in walk(world, target, &path, "cursor", Some(&token)).await? {
                let other = item["id"].as_str().unwrap_or_default().to_owned();
                if noun == "mutes" && item["notifications"] != false {
                    quiet.insert((user.clone(), other.clone()));
                }
                set.insert((user.clone(), other));
            }
        }
    }
    let now = world.now();
    let mut model = world.model();
    model.quiet_now = quiet;
    for ((a, b), ops) in &model.blocks {
        let listed = blocks.contains(&(a.clone(), b.clone()));
        if listed && !Model::may_hold(ops, now, now) {
            faults.push(format!(
                "{a} blocks {b}, yet the unblock was acknowledged last"
            ));
        }
        if !listed && Model::surely_holds(ops, now, now) {
            faults.push(format!("{a}'s block of {b} was lost"));
        }
    }
    for ((a, b), ops) in &model.mutes {
        let listed = mutes.contains(&(a.clone(), b.clone()));
        // Every timed mute has expired by now: each counts as an unmute.
        let untimed: Vec<_> = ops
            .iter()
            .map(|(t, lasts)| Toggle {
                on: t.on && lasts.is_none(),
                ..*t
            })
            .collect();
        let timed_may = ops
            .iter()
            .any(|(t, lasts)| t.on && lasts.is_some() && !t.span.acked());
        if listed && !Model::may_hold(&untimed, now, now) && !timed_may {
            faults.push(format!(
                "{a} mutes {b} (listed), yet no mute of theirs may stand"
            ));
        }
        if !listed && Model::surely_holds(&untimed, now, now) {
            faults.push(format!("{a}'s mute of {b} was lost"));
        }
    }
    Ok((blocks, mutes, faults))
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
