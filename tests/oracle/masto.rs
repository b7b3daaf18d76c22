//! The Mastodon view in the history: a seeded share of the home-timeline and
//! notification reads goes through `GET /api/v1/timelines/home` (walked through its
//! `Link` header's `next`) and `GET /api/v1/notifications` instead of `/v1`, with an
//! OAuth access token from the password grant. Each Mastodon entity is mapped back to the
//! `/v1` item it stands for (a Status to a timeline item, its `reblog` to a repost item;
//! a Notification to a `/v1` notification, Mastodon's type to the engine's), and the
//! mapped read is checked by the very checks a `/v1` read meets, during the run and at
//! convergence; a fault names the API that served the read.

use std::fmt;

use rand::RngExt;
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

use super::cluster::Target;
use super::world::{Reply, Rng, Stats, World};

/// Which API served a read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Api {
    V1,
    Masto,
}

impl fmt::Display for Api {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Api::V1 => "/v1",
            Api::Masto => "/api/v1",
        })
    }
}

impl Api {
    /// The API of one read: the Mastodon view with the seed's share
    /// (`Topology::masto_share`), drawn from the client's seeded generator.
    pub fn pick(world: &World, rng: &mut Rng) -> Api {
        if rng.random_bool(world.topology.masto_share) {
            Stats::bump(&world.stats.masto_reads);
            Api::Masto
        } else {
            Api::V1
        }
    }

    /// `user`'s bearer token for this API.
    pub fn token(self, world: &World, user: &str) -> String {
        match self {
            Api::V1 => world.token(user),
            Api::Masto => world.masto_token(user),
        }
    }
}

/// The APIs user number `n` is read through at convergence: `/v1`, and for half the
/// users (which half, by the seed) the Mastodon view too, so that the checks at
/// quiescence cost about half again what `/v1`'s alone cost.
pub fn at_convergence(world: &World, n: usize) -> &'static [Api] {
    match world.seed.wrapping_add(n as u64) % 2 {
        0 => &[Api::V1, Api::Masto],
        _ => &[Api::V1],
    }
}

/// How a fault names where a read went: `{slot} ({api})`.
pub fn via(slot: usize, api: Api) -> String {
    format!("{slot} ({api})")
}

/// Every user's password, set when the user is created.
pub fn password(user: &str) -> String {
    format!("oracle password of {user}")
}

/// Registers one app (`POST /api/v1/apps`) and signs every user in with the password
/// grant for scopes `read write:notifications` (reads, and the dismissals and clears of
/// `notes/dismiss.rs`), keeping each access token in the model. An answer lost to a
/// kill or an in-binary abort is asked again (a lost token stays unused).
pub async fn sign_in(world: &World) {
    let app = retry(world, "/api/v1/apps", || {
        json!({
            "client_name": "oracle",
            "redirect_uris": "urn:ietf:wg:oauth:2.0:oob",
            "scopes": "read write:notifications",
        })
    })
    .await;
    let (id, secret) = (app["client_id"].clone(), app["client_secret"].clone());
    let users: Vec<String> = world.model().users.keys().cloned().collect();
    for user in users {
        let token = retry(world, "/oauth/token", || {
            json!({
                "grant_type": "password",
                "client_id": id,
                "client_secret": secret,
                "username": user,
                "password": password(&user),
                "scope": "read write:notifications",
            })
        })
        .await;
        let token = token["access_token"]
            .as_str()
            .unwrap_or_else(|| panic!("no access token for {user}: {token}"))
            .to_owned();
        world.model().users.get_mut(&user).unwrap().masto_token = token;
    }
}

async fn retry(world: &World, path: &str, body: impl Fn() -> Value) -> Value {
    for _ in 0..40 {
        for slot in world.cluster.reap() {
            Stats::bump(&world.stats.aborts);
            world.cluster.restart(slot).await;
        }
        let Some(target) = world.cluster.up().first().cloned() else {
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
            continue;
        };
        match world
            .call(&target, Method::POST, path, None, Some(body()))
            .await
        {
            Reply::Answer(StatusCode::OK, v) => return v,
            Reply::Lost | Reply::Refused | Reply::Answer(StatusCode::SERVICE_UNAVAILABLE, _) => {
                tokio::time::sleep(std::time::Duration::from_millis(100)).await;
            }
            other => panic!("POST {path}: {other:?}"),
        }
    }
    panic!("POST {path}: no answer in 40 attempts");
}

