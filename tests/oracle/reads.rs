//! Reads during the run, each checked for safety against the model over the interval
//! it was in flight: pages newest first without duplicates, nothing deleted or
//! unfollowed before the read began, no acknowledged post lost from its author's
//! posts, counters never below what acknowledged writes imply. The reads of one user's
//! profile and activity are in `reads/users.rs`.

mod kept;
mod users;

use std::ops::RangeInclusive;

use rand::RngExt;
use serde_json::Value;

use super::masto::{self, Api};
use super::model::Model;
use super::ops::any_user;
use super::reposts::{as_repost, repost_fault, repost_listed_fault, shown_post, surely_eligible};
use super::world::{Rng, Stats, World};

pub use kept::kept_heads;
pub use users::{activity, activity_entries, profile, profile_of};

/// Checks one served timeline item of `reader`'s read over `[t0, t1]`; `None` when it is
/// fine, else what is wrong.
pub fn item_fault(
    model: &mut Model,
    reader: &str,
    item: &Value,
    t0: i64,
    t1: i64,
) -> Option<String> {
    if let Some(repost) = as_repost(item) {
        return repost_fault(model, reader, &repost, t0, t1);
    }
    let id = item["id"].as_str().unwrap_or_default();
    let text = item["text"].as_str().unwrap_or_default();
    let author = item["author"].as_str().unwrap_or_default();
    let Some(i) = model.learn(id, text) else {
        return Some(format!("unknown post {item}"));
    };
    let post = model.posts[i].clone();
    if post.author != author || post.text != text {
        return Some(format!(
            "{id} served as {author} {text:?}, written by {} as {:?}",
            post.author, post.text
        ));
    }
    if !model.post_may_be_live(i, t0, t1) {
        return Some(format!(
            "{id} by {author} served after its delete was acknowledged"
        ));
    }
    if author != reader && !Model::may_hold(model.pair(reader, author), t0, t1) {
        return Some(format!(
            "{id} by {author} served to {reader}, who surely did not follow {author}"
        ));
    }
    if author != reader
        && let Some(why) = model.surely_hidden(reader, author, t0, t1)
    {
        return Some(format!("{id} by {author} served to {reader} while {why}"));
    }
    // The home rule for replies: shown only to a reader who follows the parent's author,
    // is that author, or reads a self-thread (with the follows as they stand).
    let parent = post.reply_to.map(|p| model.posts[p].author.clone());
    if item["reply_to_author"].as_str() != parent.as_deref() {
        return Some(format!(
            "{id} by {author} served with reply_to_author {}, answering {parent:?}",
            item["reply_to_author"]
        ));
    }
    // The Mastodon view also names the parent post itself.
    if let Some(served) = item.get("in_reply_to_id") {
        let written = post.reply_to.map(|p| model.posts[p].id.clone());
        let wrong = match &written {
            None => !served.is_null(),
            Some(Some(parent)) => served.as_str() != Some(parent.as_str()),
            // A parent whose id the history never learnt.
            Some(None) => false,
        };
        if wrong {
            return Some(format!(
                "{id} by {author} served with in_reply_to_id {served}, written answering {written:?}"
            ));
        }
    }
    if let Some(parent) = parent
        && parent != author
        && parent != reader
        && !Model::may_hold(model.pair(reader, &parent), t0, t1)
    {
        return Some(format!(
            "{id}, {author}'s reply to {parent}, served to {reader}, who surely did not follow {parent}"
        ));
    }
    let name = item["author_display_name"].as_str().unwrap_or_default();
    if !model.fresh_names_of(author, t0, t1).contains(&name) {
        return Some(format!(
            "{id} by {author} with display name {name:?}, not {author}'s during [{t0}..{t1}]"
        ));
    }
    None
}

/// The page lengths a walk asks for.
const PAGE_LIMITS: RangeInclusive<usize> = 1..=6;

