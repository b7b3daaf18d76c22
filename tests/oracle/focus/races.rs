//! The operations a focus adds to the mix, each staging one class of race on users and
//! processes it picks: a worker's late push below a cache's oldest entry, an unfollow
//! and a follow of one pair at once, quick follows against recounts, a block or mute of
//! an author a kept page shows, and a kept page's repost against its original's delete,
//! its unrepost, or a block or mute.

use std::time::Duration;

use rand::RngExt;
use socialite::domain::FeedStrategy;

use super::super::cluster::Target;
use super::super::masto::{self, Api};
use super::super::ops::{Relation, any_user, relation_at, toggle_at};
use super::super::world::{Rng, World};

/// The first page of `reader`'s timeline (which builds their cache) through `api`; the
/// items served.
async fn first_page(
    world: &World,
    target: &Target,
    api: Api,
    reader: &str,
    limit: u32,
) -> Vec<String> {
    let token = api.token(world, reader);
    let path = masto::home_path(api, reader, limit as usize);
    let t0 = world.now();
    let read = masto::read_page(
        world,
        target,
        api,
        &path,
        &token,
        "items",
        masto::status_item,
    );
    let Some((page, _)) = read.await else {
        return Vec::new();
    };
    let t1 = world.now();
    let mut model = world.model();
    let mut ids = Vec::new();
    for item in &page.items {
        if let Some(fault) = super::super::reads::item_fault(&mut model, reader, item, t0, t1) {
            let via = masto::via(target.slot, api);
            model.violation(format!(
                "{reader}'s first page via {via} [{t0}..{t1}]: {fault}"
            ));
        }
        ids.push(item["id"].as_str().unwrap_or_default().to_owned());
    }
    ids
}

