//! Dismissals and clears: a client reads a page of its notifications (checked like any
//! read), dismisses one it was served, through `/v1` (`DELETE
//! /v1/users/{id}/notifications/{nid}`) or the Mastodon view (`POST
//! /api/v1/notifications/:id/dismiss`, or the old `POST /api/v1/notifications/dismiss`
//! with the id in the body), or clears them all (`DELETE /v1/users/{id}/notifications`,
//! `POST /api/v1/notifications/clear`). Each is recorded in the model with its span and
//! outcome (`model/dismissals.rs`); a dismissal answered 2xx is immediate, so the
//! dismissed notification read back by its id, from any process, must then be 404.

use rand::RngExt;
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

use super::super::masto::{self, Api};
use super::super::model::{Dismissal, NEVER, Span};
use super::super::ops::{any_user, outcome};
use super::super::world::{Reply, Rng, Stats, World};
use super::{Read, check_items, page};

/// A Mastodon id for a `/v1` one (24 hex digits back to the decimal of their bits).
fn decimal(hex: &str) -> String {
    u128::from_str_radix(hex, 16).map_or_else(|_| hex.to_owned(), |n| n.to_string())
}

/// Sends one dismissal or clear of `user`'s and records it; `Some(complete)` when it
/// was answered 2xx.
async fn send(
    world: &World,
    rng: &mut Rng,
    user: &str,
    cause: Option<(String, String, Option<String>)>,
    id: Option<&str>,
) -> Option<i64> {
    let target = world.pick(rng).await;
    let api = if rng.random_bool(0.5) {
        Api::Masto
    } else {
        Api::V1
    };
    let token = api.token(world, user);
    let (method, path, body) = match (api, id) {
        (Api::V1, Some(id)) => (
            Method::DELETE,
            format!("/v1/users/{user}/notifications/{id}"),
            None,
        ),
        (Api::V1, None) => (
            Method::DELETE,
            format!("/v1/users/{user}/notifications"),
            None,
        ),
        (Api::Masto, Some(id)) if rng.random_bool(0.3) => (
            Method::POST,
            "/api/v1/notifications/dismiss".to_owned(),
            Some(json!({ "id": decimal(id) })),
        ),
        (Api::Masto, Some(id)) => (
            Method::POST,
            format!("/api/v1/notifications/{}/dismiss", decimal(id)),
            None,
        ),
        (Api::Masto, None) => (Method::POST, "/api/v1/notifications/clear".to_owned(), None),
    };
    let invoke = world.now();
    let at = {
        let mut model = world.model();
        model.dismissals.push(Dismissal {
            user: user.to_owned(),
            cause: cause.clone(),
            span: Span {
                invoke,
                complete: NEVER,
            },
        });
        model.dismissals.len() - 1
    };
    let reply = world
        .call(&target, method.clone(), &path, Some(&token), body.clone())
        .await;
    let result = outcome(world, &reply);
    let mut model = world.model();
    let line = format!("{method} {path} {body:?} ({cause:?}) via {}", target.slot);
    match result {
        Ok(complete) => {
            model.dismissals[at].span.complete = complete;
            model.record(Span { invoke, complete }, line);
            if complete != NEVER {
                let counter = match id {
                    Some(_) => &world.stats.dismissals,
                    None => &world.stats.clears,
                };
                Stats::bump(counter);
            }
            (complete != NEVER).then_some(complete)
        }
        Err(status) => {
            // Never sent, or refused: it recorded nothing.
            model.dismissals[at].span = Span {
                invoke: NEVER,
                complete: NEVER,
            };
            match status {
                // Its notification was taken away meanwhile (its cause undone, a
                // dismissal or clear that raced this one).
                Some(StatusCode::NOT_FOUND) if id.is_some() => {
                    model.record(
                        Span {
                            invoke,
                            complete: world.now(),
                        },
                        format!("{line}: 404"),
                    );
                }
                Some(status) => model.violation(format!("{line}: {status} {reply:?}")),
                None => {}
            }
            None
        }
    }
}

/// Reads a page of a random user's notifications, checks it, and dismisses one of
/// those served; after a 2xx, reads it back by its id (404).
pub async fn dismiss(world: &World, rng: &mut Rng) {
    let user = any_user(world, rng);
    let target = world.pick(rng).await;
    let api = Api::pick(world, rng);
    let token = api.token(world, &user);
    let via = masto::via(target.slot, api);
    let path = match api {
        Api::V1 => format!("/v1/users/{user}/notifications?limit=8"),
        Api::Masto => "/api/v1/notifications?limit=8".to_owned(),
    };
    let t0 = world.now();
    let Some(read) = page(world, &target, api, &path, &token, &user, false).await else {
        return;
    };
    let span = (t0, world.now());
    let r = Read {
        user: &user,
        via: &via,
        path: &path,
        grouped: false,
        filter: "",
        api,
        span,
    };
    check_items(world, &r, &read.items, &mut None);
    if read.items.is_empty() {
        return;
    }
    let item: &Value = &read.items[rng.random_range(0..read.items.len())];
    let Some(id) = item["id"].as_str() else {
        return;
    };
    let cause = (
        item["type"].as_str().unwrap_or_default().to_owned(),
        item["actor"]["id"].as_str().unwrap_or_default().to_owned(),
        item["post_id"].as_str().map(str::to_owned),
    );
    if send(world, rng, &user, Some(cause), Some(id))
        .await
        .is_none()
    {
        return;
    }
    // Immediate: the dismissed notification is gone by its id, on every process.
    let back = world.pick(rng).await;
    let (path, token) = match rng.random_bool(0.5) {
        true => (
            format!("/api/v1/notifications/{}", decimal(id)),
            world.masto_token(&user),
        ),
        false => (
            format!("/v1/users/{user}/notifications/{id}"),
            world.token(&user),
        ),
    };
    let reply = world
        .call(&back, Method::GET, &path, Some(&token), None)
        .await;
    if let Reply::Answer(status, body) = reply
        && status != StatusCode::NOT_FOUND
        && status != StatusCode::SERVICE_UNAVAILABLE
    {
        world.model().violation(format!(
            "GET {path} via {} after its dismissal was answered: {status} {body}",
            back.slot
        ));
    }
}

/// Clears a random user's notifications.
pub async fn clear(world: &World, rng: &mut Rng) {
    let user = any_user(world, rng);
    send(world, rng, &user, None, None).await;
}
