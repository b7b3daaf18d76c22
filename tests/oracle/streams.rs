//! Live timeline streams: a client opens its user's stream, reads for a while, and goes
//! away (or the process is killed under it); the next session of that user resumes with
//! `Last-Event-ID`. During the run each session is checked for order and repetition;
//! after quiescence, against the event log, for completeness: every event the stream
//! had to route to its user, between where it resumed and the last id it delivered,
//! was delivered, and nothing it delivered is absent from the log.

use std::collections::BTreeMap;
use std::time::Duration;

use rand::RngExt;
use serde_json::Value;

use super::model::{Model, NEVER};
use super::ops::any_user;
use super::sse;
use super::world::{Rng, Stats, World};

/// Where a user's chain of sessions stands.
#[derive(Debug, Default, Clone)]
pub struct Cursor {
    /// The last event id delivered (or the head a `reset` named).
    pub last: Option<u64>,
    /// A client has a session of this user open.
    pub busy: bool,
}

/// One delivered event: its id, `item`/`delete`/`reset`, and the post or author.
#[derive(Debug, Clone)]
pub struct Got {
    pub id: Option<u64>,
    pub kind: String,
    pub posts: Vec<String>,
    pub author: Option<String>,
}

/// One session, as the checks after quiescence need it.
#[derive(Debug, Clone)]
pub struct Session {
    pub user: String,
    pub resume: Option<u64>,
    /// When the request was sent, and when the client went away.
    pub open: i64,
    pub close: i64,
    pub got: Vec<Got>,
}

pub async fn stream(world: &World, rng: &mut Rng) {
    let user = any_user(world, rng);
    let resume = {
        let mut model = world.model();
        let cursor = model.streams.entry(user.clone()).or_default();
        if cursor.busy {
            return;
        }
        cursor.busy = true;
        cursor.last
    };
    let session = session(world, rng, &user, resume).await;
    let mut model = world.model();
    let cursor = model.streams.get_mut(&user).unwrap();
    cursor.busy = false;
    let Some(session) = session else { return };
    if let Some(last) = session.got.last() {
        cursor.last = last.id;
    }
    let span = super::model::Span {
        invoke: session.open,
        complete: session.close,
    };
    let line = format!(
        "stream {user} after {resume:?}: {} events, {:?}..{:?}",
        session.got.len(),
        session.got.first().and_then(|g| g.id),
        session.got.last().and_then(|g| g.id)
    );
    model.record(span, line);
    let faults = safety(&model, &session);
    for fault in faults {
        model.violation(fault);
    }
    model.sessions.push(session);
}

/// Opens, reads for up to 1.5 s, and closes; `None` when the stream was not served
/// (refused, lost, 503: too many streams or no event log).
async fn session(world: &World, rng: &mut Rng, user: &str, resume: Option<u64>) -> Option<Session> {
    let target = world.pick(rng).await;
    let mut request = world
        .http
        .get(format!("{}/v1/users/{user}/timeline/stream", target.base))
        .bearer_auth(world.token(user));
    if let Some(last) = resume {
        request = request.header("Last-Event-ID", last.to_string());
    }
    let open = world.now();
    let response = request.send().await.ok()?;
    let status = response.status();
    if status.as_u16() == 503 {
        return None;
    }
    if status.as_u16() != 200 {
        let body = response.text().await.unwrap_or_default();
        world.model().violation(format!(
            "stream {user} after {resume:?} on {}: {status} {body}",
            target.base
        ));
        return None;
    }
    let mut client = sse::Client::of(response);
    let deadline = tokio::time::Instant::now() + Duration::from_millis(rng.random_range(100..1500));
    let mut got = Vec::new();
    while let Ok(Some(message)) = tokio::time::timeout_at(deadline, client.next()).await {
        // A repost item: its own id, then its original's; the reposter as its author.
        if message.event == "item"
            && let Some(r) = super::reposts::as_repost(&message.data)
        {
            let original = r.original_id().to_owned();
            if let Some(text) = r.original["text"].as_str() {
                world.model().learn(&original, text);
            }
            got.push(Got {
                id: message.id.as_deref().and_then(|i| i.parse().ok()),
                kind: "repost".into(),
                posts: vec![r.id.clone(), original],
                author: Some(r.by),
            });
            continue;
        }
        got.push(Got {
            id: message.id.as_deref().and_then(|i| i.parse().ok()),
            posts: match message.event.as_str() {
                "item" => vec![message.data["id"].as_str().unwrap_or_default().to_owned()],
                _ => message.data["ids"]
                    .as_array()
                    .map(|ids| {
                        ids.iter()
                            .filter_map(|i| i.as_str().map(str::to_owned))
                            .collect()
                    })
                    .unwrap_or_default(),
            },
            author: message.data["author"].as_str().map(str::to_owned),
            kind: message.event,
        });
        if let Some(text) = message.data["text"].as_str() {
            let id = message.data["id"].as_str().unwrap_or_default();
            world.model().learn(id, text);
        }
    }
    Stats::bump(&world.stats.reads_checked);
    world
        .stats
        .streamed
        .fetch_add(got.len() as u64, std::sync::atomic::Ordering::Relaxed);
    Some(Session {
        user: user.to_owned(),
        resume,
        open,
        close: world.now(),
        got,
    })
}

