//! The writes a virtual client makes, each recorded in the model with the interval its
//! request was in flight and its outcome; token issue-and-revoke races.

use rand::RngExt;
use reqwest::{Method, StatusCode};
use serde_json::json;

use super::cluster::Target;
use super::model::{Model, NEVER, PostM, Span, Toggle};
use super::world::{Reply, Rng, World};

const TAGS: [&str; 5] = ["#rust", "#feed", "#cats", "#news", "#t_1"];

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

pub async fn post(world: &World, rng: &mut Rng) {
    let author = any_user(world, rng);
    let target = world.pick(rng).await;
    let mut words: Vec<String> = (0..rng.random_range(0..=3))
        .map(|_| TAGS[rng.random_range(0..TAGS.len())].to_owned())
        .collect();
    words.extend(mentions(world, rng, &author));
    post_with(world, &target, &author, &words, None).await;
}

/// Now and then a mention or two (`@id`): of anyone, the author included, or of a user
/// who does not exist.
fn mentions(world: &World, rng: &mut Rng, author: &str) -> Vec<String> {
    if !rng.random_bool(0.3) {
        return Vec::new();
    }
    (0..rng.random_range(1..=2))
        .map(|_| match rng.random_range(0..10) {
            0 => "@nobody".to_owned(),
            1 => format!("@{author}"),
            _ => format!("@{}", any_user(world, rng)),
        })
        .collect()
}

/// A reply: to a post of anyone's, to one's own (a self-thread, often to a reply), or
/// (now and then) to a post whose delete was acknowledged, which must be refused (404).
pub async fn reply(world: &World, rng: &mut Rng) {
    let kind = rng.random_range(0..10);
    let choice = {
        let model = world.model();
        let known = |p: &&PostM| p.id.is_some();
        let gone = |p: &PostM| p.deletes.iter().any(|d| d.acked());
        let candidates: Vec<usize> = (0..model.posts.len())
            .filter(|&i| known(&&model.posts[i]))
            .filter(|&i| (kind == 0) == gone(&model.posts[i]))
            .collect();
        // The newer half more often, so that threads grow deep.
        (!candidates.is_empty()).then(|| {
            let from = if rng.random_bool(0.5) {
                candidates.len() / 2
            } else {
                0
            };
            let i = candidates[rng.random_range(from..candidates.len())];
            (i, model.posts[i].author.clone())
        })
    };
    let Some((parent, parent_author)) = choice else {
        return;
    };
    // A self-thread three times in ten, else anyone (the parent's author now and then).
    let author = if (1..=3).contains(&kind) {
        parent_author
    } else {
        any_user(world, rng)
    };
    let mut words = mentions(world, rng, &author);
    if rng.random_bool(0.2) {
        words.push(format!("@{}", world.model().posts[parent].author));
    }
    let target = world.pick(rng).await;
    post_with(world, &target, &author, &words, Some(parent)).await;
}

/// A post by `author` through `target`, without tags.
pub async fn post_as(world: &World, target: &Target, author: &str) {
    post_with(world, target, author, &[], None).await;
}

