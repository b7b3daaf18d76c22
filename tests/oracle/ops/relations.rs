//! A virtual client's blocks and mutes and their undoing, each recorded in the model
//! with the interval its request was in flight and its outcome; a block also as the
//! unfollows it makes both ways.

use rand::RngExt;
use reqwest::Method;
use serde_json::json;

use super::super::cluster::Target;
use super::super::model::{NEVER, Span, Toggle};
use super::super::world::{Rng, World};
use super::{any_user, outcome};

/// Which relation [`relation`] sets or lifts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Relation {
    Block,
    Mute,
}

/// A block or mute (`on`), or its undo, of a random pair.
pub async fn relation(world: &World, rng: &mut Rng, kind: Relation, on: bool) {
    let (user, other) = (any_user(world, rng), any_user(world, rng));
    if user == other {
        return;
    }
    // Timed mutes short enough to expire within a run, and long ones.
    let lasts_s =
        (kind == Relation::Mute && on && rng.random_bool(0.5)).then(|| rng.random_range(1..=4u64));
    // A quarter of the mutes leave notifications alone.
    let quiet = !(kind == Relation::Mute && on && rng.random_bool(0.25));
    let target = world.pick(rng).await;
    relation_at(world, &target, &user, &other, kind, on, lasts_s, quiet).await;
}

/// A block (or mute, for `lasts_s` seconds when given) of `other` by `user`, or its
/// undo, via `target`; a mute hides notifications too when `quiet` (the default). A
/// block also takes away the follows both ways: the model records it as an unfollow of
/// each, in flight as long as the block.
#[allow(clippy::too_many_arguments)]
pub async fn relation_at(
    world: &World,
    target: &Target,
    user: &str,
    other: &str,
    kind: Relation,
    on: bool,
    lasts_s: Option<u64>,
    quiet: bool,
) {
    let (user, other) = (user.to_owned(), other.to_owned());
    let noun = match kind {
        Relation::Block => "blocks",
        Relation::Mute => "mutes",
    };
    let path = format!("/v1/users/{user}/{noun}/{other}");
    let key = (user.clone(), other.clone());
    let token = world.token(&user);
    let method = if on { Method::PUT } else { Method::DELETE };
    let body = match (lasts_s, quiet) {
        (None, true) => None,
        (Some(s), true) => Some(json!({ "duration": format!("{s}s") })),
        (None, false) => Some(json!({ "notifications": false })),
        (Some(s), false) => Some(json!({ "duration": format!("{s}s"), "notifications": false })),
    };
    let invoke = world.now();
    let pending = Toggle {
        on,
        span: Span {
            invoke,
            complete: NEVER,
        },
    };
    {
        let mut model = world.model();
        match kind {
            Relation::Block => {
                model.blocks.entry(key.clone()).or_default().push(pending);
                if on {
                    for pair in [(user.clone(), other.clone()), (other.clone(), user.clone())] {
                        let unfollow = Toggle {
                            on: false,
                            ..pending
                        };
                        model.pairs.entry(pair).or_default().push(unfollow);
                    }
                }
            }
            Relation::Mute => {
                let lasts = lasts_s.map(|s| (s * 1_000_000) as i64);
                model
                    .mutes
                    .entry(key.clone())
                    .or_default()
                    .push((pending, lasts));
                let hushes = Toggle {
                    on: on && quiet,
                    ..pending
                };
                model
                    .notify_mutes
                    .entry(key.clone())
                    .or_default()
                    .push((hushes, lasts));
            }
        }
    }
    let reply = world
        .call(target, method.clone(), &path, Some(&token), body)
        .await;
    let result = outcome(world, &reply);
    let mut model = world.model();
    let mine = |t: &Toggle| t.span.invoke == invoke && t.span.complete == NEVER;
    let implied = [(user.clone(), other.clone()), (other.clone(), user.clone())];
    match result {
        Ok(complete) => {
            let settle = |t: &mut Toggle| {
                if mine(t) {
                    t.span.complete = complete;
                }
            };
            match kind {
                Relation::Block => {
                    model
                        .blocks
                        .get_mut(&key)
                        .unwrap()
                        .iter_mut()
                        .for_each(settle);
                    if on {
                        for pair in &implied {
                            let ops = model.pairs.get_mut(pair).unwrap();
                            ops.iter_mut().filter(|t| !t.on).for_each(settle);
                        }
                    }
                }
                Relation::Mute => {
                    let ops = model.mutes.get_mut(&key).unwrap();
                    ops.iter_mut().for_each(|(t, _)| settle(t));
                    let ops = model.notify_mutes.get_mut(&key).unwrap();
                    ops.iter_mut().for_each(|(t, _)| settle(t));
                }
            }
            model.record(
                Span { invoke, complete },
                format!(
                    "{method} {path} {lasts_s:?} quiet={quiet} via {}",
                    target.slot
                ),
            );
        }
        Err(status) => {
            match kind {
                Relation::Block => {
                    model.blocks.get_mut(&key).unwrap().retain(|t| !mine(t));
                    if on {
                        for pair in &implied {
                            let ops = model.pairs.get_mut(pair).unwrap();
                            ops.retain(|t| t.on || !mine(t));
                        }
                    }
                }
                Relation::Mute => {
                    model.mutes.get_mut(&key).unwrap().retain(|(t, _)| !mine(t));
                    let ops = model.notify_mutes.get_mut(&key).unwrap();
                    ops.retain(|(t, _)| !mine(t));
                }
            }
            if let Some(status) = status {
                model.violation(format!("{method} {path}: {status} {reply:?}"));
            }
        }
    }
}
