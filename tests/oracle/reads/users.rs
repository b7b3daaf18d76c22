//! Reads of one user during the run: the profile's counters, never below what
//! acknowledged writes imply, and the activity log, newest first.

use serde_json::Value;

use super::super::model::Model;
use super::super::ops::any_user;
use super::super::world::{Rng, Stats, World};

/// A profile's counters never below what acknowledged writes imply.
pub async fn profile(world: &World, rng: &mut Rng) {
    let user = any_user(world, rng);
    profile_of(world, rng, user).await;
}

pub async fn profile_of(world: &World, rng: &mut Rng, user: String) {
    let target = world.pick(rng).await;
    let t0 = world.now();
    let Some(body) = world
        .read(&target, &format!("/v1/users/{user}"), None)
        .await
    else {
        return;
    };
    let t1 = world.now();
    Stats::bump(&world.stats.reads_checked);
    let mut model = world.model();
    let (mut lo, mut hi) = ([0u64; 3], [0u64; 3]);
    for ((a, b), ops) in &model.pairs {
        let (surely, maybe) = (
            Model::surely_holds(ops, t0, t1),
            Model::may_hold(ops, t0, t1),
        );
        for (k, end) in [(0, b), (1, a)] {
            if *end == user {
                lo[k] += u64::from(surely);
                hi[k] += u64::from(maybe);
            }
        }
    }
    for i in 0..model.posts.len() {
        if model.posts[i].author == user {
            lo[2] += u64::from(model.post_surely_live(i, t0, t1));
            hi[2] += u64::from(model.post_may_be_live(i, t0, t1));
        }
    }
    for (k, field) in ["followers_count", "following_count", "posts_count"]
        .iter()
        .enumerate()
    {
        let shown = body[field].as_u64().unwrap_or(u64::MAX);
        // Never below what acknowledged writes imply; above is allowed while writes
        // race with recounts (exact after quiescence).
        if shown < lo[k] {
            let what = format!(
                "{user}'s {field} via {} [{t0}..{t1}] is {shown}, acknowledged writes allow {}..={}",
                target.slot, lo[k], hi[k]
            );
            model.violation(what);
        }
    }
    let name = body["display_name"].as_str().unwrap_or_default().to_owned();
    if !model.fresh_names_of(&user, t0, t1).contains(&name.as_str()) {
        model.violation(format!(
            "{user}'s display name {name:?} via {} was not theirs during [{t0}..{t1}]",
            target.slot
        ));
    }
}

/// An activity page: newest first (how often each entry shows is checked after
/// quiescence, against the history).
pub async fn activity(world: &World, rng: &mut Rng) {
    let user = any_user(world, rng);
    let target = world.pick(rng).await;
    let token = world.token(&user);
    let path = format!("/v1/users/{user}/activity?limit=100");
    let Some(body) = world.read(&target, &path, Some(&token)).await else {
        return;
    };
    Stats::bump(&world.stats.reads_checked);
    let entries = activity_entries(&body);
    if let Some(fault) = socialite::derived::newest_first(&entries) {
        world
            .model()
            .violation(format!("{user}'s activity via {}: {fault}", target.slot));
    }
}

/// `((type, ref), ts)` of each served activity entry.
pub fn activity_entries(body: &Value) -> Vec<((String, String), i64)> {
    body["items"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|e| {
            // A fixed-width RFC 3339 time: its digits order as the times do.
            let digits: String = e["ts"]
                .as_str()
                .unwrap_or_default()
                .chars()
                .filter(char::is_ascii_digit)
                .collect();
            let ts = digits.parse::<i64>().ok();
            (
                (
                    e["type"].as_str().unwrap_or_default().to_owned(),
                    e["ref"].as_str().unwrap_or_default().to_owned(),
                ),
                ts.unwrap_or_default(),
            )
        })
        .collect()
}
