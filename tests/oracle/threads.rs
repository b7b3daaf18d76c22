//! Threads: `GET /v1/posts/{id}/context` read during the run (every post it serves may
//! have been live, and each ancestor answers the next as written) and, after quiescence,
//! for a sample of posts, against the thread the sources imply: the ancestors root first
//! up to the first deleted one (named as `missing_ancestor`), the live descendants depth
//! first with each post's replies oldest first, none reached through a deleted reply.

use std::collections::BTreeMap;

use rand::RngExt;
use serde_json::Value;
use socialite::derived::{PostSource, Sources};
use socialite::domain::{MAX_ANCESTORS, MAX_DESCENDANTS, PostId, ReplyTo};

use super::world::{Rng, Stats, World};

fn ids(list: &Value) -> Vec<String> {
    list.as_array()
        .into_iter()
        .flatten()
        .map(|p| p["id"].as_str().unwrap_or_default().to_owned())
        .collect()
}

/// A context read of a random known post, without credentials, checked for safety.
pub async fn read(world: &World, rng: &mut Rng) {
    let id = {
        let model = world.model();
        let known: Vec<&String> = model.by_id.keys().collect();
        if known.is_empty() {
            return;
        }
        known[rng.random_range(0..known.len())].clone()
    };
    let target = world.pick(rng).await;
    let path = format!("/v1/posts/{id}/context");
    let t0 = world.now();
    let reply = world
        .call(&target, reqwest::Method::GET, &path, None, None)
        .await;
    let t1 = world.now();
    let body = match reply {
        super::world::Reply::Answer(reqwest::StatusCode::OK, body) => body,
        // The post may have been deleted meanwhile; the delete's own checks hold that.
        _ => return,
    };
    Stats::bump(&world.stats.reads_checked);
    let mut model = world.model();
    // The chain as served, root first, then the post itself.
    let mut chain = ids(&body["ancestors"]);
    chain.push(id.clone());
    let served: Vec<(String, String)> = ["ancestors", "descendants"]
        .iter()
        .flat_map(|f| body[*f].as_array().cloned().unwrap_or_default())
        .map(|p| {
            (
                p["id"].as_str().unwrap_or_default().to_owned(),
                p["text"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect();
    for (post, text) in &served {
        let Some(i) = model.learn(post, text) else {
            model.violation(format!("context of {id}: unknown post {post} {text:?}"));
            continue;
        };
        if !model.post_may_be_live(i, t0, t1) {
            model.violation(format!(
                "context of {id} via {} [{t0}..{t1}]: {post} served after its delete was acknowledged",
                target.slot
            ));
        }
    }
    for pair in chain.windows(2) {
        let child = model.by_id.get(&pair[1]).copied();
        let parent = child
            .and_then(|c| model.posts[c].reply_to)
            .and_then(|p| model.posts[p].id.clone());
        if child.is_some() && parent.as_ref() != Some(&pair[0]) {
            model.violation(format!(
                "context of {id}: ancestor {} above {}, which answers {parent:?}",
                pair[0], pair[1]
            ));
        }
    }
}

/// The context the sources imply for the live post `id`.
struct Expected {
    ancestors: Vec<PostId>,
    truncated: bool,
    missing: Option<ReplyTo>,
    descendants: Vec<PostId>,
}

fn expected(s: &Sources, children: &BTreeMap<PostId, Vec<PostId>>, id: PostId) -> Expected {
    let mut ancestors = Vec::new();
    let (mut truncated, mut missing) = (false, None);
    let mut next = s.posts[&id].reply_to.clone();
    while let Some(parent) = next.take() {
        if ancestors.len() == MAX_ANCESTORS {
            truncated = true;
            break;
        }
        match s.posts.get(&parent.post).filter(|p| p.live()) {
            Some(p) => {
                ancestors.push(parent.post);
                next = p.reply_to.clone();
            }
            None => missing = Some(parent),
        }
    }
    ancestors.reverse();
    let mut descendants = Vec::new();
    let mut stack = vec![id];
    while let Some(p) = stack.pop() {
        if p != id {
            descendants.push(p);
        }
        // Oldest first when popped: pushed newest first.
        stack.extend(children.get(&p).into_iter().flatten().rev());
    }
    Expected {
        ancestors,
        truncated,
        missing,
        descendants,
    }
}

/// After quiescence: the context of up to `sample` live posts (those in threads first)
/// against the sources.
pub async fn converge(world: &World, s: &Sources, sample: usize) -> Vec<String> {
    let live = |p: &&PostSource| p.live();
    let mut children: BTreeMap<PostId, Vec<PostId>> = BTreeMap::new();
    for (id, p) in s.posts.iter().filter(|(_, p)| live(p)) {
        if let Some(parent) = &p.reply_to {
            children.entry(parent.post).or_default().push(*id);
        }
    }
    // Ids ascend in creation order, so each list is oldest first.
    let threaded: Vec<PostId> = s
        .posts
        .iter()
        .filter(|(id, p)| live(p) && (p.reply_to.is_some() || children.contains_key(id)))
        .map(|(id, _)| *id)
        .collect();
    let step = threaded.len().div_ceil(sample.max(1)).max(1);
    let Some(target) = world.cluster.up().into_iter().next() else {
        return vec!["no process up for the context checks".into()];
    };
    let mut faults = Vec::new();
    for id in threaded.iter().step_by(step) {
        let want = expected(s, &children, *id);
        if want.descendants.len() > MAX_DESCENDANTS {
            continue;
        }
        let path = format!("/v1/posts/{id}/context");
        let Some(body) = world.read(&target, &path, None).await else {
            faults.push(format!("GET {path} failed"));
            continue;
        };
        let ancestors = ids(&body["ancestors"]);
        let descendants = ids(&body["descendants"]);
        let missing = body["missing_ancestor"]["post"].as_str().map(str::to_owned);
        let show = |v: &[PostId]| v.iter().map(PostId::to_string).collect::<Vec<_>>();
        let want_missing = want.missing.as_ref().map(|m| m.post.to_string());
        if ancestors != show(&want.ancestors)
            || descendants != show(&want.descendants)
            || missing != want_missing
            || body["ancestors_truncated"] != want.truncated
            || body["descendants_truncated"] != false
            || want.missing.as_ref().is_some_and(|m| {
                body["missing_ancestor"]["author"].as_str() != Some(m.author.as_str())
            })
        {
            faults.push(format!(
                "context of {id} ({}): ancestors {ancestors:?} missing {missing:?} descendants {descendants:?}, the sources give {:?} missing {want_missing:?} descendants {:?}",
                s.posts[id].author,
                show(&want.ancestors),
                show(&want.descendants)
            ));
        }
    }
    faults
}
