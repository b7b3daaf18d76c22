//! The writes a virtual client makes, each recorded in the model with the interval its
//! request was in flight and its outcome: follows, likes and renames here, posts,
//! replies and deletes in `ops/posts.rs`, blocks and mutes in `ops/relations.rs`.

mod posts;
mod relations;

pub use posts::{delete, delete_at, post, post_as, reply};
pub use relations::{Relation, relation, relation_at};

use rand::RngExt;
use reqwest::{Method, StatusCode};
use serde_json::json;

use super::cluster::Target;
use super::model::{Model, NEVER, Span, Toggle};
use super::world::{Reply, Rng, World};

/// A user of the run, at random.
pub fn any_user(world: &World, rng: &mut Rng) -> String {
    let model = world.model();
    let users: Vec<&String> = model.users.keys().collect();
    users[rng.random_range(0..users.len())].clone()
}

/// `Some(complete)` for a 2xx, `None` (unknown) for a lost request or a 503, and
/// `Err` for an answer that says it surely did nothing.
pub fn outcome(world: &World, reply: &Reply) -> Result<i64, Option<StatusCode>> {
    match reply {
        Reply::Answer(s, _) if s.is_success() => Ok(world.now()),
        Reply::Answer(s, _) if s.is_server_error() => Ok(NEVER),
        Reply::Lost => Ok(NEVER),
        Reply::Answer(s, _) => Err(Some(*s)),
        Reply::Refused => Err(None),
    }
}

/// Follow or unfollow (`on`), like or unlike.
pub async fn toggle(world: &World, rng: &mut Rng, like: bool, on: bool) {
    // Most unlikes undo a like that was sent, so that notifications get taken away.
    let liked: Vec<(String, String)> = if like && !on {
        let model = world.model();
        model
            .likes
            .iter()
            .filter(|(_, ops)| ops.last().is_some_and(|t| t.on))
            .map(|(k, _)| k.clone())
            .collect()
    } else {
        Vec::new()
    };
    if !liked.is_empty() && rng.random_bool(0.8) {
        let (user, post) = liked[rng.random_range(0..liked.len())].clone();
        let target = world.pick(rng).await;
        return toggle_at(world, &target, &user, post, true, false).await;
    }
    let user = any_user(world, rng);
    let (object, _key) = if like {
        let model = world.model();
        let ids: Vec<&String> = model.by_id.keys().collect();
        if ids.is_empty() {
            return;
        }
        let id = ids[rng.random_range(0..ids.len())].clone();
        (id.clone(), format!("/v1/users/{user}/likes/{id}"))
    } else {
        let other = any_user(world, rng);
        if other == user {
            return;
        }
        (other.clone(), format!("/v1/users/{user}/following/{other}"))
    };
    let target = world.pick(rng).await;
    toggle_at(world, &target, &user, object, like, on).await;
}

/// Follow or unfollow of `object` (like or unlike when `like`) by `user` via `target`.
pub async fn toggle_at(
    world: &World,
    target: &Target,
    user: &str,
    object: String,
    like: bool,
    on: bool,
) {
    let user = user.to_owned();
    let key = if like {
        format!("/v1/users/{user}/likes/{object}")
    } else {
        format!("/v1/users/{user}/following/{object}")
    };
    let token = world.token(&user);
    let method = if on { Method::PUT } else { Method::DELETE };
    let invoke = world.now();
    {
        let mut model = world.model();
        let map = if like {
            &mut model.likes
        } else {
            &mut model.pairs
        };
        let span = Span {
            invoke,
            complete: NEVER,
        };
        map.entry((user.clone(), object.clone()))
            .or_default()
            .push(Toggle { on, span });
    }
    let reply = world
        .call(target, method.clone(), &key, Some(&token), None)
        .await;
    let result = outcome(world, &reply);
    let mut model = world.model();
    let (a, b, now) = (user.as_str(), object.as_str(), world.now());
    let blocked = !like
        && [(a, b), (b, a)]
            .iter()
            .any(|(x, y)| Model::may_hold(model.blocks_of(x, y), invoke, now));
    let map = if like {
        &mut model.likes
    } else {
        &mut model.pairs
    };
    let ops = map.get_mut(&(user.clone(), object.clone())).unwrap();
    let at = ops
        .iter()
        .position(|t| t.span.invoke == invoke && t.on == on)
        .unwrap();
    match result {
        Ok(complete) => {
            ops[at].span.complete = complete;
            model.record(
                Span { invoke, complete },
                format!("{method} {key} via {}", target.slot),
            );
        }
        Err(status) => {
            ops.remove(at);
            match status {
                // A like of a post deleted meanwhile.
                Some(StatusCode::NOT_FOUND) if like => {}
                // A follow while a block may stand either way.
                Some(StatusCode::FORBIDDEN | StatusCode::CONFLICT) if on && blocked => {}
                Some(status) => model.violation(format!("{method} {key}: {status} {reply:?}")),
                None => {}
            }
        }
    }
}

pub async fn rename(world: &World, rng: &mut Rng) {
    let user = any_user(world, rng);
    let target = world.pick(rng).await;
    let invoke = world.now();
    let name = {
        let mut model = world.model();
        let names = &mut model.users.get_mut(&user).unwrap().names;
        let name = format!("{user} v{}", names.len());
        names.push((
            name.clone(),
            Span {
                invoke,
                complete: NEVER,
            },
        ));
        name
    };
    let token = world.token(&user);
    let path = format!("/v1/users/{user}");
    let reply = world
        .call(
            &target,
            Method::PATCH,
            &path,
            Some(&token),
            Some(json!({ "display_name": name })),
        )
        .await;
    let result = outcome(world, &reply);
    let mut model = world.model();
    let names = &mut model.users.get_mut(&user).unwrap().names;
    let at = names.iter().position(|(n, _)| *n == name).unwrap();
    match result {
        Ok(complete) => {
            names[at].1.complete = complete;
            model.record(
                Span { invoke, complete },
                format!("rename {user} {name:?} via {}", target.slot),
            );
        }
        Err(status) => {
            names[at].1 = Span {
                invoke: NEVER,
                complete: NEVER,
            };
            if status.is_some() {
                model.violation(format!("rename {user}: {reply:?}"));
            }
        }
    }
}

/// An unfollow and a follow of one pair at the same moment, through two processes.
pub async fn flip(world: &World, rng: &mut Rng) {
    let (a, b) = (any_user(world, rng), any_user(world, rng));
    if a == b {
        return;
    }
    let (t1, t2) = (world.pick(rng).await, world.pick(rng).await);
    tokio::join!(
        toggle_at(world, &t1, &a, b.clone(), false, false),
        toggle_at(world, &t2, &a, b.clone(), false, true)
    );
}

/// Two quick follows of one user, then their profile: the count may not go backwards.
pub async fn follow_burst(world: &World, rng: &mut Rng) {
    let x = any_user(world, rng);
    for _ in 0..2 {
        let f = any_user(world, rng);
        if f != x {
            let target = world.pick(rng).await;
            toggle_at(world, &target, &f, x.clone(), false, true).await;
        }
    }
    super::reads::profile_of(world, rng, x).await;
}