/// Walks `reader`'s timeline a few pages, through `/v1` (`before`) or, for a seeded
/// share of the walks, the Mastodon view (`max_id` from the `Link` header), its
/// statuses mapped to `/v1` items and checked alike (`oracle::masto`). Half the walks
/// read their first page twice on the same process, back to back: the second read is
/// served as a kept page (`service::pages`) unless a write moved what the page was read
/// from, so kept pages meet the concurrent writes, kills and faults of the run, and are
/// checked like any page.
pub async fn timeline(world: &World, rng: &mut Rng) {
    let reader = any_user(world, rng);
    let target = world.pick(rng).await;
    let limit = rng.random_range(PAGE_LIMITS);
    let mut last: Option<String> = None;
    let mut again = rng.random_bool(0.5);
    let mut walk = Walk::default();
    let api = Api::pick(world, rng);
    let token = api.token(world, &reader);
    let via = masto::via(target.slot, api);
    let mut path = masto::home_path(api, &reader, limit);
    for _ in 0..rng.random_range(1..=6) {
        let above = last.clone();
        let page = loop {
            let t0 = world.now();
            let Some((read, _)) = masto::read_page(
                world,
                &target,
                api,
                &path,
                &token,
                "items",
                masto::status_item,
            )
            .await
            else {
                return;
            };
            let t1 = world.now();
            Stats::bump(&world.stats.reads_checked);
            // A page read twice is checked against the walk as it stood before it.
            let mut this = walk.clone();
            last = check_page(
                world,
                &reader,
                &via,
                &path,
                &read.items,
                (t0, t1),
                above.clone(),
                &mut this,
            );
            if !std::mem::take(&mut again) {
                walk = this;
                break read;
            }
        };
        match page.next {
            Some(next) => path = next,
            None => return,
        }
    }
}

/// What a walk's earlier pages showed: per post shown (as itself or reposted), the
/// item that showed it and when that page's read began.
#[derive(Debug, Clone, Default)]
pub struct Walk {
    pub shown: std::collections::BTreeMap<String, (String, i64)>,
}

/// Checks one page of `reader`'s timeline read over `[t0, t1]`: newest first, below
/// `last` (the walk's previous page), once each, every item servable then, and each
/// post shown once (seen once): never twice in a page, and on a later page of the walk
/// only when its older occurrence may not have been eligible since the earlier page's
/// read began. Returns the page's last id (or `last` for an empty page).
#[allow(clippy::too_many_arguments)]
pub fn check_page(
    world: &World,
    reader: &str,
    slot: &impl std::fmt::Display,
    path: &str,
    items: &[Value],
    (t0, t1): (i64, i64),
    mut last: Option<String>,
    walk: &mut Walk,
) -> Option<String> {
    let mut model = world.model();
    let mut here = std::collections::BTreeSet::new();
    for item in items {
        let id = item["id"].as_str().unwrap_or_default().to_owned();
        if last.as_ref().is_some_and(|l| *l <= id) {
            model.violation(format!("{reader}'s timeline via {slot}: {id} after {last:?} (not newest first, or twice): {path}"));
        }
        if let Some(fault) = item_fault(&mut model, reader, item, t0, t1) {
            model.violation(format!(
                "{reader}'s timeline via {slot} [{t0}..{t1}]: {fault}"
            ));
        }
        let post = shown_post(item);
        let repost = as_repost(item).map(|r| r.id);
        if repost.is_some() {
            Stats::bump(&world.stats.reposts_served);
        }
        if !here.insert(post.clone()) {
            model.violation(format!(
                "{reader}'s timeline via {slot} [{t0}..{t1}]: {post} shown twice in one page (again as {id}): {path}"
            ));
        } else if let Some((before, since)) = walk.shown.get(&post)
            && surely_eligible(&model, reader, &post, repost.as_deref(), (*since, t1))
        {
            model.violation(format!(
                "{reader}'s timeline via {slot} [{t0}..{t1}]: {post} shown as {before} on an earlier page, and again as {id}, an occurrence eligible since that page: {path}"
            ));
        }
        walk.shown.entry(post).or_insert((id.clone(), t0));
        last = Some(id);
    }
    last
}