/// The process holding the timelines worker (if one is up and says so), and the others.
async fn by_timelines(world: &World) -> (Option<Target>, Vec<Target>) {
    let (mut holder, mut others) = (None, Vec::new());
    for target in world.cluster.up() {
        let held = world
            .read(&target, "/v1/workers", None)
            .await
            .is_some_and(|body| {
                body["workers"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .any(|w| w["name"] == "timelines" && w["held_here"] == true)
            });
        if held && holder.is_none() {
            holder = Some(target);
        } else {
            others.push(target);
        }
    }
    (holder, others)
}

/// A process that does not hold the timelines worker, when one is up: its posts reach
/// the worker only at the holder's next (delayed) wake-up.
async fn away_from_timelines(world: &World, rng: &mut Rng) -> Target {
    match by_timelines(world).await.1.pop() {
        Some(target) => target,
        None => world.pick(rng).await,
    }
}

/// Users never used by a late-push scenario, taken three at a time.
fn fresh_triple(world: &World) -> Option<[String; 3]> {
    let mut model = world.model();
    let taken = model.focus_taken;
    let users: Vec<String> = model
        .users
        .keys()
        .skip(2 + taken)
        .take(3)
        .cloned()
        .collect();
    let [r, a, b] = <[String; 3]>::try_from(users).ok()?;
    model.focus_taken += 3;
    Some([r, a, b])
}

/// Reader `r` follows `a` (whose audience, with the fans (the first two users), is above
/// `inline_fanout_max`, so the worker delivers a's posts); `a` posts P, all through a
/// process without the timelines worker; `b` posts `cache_size + 2` times. Then either
/// `r` follows `b` and reads (its cache is built, cut at `cache_size`), or `r` read
/// before P (an empty, complete cache) and follows `b` only now (a backfill cut at
/// `cache_size`); then `b` deletes one of the cached posts. The worker's push of P,
/// older than every cached entry, must not make b's posts below the cache unreachable.
pub async fn late_push(world: &World, rng: &mut Rng) {
    let Some([r, a, b]) = fresh_triple(world) else {
        return super::super::reads::timeline(world, rng).await;
    };
    let api = Api::pick(world, rng);
    let away = away_from_timelines(world, rng).await;
    let fans: Vec<String> = world.model().users.keys().take(2).cloned().collect();
    let audience = world.topology.inline_fanout_max as usize + 1;
    let mut followers = vec![r.clone()];
    followers.extend(fans.into_iter().take(audience - 1));
    for follower in &followers {
        toggle_at(world, &away, follower, a.clone(), false, true).await;
    }
    let limit = rng.random_range(1..=world.topology.cache_size);
    let backfill = rng.random_bool(0.5);
    if backfill {
        first_page(world, &away, api, &r, limit).await;
    } else {
        toggle_at(world, &away, &r, b.clone(), false, true).await;
    }
    super::super::ops::post_as(world, &away, &a).await;
    // Every later write through the same process: one through the holder would wake
    // its worker at once.
    let here = away;
    for _ in 0..world.topology.cache_size + 2 {
        super::super::ops::post_as(world, &here, &b).await;
    }
    if backfill {
        toggle_at(world, &here, &r, b.clone(), false, true).await;
    }
    let served = first_page(world, &here, api, &r, limit).await;
    let b_posts: Vec<String> = {
        let model = world.model();
        served
            .into_iter()
            .filter(|id| {
                model
                    .by_id
                    .get(id)
                    .is_some_and(|&i| model.posts[i].author == b)
            })
            .collect()
    };
    if !b_posts.is_empty() {
        let id = b_posts[rng.random_range(0..b_posts.len())].clone();
        super::super::ops::delete_at(world, &here, &id, &b).await;
    }
}

/// `a` follows `b` (who has posts), then an unfollow and a follow of the pair at once,
/// through two processes (the unfollow through the timelines worker's holder), the
/// follow a little later.
pub async fn flip_pair(world: &World, rng: &mut Rng) {
    let (a, b) = (any_user(world, rng), any_user(world, rng));
    if a == b {
        return;
    }
    let posts = world
        .model()
        .posts
        .iter()
        .filter(|p| p.author == b && p.id.is_some())
        .count();
    if posts < 2 {
        let target = world.pick(rng).await;
        super::super::ops::post_as(world, &target, &b).await;
        super::super::ops::post_as(world, &target, &b).await;
    }
    let target = world.pick(rng).await;
    toggle_at(world, &target, &a, b.clone(), false, true).await;
    if world.topology.strategy == FeedStrategy::Cache {
        // A cache to lose b's posts from.
        first_page(world, &target, Api::V1, &a, 2).await;
    }
    // The unfollow through the worker's holder, which the unfollow wakes at once: the
    // worker's own upkeep of the unfollow can then come before the request's.
    let (holder, mut others) = by_timelines(world).await;
    let t1 = match holder {
        Some(t) => t,
        None => world.pick(rng).await,
    };
    let t2 = match others.pop() {
        Some(t) => t,
        None => world.pick(rng).await,
    };
    let lag = Duration::from_millis(rng.random_range(0..=8));
    tokio::join!(toggle_at(world, &t1, &a, b.clone(), false, false), async {
        tokio::time::sleep(lag).await;
        toggle_at(world, &t2, &a, b.clone(), false, true).await
    });
}

/// Two or three quick follows of one user, then its profile a few times: the count may
/// never go below what the acknowledged follows imply.
pub async fn follow_storm(world: &World, rng: &mut Rng) {
    let x = any_user(world, rng);
    let target = world.pick(rng).await;
    for _ in 0..rng.random_range(2..=3) {
        let f = any_user(world, rng);
        if f != x {
            toggle_at(world, &target, &f, x.clone(), false, true).await;
        }
        if rng.random_bool(0.3) {
            let u = any_user(world, rng);
            if u != x {
                toggle_at(world, &target, &u, x.clone(), false, false).await;
            }
        }
    }
    for _ in 0..3 {
        super::super::reads::profile_of(world, rng, x.clone()).await;
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// A page read twice on one process (the second is served kept when nothing moved),
/// then a block or mute of one of the page's authors (timed, sometimes), and the page
/// again on the same process and on another: no page may show that author once the
/// block or mute was answered. Half the time it is lifted again afterwards, and the
/// reader follows the author back, so the run keeps edges to hide.
pub async fn hide_race(world: &World, rng: &mut Rng) {
    let api = Api::pick(world, rng);
    let reader = any_user(world, rng);
    let target = world.pick(rng).await;
    let limit = rng.random_range(2..=6);
    first_page(world, &target, api, &reader, limit).await;
    let served = first_page(world, &target, api, &reader, limit).await;
    let authors: Vec<String> = {
        let model = world.model();
        served
            .iter()
            .filter_map(|id| model.by_id.get(id))
            .map(|&i| model.posts[i].author.clone())
            .filter(|a| *a != reader)
            .collect()
    };
    let Some(author) =
        (!authors.is_empty()).then(|| authors[rng.random_range(0..authors.len())].clone())
    else {
        return;
    };
    let kind = if rng.random_bool(0.5) {
        Relation::Block
    } else {
        Relation::Mute
    };
    let lasts_s = (kind == Relation::Mute && rng.random_bool(0.3)).then_some(1);
    // A block either way: the reader's, or one of the reader by the author, which hides
    // the author from the reader just the same.
    let (by, of) = match kind == Relation::Block && rng.random_bool(0.5) {
        true => (author.as_str(), reader.as_str()),
        false => (reader.as_str(), author.as_str()),
    };
    relation_at(world, &target, by, of, kind, true, lasts_s, true).await;
    first_page(world, &target, api, &reader, limit).await;
    let other = world.pick(rng).await;
    first_page(world, &other, api, &reader, limit).await;
    if lasts_s.is_some() {
        // Past the expiry, the author's posts may show again; they must not before it.
        tokio::time::sleep(Duration::from_millis(1_100)).await;
        first_page(world, &target, api, &reader, limit).await;
    }
    if rng.random_bool(0.5) {
        relation_at(world, &target, by, of, kind, false, None, true).await;
        if kind == Relation::Block {
            toggle_at(world, &target, &reader, author.clone(), false, true).await;
        }
        first_page(world, &target, api, &reader, limit).await;
    }
}

/// A repost in a reader's first page, read twice on one process (the second served
/// kept when nothing moved), then the original's delete, the unrepost, or a block or
/// mute of the reposter or of the original's author, and the page again on the same
/// process and on another: no page may show the repost once that was answered.
pub async fn repost_race(world: &World, rng: &mut Rng) {
    let api = Api::pick(world, rng);
    let (reader, by) = (any_user(world, rng), any_user(world, rng));
    if reader == by {
        return;
    }
    let target = world.pick(rng).await;
    toggle_at(world, &target, &reader, by.clone(), false, true).await;
    let original = {
        let model = world.model();
        let live: Vec<(String, String)> = model
            .posts
            .iter()
            .filter(|p| p.deletes.is_empty() && p.author != reader)
            .filter_map(|p| Some((p.id.clone()?, p.author.clone())))
            .collect();
        (!live.is_empty()).then(|| live[rng.random_range(live.len() / 2..live.len())].clone())
    };
    let Some((post, author)) = original else {
        return;
    };
    super::super::reposts::repost_at(world, &target, &by, &post, true).await;
    let id = world
        .model()
        .repost_ids
        .iter()
        .filter(|(_, r)| r.user == by && r.post == post)
        .max_by_key(|(_, r)| r.known)
        .map(|(id, _)| id.clone());
    let limit = rng.random_range(2..=4);
    // Until the repost shows (a worker delivers it to a larger audience), then once
    // more, on the same process: the page and what it hides are read under a version.
    for _ in 0..8 {
        let ids = first_page(world, &target, api, &reader, limit).await;
        if id.as_ref().is_none_or(|id| ids.contains(id)) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    first_page(world, &target, api, &reader, limit).await;
    match rng.random_range(0..4) {
        0 => super::super::ops::delete_at(world, &target, &post, &author).await,
        1 => super::super::reposts::repost_at(world, &target, &by, &post, false).await,
        k => {
            let kind = if k == 2 {
                Relation::Block
            } else {
                Relation::Mute
            };
            // The original's author more often: a reader who does not follow them sees
            // their post only through the repost, so only the filter hides it.
            let whom = if rng.random_bool(0.35) { &by } else { &author };
            // A block either way: the reader's, or one of the reader by the other.
            let (a, b) = match kind == Relation::Block && rng.random_bool(0.6) {
                true => (whom.as_str(), reader.as_str()),
                false => (reader.as_str(), whom.as_str()),
            };
            if a != b {
                relation_at(world, &target, a, b, kind, true, None, true).await;
            }
        }
    }
    first_page(world, &target, api, &reader, limit).await;
    let other = world.pick(rng).await;
    first_page(world, &other, api, &reader, limit).await;
}
