//! Mastodon's newer pages: `since_id` (the newest page, cut at the cursor) and `min_id`
//! (the page just above the cursor, newest first) on `GET /api/v1/timelines/home`,
//! `GET /api/v1/notifications` and `GET /api/v2/notifications` (by each group's latest
//! notification), with cursors that are ids (decimal, [the Mastodon
//! API](../../docs/mastodon.md)), numbers between ids, and snowflakes below 2^64 (a
//! time: `ms << 16`, the bound the smallest id of that millisecond).
//!
//! During the run a client reads a first page, takes a cursor from it and reads a
//! `since_id` or `min_id` page: every item above the cursor's bound, at most `limit`,
//! and each item checked as any page's (`reads::check_page`, `notes::check_items`).
//! After quiescence, for up to three of the users read through the Mastodon view, each
//! list is walked to the end (the walk is held to the model by `converge` and
//! `notes::converge`) and every newer page must be exactly its slice of the walk:
//! `since_id` the walk's first `limit` items above the bound, `min_id` the `limit`
//! items just above it.

use rand::{RngExt, SeedableRng};
use serde_json::Value;
use socialite::domain::PostId;

use super::cluster::Target;
use super::masto::{self, Api};
use super::notes::{self, Read};
use super::ops::any_user;
use super::reads::{Walk, check_page};
use super::world::{Rng, Stats, World};

/// The three lists, by the path of their first page.
const LISTS: [&str; 3] = [
    "/api/v1/timelines/home",
    "/api/v1/notifications",
    "/api/v2/notifications",
];

/// The number of a served id: `/v1`'s 24 hex digits (the mapped items' form).
fn number(item: &Value, grouped: bool) -> Option<u128> {
    let id = if grouped {
        &item["latest_id"]
    } else {
        &item["id"]
    };
    u128::from_str_radix(id.as_str()?, 16).ok()
}

/// A cursor near `id` as a Mastodon client may send it, and the bound it sets: the id,
/// the number just below it, or the snowflake of its millisecond.
fn cursor(rng: &mut Rng, id: u128) -> (String, u128) {
    match rng.random_range(0..3) {
        0 => (id.to_string(), id),
        1 => ((id - 1).to_string(), id - 1),
        _ => {
            let ms = PostId::from_u128(id).timestamp_ms();
            let snowflake = (ms as u64) << 16;
            (snowflake.to_string(), PostId::at(ms, 0).as_u128())
        }
    }
}

/// A page of `path` (list `n` of [`LISTS`]) for `user` as `/v1` items.
async fn page(
    world: &World,
    target: &Target,
    n: usize,
    path: &str,
    user: &str,
) -> Option<masto::Page> {
    let token = world.masto_token(user);
    match n {
        0 => masto::read_page(
            world,
            target,
            Api::Masto,
            path,
            &token,
            "items",
            masto::status_item,
        )
        .await
        .map(|(page, _)| page),
        _ => notes::page(world, target, Api::Masto, path, &token, user, n == 2).await,
    }
}

/// Checks `items` as any page of list `n`, read over `span`.
fn check(
    world: &World,
    n: usize,
    user: &str,
    via: &str,
    path: &str,
    items: &[Value],
    span: (i64, i64),
) {
    if n == 0 {
        check_page(
            world,
            user,
            &via,
            path,
            items,
            span,
            None,
            &mut Walk::default(),
        );
    } else {
        let read = Read {
            user,
            via,
            path,
            grouped: n == 2,
            filter: "",
            api: Api::Masto,
            span,
        };
        notes::check_items(world, &read, items, &mut None);
    }
}

/// During the run: a first page of a random user's list, then a `since_id` or `min_id`
/// page at a cursor taken from it, both checked.
pub async fn read(world: &World, rng: &mut Rng) {
    let user = any_user(world, rng);
    let target = world.pick(rng).await;
    let via = masto::via(target.slot, Api::Masto);
    let n = rng.random_range(0..LISTS.len());
    Stats::bump(&world.stats.masto_reads);
    let first = format!("{}?limit={}", LISTS[n], rng.random_range(2..=8));
    let t0 = world.now();
    let Some(head) = page(world, &target, n, &first, &user).await else {
        return;
    };
    check(
        world,
        n,
        &user,
        &via,
        &first,
        &head.items,
        (t0, world.now()),
    );
    let ids: Vec<u128> = head
        .items
        .iter()
        .filter_map(|i| number(i, n == 2))
        .collect();
    if ids.is_empty() {
        return;
    }
    let near = ids[rng.random_range(0..ids.len())];
    let (raw, bound) = cursor(rng, near);
    let which = if rng.random_bool(0.5) {
        "since_id"
    } else {
        "min_id"
    };
    let limit = rng.random_range(1..=6);
    let path = format!("{}?limit={limit}&{which}={raw}", LISTS[n]);
    let t0 = world.now();
    let Some(newer) = page(world, &target, n, &path, &user).await else {
        return;
    };
    let span = (t0, world.now());
    Stats::bump(&world.stats.newer_pages);
    check(world, n, &user, &via, &path, &newer.items, span);
    let served: Vec<u128> = newer
        .items
        .iter()
        .filter_map(|i| number(i, n == 2))
        .collect();
    if newer.items.len() > limit
        || served.len() != newer.items.len()
        || served.iter().any(|id| *id <= bound)
    {
        world.model().violation(format!(
            "{user}'s {path} via {via} [{}..{}]: {served:?} (bound {bound}, limit {limit})",
            span.0, span.1
        ));
    }
}