/// Walks `author`'s own posts to the end: every post acknowledged before the walk and
/// not since deleted must be there.
pub async fn own_posts(world: &World, rng: &mut Rng) {
    let author = any_user(world, rng);
    let target = world.pick(rng).await;
    let t0 = world.now();
    let mut served = Vec::new();
    let (mut reposts, mut order) = (Vec::new(), Vec::new());
    let mut before: Option<String> = None;
    loop {
        let cursor = before
            .as_ref()
            .map(|b| format!("&before={b}"))
            .unwrap_or_default();
        let path = format!("/v1/users/{author}/posts?limit=50{cursor}");
        let Some(page) = world.read(&target, &path, None).await else {
            return;
        };
        for item in page["items"].as_array().into_iter().flatten() {
            let id = item["id"].as_str().unwrap_or_default().to_owned();
            match as_repost(item) {
                Some(r) => reposts.push(r),
                None => served.push((
                    id.clone(),
                    item["text"].as_str().unwrap_or_default().to_owned(),
                )),
            }
            order.push(id);
        }
        match page["next_cursor"].as_str() {
            Some(next) => before = Some(next.to_owned()),
            None => break,
        }
    }
    let t1 = world.now();
    Stats::bump(&world.stats.reads_checked);
    let mut model = world.model();
    if order.windows(2).any(|w| w[0] <= w[1]) {
        model.violation(format!("{author}'s posts not newest first: {order:?}"));
    }
    let mut listed = std::collections::HashSet::new();
    for r in &reposts {
        let fault = if r.by != author {
            Some(format!("repost {} by {}", r.id, r.by))
        } else if !listed.insert(r.original_id().to_owned()) {
            Some(format!("{} reposted twice", r.original_id()))
        } else {
            repost_listed_fault(&mut model, r, t0, t1)
        };
        if let Some(fault) = fault {
            model.violation(format!(
                "{author}'s posts via {} [{t0}..{t1}]: {fault}",
                target.slot
            ));
        }
    }
    let lost: Vec<&(String, String)> = model
        .reposts
        .iter()
        .filter(|((user, post), ops)| {
            *user == author
                && !listed.contains(post)
                && Model::surely_holds(ops, t0, t1)
                && model
                    .by_id
                    .get(post)
                    .is_some_and(|&i| model.post_surely_live(i, t0, t1))
        })
        .map(|(k, _)| k)
        .collect();
    if !lost.is_empty() {
        let lost = format!("{lost:?}");
        model.violation(format!(
            "{author}'s posts via {} [{t0}..{t1}] lost acknowledged reposts: {lost}",
            target.slot
        ));
    }
    let mut seen = std::collections::HashSet::new();
    for (id, text) in &served {
        let Some(i) = model.learn(id, text) else {
            model.violation(format!("{author}'s posts: unknown {id} {text:?}"));
            continue;
        };
        seen.insert(i);
        if !model.post_may_be_live(i, t0, t1) {
            model.violation(format!(
                "{author}'s posts [{t0}..{t1}]: {id} served after its delete was acknowledged"
            ));
        }
    }
    let missing: Vec<String> = (0..model.posts.len())
        .filter(|&i| {
            model.posts[i].author == author
                && model.post_surely_live(i, t0, t1)
                && !seen.contains(&i)
        })
        .map(|i| format!("{:?} {:?}", model.posts[i].id, model.posts[i].text))
        .collect();
    if !missing.is_empty() {
        model.violation(format!(
            "{author}'s posts via {} [{t0}..{t1}] lost acknowledged posts: {missing:?}",
            target.slot
        ));
    }
}