/// Order and repetition: ids strictly increasing from where the session resumed (or
/// from a `reset`'s head); every item a post the history holds, by the user or by an
/// author they followed at some point; every author's `delete` an unfollow they sent.
fn safety(model: &Model, s: &Session) -> Vec<String> {
    let mut faults = Vec::new();
    let mut floor = s.resume;
    let who = format!("stream {} after {:?}", s.user, s.resume);
    for g in &s.got {
        if g.kind == "reset" {
            floor = g.id;
            continue;
        }
        let Some(id) = g.id else {
            faults.push(format!("{who}: a {} without an id", g.kind));
            continue;
        };
        // A notification rides on its cause's event: after that event's item, if any,
        // under the same id (notifications themselves are checked by their list).
        if g.kind == "notification" && floor.is_none_or(|f| id >= f) {
            floor = Some(id);
            continue;
        }
        if floor.is_some_and(|f| id <= f) {
            faults.push(format!(
                "{who}: event {id} after {floor:?}: repeated or out of order"
            ));
        }
        floor = Some(id);
        match (g.kind.as_str(), &g.author) {
            ("item", _) => {
                let Some(&i) = g.posts.first().and_then(|p| model.by_id.get(p)) else {
                    faults.push(format!("{who}: item {:?}, a post never written", g.posts));
                    continue;
                };
                let author = &model.posts[i].author;
                if *author != s.user && !Model::may_hold(model.pair(&s.user, author), 0, s.close) {
                    faults.push(format!(
                        "{who}: item {:?} by {author}, never followed",
                        g.posts
                    ));
                }
                let parent = model.posts[i].reply_to.map(|p| &model.posts[p].author);
                if let Some(parent) = parent
                    && parent != author
                    && *parent != s.user
                    && !Model::may_hold(model.pair(&s.user, parent), 0, s.close)
                {
                    faults.push(format!(
                        "{who}: item {:?}, {author}'s reply to {parent}, never followed",
                        g.posts
                    ));
                }
                if *author != s.user
                    && let Some(why) = model.surely_hidden(&s.user, author, s.open, s.close)
                {
                    faults.push(format!(
                        "{who}: item {:?} by {author}, while {why} throughout",
                        g.posts
                    ));
                }
            }
            ("delete", Some(author)) => {
                if !model.pair(&s.user, author).iter().any(|t| !t.on) {
                    faults.push(format!(
                        "{who}: delete of {author}'s items, never unfollowed"
                    ));
                }
            }
            ("repost", Some(by)) => {
                if *by != s.user && !Model::may_hold(model.pair(&s.user, by), 0, s.close) {
                    faults.push(format!(
                        "{who}: repost {:?} by {by}, never followed",
                        g.posts
                    ));
                }
                let original = g.posts.get(1).and_then(|p| model.by_id.get(p));
                let Some(&i) = original else {
                    faults.push(format!(
                        "{who}: repost {:?} of a post never written",
                        g.posts
                    ));
                    continue;
                };
                let author = &model.posts[i].author;
                for x in [by, author] {
                    if *x != s.user
                        && let Some(why) = model.surely_hidden(&s.user, x, s.open, s.close)
                    {
                        faults.push(format!(
                            "{who}: repost {:?} by {by} of {author}'s post, while {why} throughout",
                            g.posts
                        ));
                    }
                }
            }
            ("delete", None) => {}
            (other, _) => faults.push(format!("{who}: unknown event {other:?}")),
        }
    }
    faults
}

