//! Token races: a token used while it is revoked must be refused at once in the
//! revoking process, and everywhere after `auth.token_cache_ttl`.

use reqwest::{Method, StatusCode};

use super::cluster::Target;
use super::model::Span;
use super::ops::any_user;
use super::world::{Reply, Rng, World};

/// Issues a token, uses it `uses` times while revoking it, then checks it is refused at once in the
/// revoking process and everywhere after `auth.token_cache_ttl`.
pub async fn token_race(world: &World, rng: &mut Rng, uses: u64) {
    let user = any_user(world, rng);
    let target = world.pick(rng).await;
    let main = world.token(&user);
    let issued = world
        .call(
            &target,
            Method::POST,
            &format!("/v1/users/{user}/tokens"),
            Some(&main),
            None,
        )
        .await;
    let Reply::Answer(StatusCode::CREATED, body) = issued else {
        return;
    };
    let (token, id) = (
        body["token"].as_str().unwrap().to_owned(),
        body["id"].as_str().unwrap().to_owned(),
    );
    revoke_while_used(world, rng, &target, &user, &token, &id, uses).await;
}

/// Revokes `user`'s token `id` through `target` while `uses` requests, staggered by a
/// millisecond each, use it there; then checks it is refused.
pub async fn revoke_while_used(
    world: &World,
    rng: &mut Rng,
    target: &Target,
    user: &str,
    token: &str,
    id: &str,
    uses: u64,
) {
    let main = world.token(user);
    let use_path = format!("/v1/users/{user}/timeline?limit=1");
    let revoke_path = format!("/v1/users/{user}/tokens/{id}");
    let uses = (0..uses).map(|k| {
        let use_path = &use_path;
        async move {
            tokio::time::sleep(std::time::Duration::from_millis(k)).await;
            world
                .call(target, Method::GET, use_path, Some(token), None)
                .await
        }
    });
    let invoke = world.now();
    let (revoked, _) = tokio::join!(
        world.call(target, Method::DELETE, &revoke_path, Some(&main), None),
        futures::future::join_all(uses)
    );
    let complete = match revoked {
        Reply::Answer(StatusCode::NO_CONTENT, _) => world.now(),
        _ => return,
    };
    let here = (target.slot, target.generation);
    world.model().record(
        Span { invoke, complete },
        format!("revoke token {id} of {user} via {}", target.slot),
    );
    for attempt in 0..4 {
        let other = world.pick(rng).await;
        let at = if attempt < 3 { target.clone() } else { other };
        let sent = world.now();
        let reply = world
            .call(&at, Method::GET, &use_path, Some(token), None)
            .await;
        let same = (at.slot, at.generation) == here;
        let late = sent > complete + world.topology.token_ttl_ms as i64 * 1000;
        if (same || late) && reply.status() == Some(StatusCode::OK) {
            world.model().violation(format!(
                "token {id} of {user} revoked via process {} at {complete}us accepted by process {} at {sent}us",
                target.slot, at.slot
            ));
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}