/// The path and query of the `rel="next"` URL of a `Link` header.
pub fn next_path(link: Option<&str>) -> Option<String> {
    link?.split(", ").find_map(|part| {
        let (url, rel) = part.split_once(">; rel=\"")?;
        (rel.trim_end_matches('"') == "next").then(|| {
            let url = url.trim_start_matches('<');
            let rest = url.split_once("://").map_or(url, |(_, rest)| rest);
            rest.find('/').map_or("/", |at| &rest[at..]).to_owned()
        })
    })
}

/// A Status's `content` back to the text it renders (`src/http/mastodon/entities/
/// content.rs`): paragraphs joined by a blank line, `<br />` a newline, the links'
/// markup dropped, the five escapes undone.
pub fn html_text(html: &str) -> String {
    let joined = html.replace("</p><p>", "\n\n").replace("<br />", "\n");
    let mut text = String::with_capacity(joined.len());
    let mut in_tag = false;
    for c in joined.chars() {
        match c {
            '<' => in_tag = true,
            '>' if in_tag => in_tag = false,
            c if !in_tag => text.push(c),
            _ => {}
        }
    }
    text.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&amp;", "&")
}

/// A Mastodon id (the decimal of the id's 96 bits) in `/v1`'s form, 24 hex digits;
/// anything else (`null`, a malformed id) is kept as it is, for the check to refuse.
fn v1_id(id: &Value) -> Value {
    let number = id.as_str().and_then(|d| Some((d, d.parse::<u128>().ok()?)));
    match number {
        Some((d, n)) if n < 1 << 96 && n.to_string() == d => Value::String(format!("{n:024x}")),
        _ => id.clone(),
    }
}

/// A post's Status as the `/v1` timeline item it stands for, with Mastodon's
/// `in_reply_to_id` kept beside (checked against the parent the post was written with).
fn post_item(status: &Value) -> Value {
    json!({
        "id": v1_id(&status["id"]),
        "author": status["account"]["id"],
        "author_display_name": status["account"]["display_name"],
        "text": html_text(status["content"].as_str().unwrap_or_default()),
        "reply_to_author": status["in_reply_to_account_id"],
        "in_reply_to_id": v1_id(&status["in_reply_to_id"]),
    })
}

/// A Status as the `/v1` timeline item it stands for: a post, or (with `reblog`) a
/// repost item `{id, reposted_by, reposted_by_display_name, post}`.
pub fn status_item(status: &Value) -> Value {
    match &status["reblog"] {
        Value::Object(_) => json!({
            "id": v1_id(&status["id"]),
            "reposted_by": status["account"]["id"],
            "reposted_by_display_name": status["account"]["display_name"],
            "post": post_item(&status["reblog"]),
        }),
        _ => post_item(status),
    }
}

/// A Notification of `user`'s as the `/v1` notification it stands for: Mastodon's
/// `favourite` a `like`, `reblog` a `repost`, and `mention` a `reply` when its status
/// answers one of `user`'s posts, else a `mention` (the engine's rule); a type the
/// engine never makes is kept as `masto:{type}`, which no check admits.
pub fn notification_item(user: &str, n: &Value) -> Value {
    let status = &n["status"];
    let kind = match n["type"].as_str().unwrap_or_default() {
        "follow" => "follow".to_owned(),
        "favourite" => "like".to_owned(),
        "reblog" => "repost".to_owned(),
        "mention" if status["in_reply_to_account_id"].as_str() == Some(user) => "reply".to_owned(),
        "mention" => "mention".to_owned(),
        other => format!("masto:{other}"),
    };
    let mut item = json!({
        "id": v1_id(&n["id"]),
        "type": kind,
        "actor": { "id": n["account"]["id"] },
    });
    if status.is_object() {
        item["post_id"] = v1_id(&status["id"]);
        item["status"] = post_item(status);
    }
    item
}

/// One page of a list through `api`: `/v1`'s `{items, next_cursor}` as it is, or a
/// Mastodon array mapped by `map`, with the path of the page after it (`before` on
/// `/v1`, the `Link` header's `next` on Mastodon).
pub struct Page {
    pub items: Vec<Value>,
    pub next: Option<String>,
}