/// The slice of `walk` (ids newest first) a newer page must be: `since_id` the first
/// `limit` above `bound`, `min_id` the `limit` just above it.
pub fn expected(walk: &[u128], since: bool, bound: u128, limit: usize) -> Vec<u128> {
    let above = walk.iter().take_while(|id| **id > bound).count();
    match since {
        true => walk[..above.min(limit)].to_vec(),
        false => walk[above.saturating_sub(limit)..above].to_vec(),
    }
}

/// After quiescence: for up to three users read through the Mastodon view, each list
/// walked to the end and a few newer pages against their slices of the walk.
pub async fn converge(world: &World) -> Vec<String> {
    let mut faults = Vec::new();
    let mut rng = Rng::seed_from_u64(world.seed ^ 0x9a91);
    let users: Vec<String> = world.model().users.keys().cloned().collect();
    let sample = users
        .iter()
        .enumerate()
        .filter(|(n, _)| masto::at_convergence(world, *n).contains(&Api::Masto))
        .take(3);
    let target = world.cluster.up()[0].clone();
    for (_, user) in sample {
        for (n, list) in LISTS.iter().enumerate() {
            let walked = match n {
                0 => {
                    let path = format!("{list}?limit=40");
                    let map = masto::status_item;
                    masto::walk(world, &target, Api::Masto, user, &path, "items", map).await
                }
                1 => {
                    let path = format!("{list}?limit=40");
                    let map = |v: &Value| masto::notification_item(user, v);
                    masto::walk(world, &target, Api::Masto, user, &path, "items", map).await
                }
                _ => notes::walk_v2(world, &target, user).await,
            };
            let walk: Vec<u128> = match walked {
                Ok(items) => items.iter().filter_map(|i| number(i, n == 2)).collect(),
                Err(e) => {
                    faults.push(e);
                    continue;
                }
            };
            // Cursors near the walk's ids, and one above and one below everything.
            let mut cursors: Vec<(String, u128)> = vec![("0".to_owned(), 0)];
            if let Some(top) = walk.first() {
                cursors.push(((top + 1).to_string(), top + 1));
            }
            for _ in 0..3.min(walk.len()) {
                let near = walk[rng.random_range(0..walk.len())];
                cursors.push(cursor(&mut rng, near));
            }
            for (raw, bound) in cursors {
                let since = rng.random_bool(0.5);
                let which = if since { "since_id" } else { "min_id" };
                let limit = rng.random_range(1..=5);
                let path = format!("{list}?limit={limit}&{which}={raw}");
                // The stand-in can be slow: a page that times out or answers 503 is
                // asked again, up to four times, as `masto::walk` does.
                let mut got = None;
                for _ in 0..4 {
                    got = page(world, &target, n, &path, user).await;
                    if got.is_some() {
                        break;
                    }
                    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
                }
                let Some(got) = got else {
                    let token = world.masto_token(user);
                    let last = world.call(&target, reqwest::Method::GET, &path, Some(&token), None);
                    faults.push(format!(
                        "GET {path} for {user} failed 4 times, then: {:?}",
                        last.await
                    ));
                    continue;
                };
                let got: Vec<u128> = got.items.iter().filter_map(|i| number(i, n == 2)).collect();
                Stats::bump(&world.stats.newer_pages);
                let want = expected(&walk, since, bound, limit);
                if got != want {
                    faults.push(format!(
                        "{user}'s {path}: {got:?}, the walk's slice {want:?} (bound {bound}, walk of {})",
                        walk.len()
                    ));
                }
            }
        }
    }
    faults
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slices() {
        let walk = [9, 7, 5, 3, 1];
        assert_eq!(expected(&walk, true, 4, 2), [9, 7]);
        assert_eq!(expected(&walk, true, 8, 3), [9]);
        assert_eq!(expected(&walk, false, 4, 2), [7, 5]);
        assert_eq!(expected(&walk, false, 0, 2), [3, 1]);
        assert_eq!(expected(&walk, false, 9, 2), Vec::<u128>::new());
    }
}
