//! A virtual client's posts (with tags and mentions), replies (to a live post, one's
//! own, or a deleted one, which must be refused) and deletes, each recorded in the model
//! with the interval its request was in flight and its outcome.

use rand::RngExt;
use reqwest::{Method, StatusCode};
use serde_json::json;

use super::super::cluster::Target;
use super::super::model::{Model, NEVER, PostM, Span};
use super::super::world::{Reply, Rng, World};
use super::{any_user, outcome};

const TAGS: [&str; 5] = ["#rust", "#feed", "#cats", "#news", "#t_1"];

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