/// Reads the page at `path` (on `/v1` a path ending in its query, to which `&before=`
/// is added for the next page); `None` when the process was down or busy (503).
pub async fn read_page(
    world: &World,
    target: &Target,
    api: Api,
    path: &str,
    token: &str,
    field: &str,
    map: impl Fn(&Value) -> Value,
) -> Option<(Page, Value)> {
    let (body, link) = world.read_linked(target, path, Some(token)).await?;
    Some((page_of(api, path, field, &body, link.as_deref(), map), body))
}

fn page_of(
    api: Api,
    path: &str,
    field: &str,
    body: &Value,
    link: Option<&str>,
    map: impl Fn(&Value) -> Value,
) -> Page {
    match api {
        Api::V1 => {
            let base = path.split("&before=").next().unwrap_or(path);
            Page {
                items: body[field].as_array().cloned().unwrap_or_default(),
                next: body["next_cursor"]
                    .as_str()
                    .map(|c| format!("{base}&before={c}")),
            }
        }
        Api::Masto => Page {
            items: body.as_array().into_iter().flatten().map(map).collect(),
            next: next_path(link),
        },
    }
}

/// The first page of `user`'s home timeline through `api`.
pub fn home_path(api: Api, user: &str, limit: usize) -> String {
    match api {
        Api::V1 => format!("/v1/users/{user}/timeline?limit={limit}"),
        Api::Masto => format!("/api/v1/timelines/home?limit={limit}"),
    }
}

/// Every page of `path` through `api`, mapped to `/v1` items: the items, or what failed.
/// At quiescence nothing is in the way, but the MongoDB stand-in can be slow: a page
/// that times out or answers 503 is asked again, up to four times.
pub async fn walk(
    world: &World,
    target: &Target,
    api: Api,
    user: &str,
    path: &str,
    field: &str,
    map: impl Fn(&Value) -> Value,
) -> Result<Vec<Value>, String> {
    let token = api.token(world, user);
    let mut items = Vec::new();
    let mut next = Some(path.to_owned());
    while let Some(path) = next.take() {
        let mut attempt = 0;
        let (body, link) = loop {
            attempt += 1;
            let (reply, link) = world
                .call_linked(target, Method::GET, &path, Some(&token), None)
                .await;
            match reply {
                Reply::Answer(StatusCode::OK, body) => break (body, link),
                Reply::Answer(StatusCode::SERVICE_UNAVAILABLE, _) | Reply::Lost if attempt < 4 => {
                    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
                }
                other => return Err(format!("GET {path} ({api}) failed: {other:?}")),
            }
        };
        let page = page_of(api, &path, field, &body, link.as_deref(), &map);
        items.extend(page.items);
        next = page.next;
        if items.len() > 100_000 {
            return Err(format!("{path} ({api}) never ends"));
        }
    }
    Ok(items)
}
#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mastodon_ids_map_to_v1_ids() {
        let v1 = |s: &str| v1_id(&json!(s));
        assert_eq!(
            v1("31955090848581443178733764609"),
            json!("6740a1b2000c000000000001")
        );
        assert_eq!(
            v1("031955090848581443178733764609"),
            json!("031955090848581443178733764609")
        );
        assert_eq!(v1_id(&Value::Null), Value::Null);
    }

    #[test]
    fn content_maps_back_to_its_text() {
        let html = "<p>n:3 a &lt;b&gt; &amp; &quot;c&quot; &#39;<br />d</p><p><span class=\"h-card\"><a href=\"http://x/@u1\" class=\"u-url mention\">@<span>u1</span></a></span> <a href=\"http://x/tags/rust\" class=\"mention hashtag\" rel=\"tag\">#<span>Rust</span></a> </p>";
        assert_eq!(html_text(html), "n:3 a <b> & \"c\" '\nd\n\n@u1 #Rust ");
    }

    #[test]
    fn the_next_link_is_a_path() {
        let link = "<http://127.0.0.1:5/api/v1/timelines/home?limit=2&max_id=ab>; rel=\"next\", <http://127.0.0.1:5/api/v1/timelines/home?limit=2&min_id=cd>; rel=\"prev\"";
        assert_eq!(
            next_path(Some(link)).as_deref(),
            Some("/api/v1/timelines/home?limit=2&max_id=ab")
        );
        assert_eq!(next_path(Some("<http://h/x?min_id=1>; rel=\"prev\"")), None);
    }
}
