//! The repost writes of the run: which pair a repost or unrepost picks, and each
//! write's outcome recorded in the history, its answer checked against it (the
//! repost's id and pair, a 404 only after a delete was sent or while a block may stand).

use rand::RngExt;
use reqwest::{Method, StatusCode};

use super::super::cluster::Target;
use super::super::model::{Model, NEVER, PostM, Span, Toggle};
use super::super::ops::outcome;
use super::super::world::{Reply, Rng, Stats, World};

/// A repost (`on`) or an unrepost. Reposts: of anyone's post, of one's own, of a pair
/// that stands already (a second `PUT` answers the standing repost), and now and then
/// of a post whose delete was acknowledged (a 404). Most unreposts undo a repost sent.
pub async fn repost(world: &World, rng: &mut Rng, on: bool) {
    let kind = rng.random_range(0..10);
    let choice = {
        let model = world.model();
        let standing: Vec<(String, String)> = model
            .reposts
            .iter()
            .filter(|(_, ops)| ops.last().is_some_and(|t| t.on))
            .map(|(k, _)| k.clone())
            .collect();
        let gone = |p: &PostM| p.deletes.iter().any(|d| d.acked());
        let known: Vec<(usize, bool)> = (0..model.posts.len())
            .filter(|&i| model.posts[i].id.is_some())
            .map(|i| (i, gone(&model.posts[i])))
            .collect();
        let pick = |rng: &mut Rng, dead: bool| {
            let some: Vec<usize> = known
                .iter()
                .filter(|(_, g)| *g == dead)
                .map(|(i, _)| *i)
                .collect();
            (!some.is_empty()).then(|| some[rng.random_range(0..some.len())])
        };
        if (!on || kind < 2) && !standing.is_empty() && rng.random_bool(0.8) {
            Some(standing[rng.random_range(0..standing.len())].clone())
        } else {
            let i = match kind {
                2 => pick(rng, true),
                _ => pick(rng, false),
            };
            i.map(|i| {
                let post = &model.posts[i];
                let user = if (3..=4).contains(&kind) {
                    post.author.clone()
                } else {
                    let users: Vec<&String> = model.users.keys().collect();
                    users[rng.random_range(0..users.len())].clone()
                };
                (user, post.id.clone().unwrap())
            })
        }
    };
    let Some((user, post)) = choice else { return };
    let target = world.pick(rng).await;
    repost_at(world, &target, &user, &post, on).await;
}

/// A repost (`on`) or unrepost of `post` by `user` via `target`.
pub async fn repost_at(world: &World, target: &Target, user: &str, post: &str, on: bool) {
    let key = (user.to_owned(), post.to_owned());
    let path = format!("/v1/users/{user}/reposts/{post}");
    let token = world.token(user);
    let method = if on { Method::PUT } else { Method::DELETE };
    let invoke = world.now();
    let pending = Toggle {
        on,
        span: Span {
            invoke,
            complete: NEVER,
        },
    };
    world
        .model()
        .reposts
        .entry(key.clone())
        .or_default()
        .push(pending);
    let reply = world
        .call(target, method.clone(), &path, Some(&token), None)
        .await;
    let result = outcome(world, &reply);
    let now = world.now();
    let mut model = world.model();
    let index = model.by_id.get(post).copied();
    let author = index.map(|i| model.posts[i].author.clone());
    // Whether the post's delete was sent before `before`, or answered before it.
    let deleted = |model: &Model, before: i64, answered: bool| {
        index.is_some_and(|i| {
            model.posts[i].deletes.iter().any(|d| {
                if answered {
                    d.complete < before
                } else {
                    d.invoke < before
                }
            })
        })
    };
    let blocked = author.as_deref().is_some_and(|a| {
        [(a, user), (user, a)]
            .iter()
            .any(|(x, y)| Model::may_hold(model.blocks_of(x, y), invoke, now))
    });
    let ops = model.reposts.get_mut(&key).unwrap();
    let at = ops
        .iter()
        .position(|t| t.span.invoke == invoke && t.on == on && !t.span.acked())
        .unwrap();
    match result {
        Ok(complete) => {
            ops[at].span.complete = complete;
            let mut what = format!("{method} {path} via {}", target.slot);
            if let (true, Reply::Answer(status, body)) = (complete != NEVER && on, &reply) {
                let id = body["id"].as_str().unwrap_or_default().to_owned();
                what = format!("{what} -> {status} {id}");
                if body["reposted_by"].as_str() != Some(user)
                    || body["post"]["id"].as_str() != Some(post)
                {
                    model.violation(format!("{method} {path}: answered {body}"));
                }
                Stats::bump(&world.stats.reposts);
                if let Some(fault) = model.learn_repost(&id, user, post, complete) {
                    model.violation(fault);
                }
                if deleted(&model, invoke, true) {
                    model.violation(format!(
                        "{method} {path}: {status} after the post's delete was acknowledged"
                    ));
                }
            }
            model.record(Span { invoke, complete }, what);
        }
        Err(status) => {
            ops.remove(at);
            match status {
                Some(StatusCode::NOT_FOUND) if on => {
                    model.record(
                        Span {
                            invoke,
                            complete: now,
                        },
                        format!("{method} {path} via {} -> 404", target.slot),
                    );
                    if !deleted(&model, now, false) && !blocked {
                        model.violation(format!(
                            "{method} {path}: 404, yet no delete of the post was sent and no block may stand"
                        ));
                    }
                }
                Some(status) => model.violation(format!("{method} {path}: {status} {reply:?}")),
                None => {}
            }
        }
    }
}