/// After quiescence, against the event log `log` (as `/v1/events` serves it, possibly
/// trimmed at its start): within each stretch of a session (from where it resumed, or
/// from a `reset`'s head, to the last id it delivered), every event it had to route
/// was delivered, and every event it delivered is in the log as what it said.
pub fn complete(model: &Model, log: &[Value]) -> Vec<String> {
    let events: BTreeMap<u64, &Value> = log
        .iter()
        .filter_map(|e| Some((e["id"].as_str()?.parse().ok()?, e)))
        .collect();
    let Some(&first) = events.keys().next() else {
        return Vec::new();
    };
    let mut faults = Vec::new();
    for s in &model.sessions {
        let who = format!("stream {} after {:?} at {}", s.user, s.resume, s.open);
        let mut from = s.resume;
        let mut stretch: Vec<&Got> = Vec::new();
        let mut stretches = Vec::new();
        for g in &s.got {
            if g.kind == "reset" {
                stretches.push((from, std::mem::take(&mut stretch)));
                from = g.id;
            } else {
                stretch.push(g);
            }
        }
        stretches.push((from, stretch));
        for (from, got) in stretches {
            let Some(to) = got.last().and_then(|g| g.id) else {
                continue;
            };
            // A fresh session's start is not known: it begins with its first event.
            let lo = from
                .map_or_else(|| got[0].id.unwrap_or(0), |f| f + 1)
                .max(first);
            let delivered: BTreeMap<u64, &Got> = got
                .iter()
                .filter(|g| g.kind != "notification")
                .filter_map(|g| Some((g.id?, *g)))
                .collect();
            for (id, g) in delivered.range(lo..=to) {
                if !matches_event(g, events.get(id).copied()) {
                    faults.push(format!(
                        "{who}: delivered {g:?}, the log holds {:?}",
                        events.get(id)
                    ));
                }
            }
            for (id, event) in events.range(lo..=to) {
                if must_route(model, s, event) && !delivered.contains_key(id) {
                    faults.push(format!("{who}: event {id} not delivered: {event}"));
                }
            }
        }
    }
    faults
}

fn field<'a>(event: &'a Value, key: &str) -> Option<&'a str> {
    event["payload"][key].as_str()
}

fn matches_event(g: &Got, event: Option<&Value>) -> bool {
    let Some(event) = event else { return false };
    let post = field(event, "post");
    match (g.kind.as_str(), event["type"].as_str(), &g.author) {
        ("item", Some("post.created"), _) => post == g.posts.first().map(String::as_str),
        ("delete", Some("post.deleted"), None) => post == g.posts.first().map(String::as_str),
        ("delete", Some("post.unreposted"), None) | ("repost", Some("post.reposted"), _) => {
            field(event, "repost") == g.posts.first().map(String::as_str)
        }
        ("delete", Some("user.unfollowed"), Some(author)) => {
            field(event, "followee") == Some(author.as_str())
        }
        _ => false,
    }
}

/// Whether the router of session `s` surely had to deliver `event`: the user's own
/// posts and deletions, their unfollows, and posts by an author they surely followed
/// throughout the session, every toggle of that edge answered before the post was sent
/// (so that, in log order, the edge stood as it does when the post came).
fn must_route(model: &Model, s: &Session, event: &Value) -> bool {
    let own = |key| field(event, key) == Some(s.user.as_str());
    // Followed throughout the session, every toggle answered before the post was sent.
    let steady = |author: &str, post: &str| {
        let Some(&i) = model.by_id.get(post) else {
            return false;
        };
        let ops = model.pair(&s.user, author);
        let sent = model.posts[i].create.invoke;
        Model::surely_holds(ops, s.open, s.close)
            && ops
                .iter()
                .all(|t| t.span.complete != NEVER && t.span.complete < sent)
    };
    // The home rule for a reply: a self-thread, an answer to the user, or to an author
    // the user followed steadily.
    let reply_shown = || {
        let parent = event["payload"]["in_reply_to"]["author"].as_str();
        let (author, post) = (field(event, "author"), field(event, "post"));
        parent.is_none_or(|p| {
            Some(p) == author || p == s.user || post.is_some_and(|post| steady(p, post))
        })
    };
    match event["type"].as_str() {
        Some("user.unfollowed") => own("follower"),
        Some("post.deleted") => own("author"),
        Some("post.created") if !reply_shown() => false,
        Some("post.created") if own("author") => true,
        Some("post.created") => {
            let (Some(author), Some(post)) = (field(event, "author"), field(event, "post")) else {
                return false;
            };
            let Some(&i) = model.by_id.get(post) else {
                return false;
            };
            let ops = model.pair(&s.user, author);
            let sent = model.posts[i].create.invoke;
            !model.may_hide(&s.user, author, s.open, s.close)
                && Model::surely_holds(ops, s.open, s.close)
                && ops
                    .iter()
                    .all(|t| t.span.complete != NEVER && t.span.complete < sent)
        }
        _ => false,
    }
}