/// A post of `words` by `author`, answering the model's post `reply_to` when given.
async fn post_with(
    world: &World,
    target: &Target,
    author: &str,
    words: &[String],
    reply_to: Option<usize>,
) {
    let author = author.to_owned();
    let invoke = world.now();
    let (index, parent_id) = {
        let mut model = world.model();
        let index = model.posts.len();
        let parent_id = reply_to.and_then(|p| model.posts[p].id.clone());
        model.posts.push(PostM {
            author: author.clone(),
            text: format!("n:{index} {}", words.join(" ")),
            id: None,
            create: Span {
                invoke,
                complete: NEVER,
            },
            deletes: Vec::new(),
            reply_to,
        });
        (index, parent_id)
    };
    let text = world.model().posts[index].text.clone();
    let token = world.token(&author);
    let path = format!("/v1/users/{author}/posts");
    let body = match &parent_id {
        Some(parent) => json!({ "text": text, "in_reply_to": parent }),
        None => json!({ "text": text }),
    };
    let reply = world
        .call(target, Method::POST, &path, Some(&token), Some(body))
        .await;
    let result = outcome(world, &reply);
    let now = world.now();
    let mut model = world.model();
    let answers = parent_id
        .as_ref()
        .map(|p| format!(" answering {p}"))
        .unwrap_or_default();
    // Whether the parent's delete was acknowledged before this request was sent, or
    // may have landed before it was answered.
    let parent_gone = |model: &Model, before: i64, complete: bool| {
        reply_to.is_some_and(|p| {
            model.posts[p].deletes.iter().any(|d| {
                if complete {
                    d.complete < before
                } else {
                    d.invoke < before
                }
            })
        })
    };
    match (result, &reply) {
        (Ok(complete), Reply::Answer(_, body)) if complete != NEVER => {
            let id = body["id"].as_str().unwrap_or_default().to_owned();
            model.posts[index].create.complete = complete;
            model.posts[index].id = Some(id.clone());
            model.by_id.insert(id.clone(), index);
            model.record(
                Span { invoke, complete },
                format!(
                    "post {author} {text:?}{answers} via {} -> {id}",
                    target.slot
                ),
            );
            if parent_gone(&model, invoke, true) {
                model.violation(format!(
                    "reply {id} by {author} to {parent_id:?} accepted after the parent's delete was acknowledged"
                ));
            }
            let served = body["reply_to"]["post"].as_str().map(str::to_owned);
            if served != parent_id {
                model.violation(format!(
                    "post {id} by {author} answered with reply_to {:?}, sent {parent_id:?}",
                    body["reply_to"]
                ));
            }
        }
        (Ok(_), _) => model.record(
            Span {
                invoke,
                complete: NEVER,
            },
            format!(
                "post {author} {text:?}{answers} via {} -> unknown",
                target.slot
            ),
        ),
        (Err(status), _) => {
            model.posts[index].create = Span {
                invoke: NEVER,
                complete: NEVER,
            };
            let refused_reply = status == Some(StatusCode::NOT_FOUND) && parent_id.is_some();
            if refused_reply {
                model.record(
                    Span {
                        invoke,
                        complete: now,
                    },
                    format!("post {author} {text:?}{answers} via {} -> 404", target.slot),
                );
            }
            if refused_reply && !parent_gone(&model, now, false) {
                model.violation(format!(
                    "reply by {author} to {parent_id:?} refused (404), yet no delete of it was sent"
                ));
            } else if status.is_some() && !refused_reply {
                model.violation(format!("post {author} {text:?} refused: {reply:?}"));
            }
        }
    }
}

pub async fn delete(world: &World, rng: &mut Rng) {
    let choice = {
        let model = world.model();
        let live: Vec<(String, String)> = model
            .posts
            .iter()
            .filter(|p| p.deletes.iter().all(|d| !d.acked()))
            .filter_map(|p| p.id.clone().map(|id| (id, p.author.clone())))
            .collect();
        (!live.is_empty()).then(|| live[rng.random_range(0..live.len())].clone())
    };
    let Some((id, author)) = choice else { return };
    let target = world.pick(rng).await;
    delete_at(world, &target, &id, &author).await;
}

/// A delete of `author`'s post `id` through `target`.
pub async fn delete_at(world: &World, target: &Target, id: &str, author: &str) {
    let (id, author) = (id.to_owned(), author.to_owned());
    let token = world.token(&author);
    let invoke = world.now();
    let index = {
        let mut model = world.model();
        let index = model.by_id[&id];
        model.posts[index].deletes.push(Span {
            invoke,
            complete: NEVER,
        });
        index
    };
    let reply = world
        .call(
            target,
            Method::DELETE,
            &format!("/v1/posts/{id}"),
            Some(&token),
            None,
        )
        .await;
    let result = outcome(world, &reply);
    let mut model = world.model();
    let at = model.posts[index]
        .deletes
        .iter()
        .position(|d| d.invoke == invoke)
        .unwrap();
    match result {
        Ok(complete) => {
            model.posts[index].deletes[at].complete = complete;
            model.record(
                Span { invoke, complete },
                format!("delete {id} via {}", target.slot),
            );
        }
        Err(status) => {
            model.posts[index].deletes.remove(at);
            let p = &model.posts[index];
            match status {
                // Only a concurrent or unknown delete may have removed it.
                Some(StatusCode::NOT_FOUND) if p.create.acked() && p.deletes.is_empty() => {
                    model.violation(format!(
                        "delete {id} ({author}): 404, yet no other delete was ever sent"
                    ));
                }
                Some(StatusCode::NOT_FOUND) | None => {}
                Some(status) => model.violation(format!("delete {id}: {status}")),
            }
        }
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
