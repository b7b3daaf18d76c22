//! Notifications: every read during the run checked for safety against the history, and
//! after quiescence each user's notifications (plain, and grouped) against
//! `socialite::derived::notifications`, fed the sources the run left.
//!
//! Safety of one served notification of `user`, read over `[t0, t1]`: never of the
//! user's own act; never from an actor a block (either way) or a notification-hiding mute
//! surely kept from the user through the read; and a cause that was written: a follow
//! of the user, a like of one of the user's posts, a reply to one, a mention of the user.
//! A cause undone before the read began (an unfollow or unlike answered, the post's
//! delete answered, and nothing redone since) is *stale*: a violation on a plain page,
//! which checks its notifications' causes when it is read; in a group (whose actors and
//! count the notifications worker moves within its lag) it is counted
//! (`stale_notifications=` in the summary). A notification that a dismissal or clear
//! answered before the read began surely took away (`model/dismissals.rs`) is a
//! violation on a plain page and in a group alike: both are moved in the dismissal's own
//! write. The dismissals and clears are in `notes/dismiss.rs`, the v2 grouped view in
//! `notes/grouped.rs`, the check after quiescence in `notes/converge.rs`.

mod converge;
mod dismiss;
mod grouped;

use rand::RngExt;
use serde_json::Value;
use socialite::domain::mentions;

use super::masto::{self, Api};
use super::model::Model;
use super::ops::any_user;
use super::world::{Rng, Stats, World};

pub use converge::converge;
pub use dismiss::{clear, dismiss};
pub use grouped::walk_v2;

/// What is wrong with one served notification, or `Ok(stale)`.
fn note_fault(
    model: &mut Model,
    user: &str,
    kind: &str,
    actor: &str,
    post: Option<&str>,
    (t0, t1): (i64, i64),
) -> Result<bool, String> {
    if actor == user {
        return Err(format!("a {kind} of {user}'s own"));
    }
    if let Some(why) = model.surely_silenced(user, actor, t0, t1) {
        return Err(format!("a {kind} by {actor} while {why}"));
    }
    if kind == "follow" {
        let ops = model.pair(actor, user);
        if ops.is_empty() || post.is_some() {
            return Err(format!(
                "a follow by {actor} ({post:?}), who never followed"
            ));
        }
        return Ok(!Model::may_hold(ops, t0, t1));
    }
    let Some(post) = post else {
        return Err(format!("a {kind} by {actor} without a post"));
    };
    // A post whose create's answer was lost and that no read has shown yet: unknown here.
    let Some(&i) = model.by_id.get(post) else {
        return Ok(false);
    };
    let p = model.posts[i].clone();
    let parent_author = p.reply_to.map(|r| model.posts[r].author.clone());
    let gone = !model.post_may_be_live(i, t0, t1);
    match kind {
        "like" => {
            let ops = model
                .likes
                .get(&(actor.to_owned(), post.to_owned()))
                .cloned()
                .unwrap_or_default();
            if ops.is_empty() || p.author != user {
                return Err(format!(
                    "a like by {actor} of {post} (by {}), never liked",
                    p.author
                ));
            }
            Ok(gone || !Model::may_hold(&ops, t0, t1))
        }
        "repost" => {
            let ops = model.repost_ops(actor, post).to_vec();
            if ops.is_empty() || p.author != user {
                return Err(format!(
                    "a repost by {actor} of {post} (by {}), never reposted",
                    p.author
                ));
            }
            Ok(gone || !Model::may_hold(&ops, t0, t1))
        }
        "reply" if p.author == actor && parent_author.as_deref() == Some(user) => Ok(gone),
        "mention"
            if p.author == actor
                && mentions(&p.text).iter().any(|m| m == user)
                && parent_author.as_deref() != Some(user) =>
        {
            Ok(gone)
        }
        _ => Err(format!(
            "a {kind} by {actor} about {post} ({} {:?}, answering {parent_author:?}): no such cause",
            p.author, p.text
        )),
    }
}

/// A read of a random user's notifications: one to three pages, plain (some filtered by
/// type) or grouped, each checked for safety over the time it was in flight. A seeded
/// share of the plain reads go through `GET /api/v1/notifications`, and of the grouped
/// ones through `GET /api/v2/notifications` (`oracle::masto`, `notes/grouped.rs`), the
/// same filters in Mastodon's names, mapped back and checked alike.
pub async fn read(world: &World, rng: &mut Rng) {
    let user = any_user(world, rng);
    let target = world.pick(rng).await;
    let grouped = rng.random_bool(0.3);
    let filter = match rng.random_range(0..6) {
        0 => "&types=like,follow",
        2 => "&types=repost",
        1 => "&exclude_types=mention",
        _ => "",
    };
    let limit = rng.random_range(2..=8);
    let api = Api::pick(world, rng);
    let token = api.token(world, &user);
    let via = masto::via(target.slot, api);
    let mut path = match (api, grouped) {
        (Api::Masto, false) => format!(
            "/api/v1/notifications?limit={limit}{}",
            masto_filter(filter)
        ),
        (Api::Masto, true) => format!(
            "/api/v2/notifications?limit={limit}{}",
            masto_filter(filter)
        ),
        (Api::V1, true) => {
            format!("/v1/users/{user}/notifications?grouped=true&limit={limit}{filter}")
        }
        (Api::V1, false) => format!("/v1/users/{user}/notifications?limit={limit}{filter}"),
    };
    let mut last: Option<String> = None;
    for _ in 0..rng.random_range(1..=3) {
        let t0 = world.now();
        let Some(page) = page(world, &target, api, &path, &token, &user, grouped).await else {
            return;
        };
        let t1 = world.now();
        let read = Read {
            user: &user,
            via: &via,
            path: &path,
            grouped,
            filter,
            api,
            span: (t0, t1),
        };
        check_items(world, &read, &page.items, &mut last);
        match page.next {
            Some(next) => path = next,
            None => return,
        }
    }
}

/// One page of `user`'s notifications at `path` through `api`, plain or grouped, as
/// `/v1` items or groups; `None` when the process was down or busy.
pub async fn page(
    world: &World,
    target: &super::cluster::Target,
    api: Api,
    path: &str,
    token: &str,
    user: &str,
    grouped: bool,
) -> Option<masto::Page> {
    if grouped && api == Api::Masto {
        return grouped::read_v2(world, target, path, token, user).await;
    }
    let field = if grouped { "groups" } else { "items" };
    let map = |n: &Value| masto::notification_item(user, n);
    let read = masto::read_page(world, target, api, path, token, field, map).await;
    read.map(|(page, _)| page)
}

/// One read of notifications, for [`check_items`].
pub struct Read<'a> {
    pub user: &'a str,
    pub via: &'a str,
    pub path: &'a str,
    pub grouped: bool,
    /// The `/v1` type filter (`""`: none).
    pub filter: &'a str,
    pub api: Api,
    pub span: (i64, i64),
}

/// Checks one page of notifications (or groups), as `/v1` items, for safety over the
/// read's span: newest first below `last`, admitted by the filter, each actor's cause
/// written and not the reader's own, nothing surely hidden by a block or mute, nothing
/// whose cause was undone (plain pages; counted in groups), nothing a dismissal or clear
/// answered before the read surely took away (plain pages and groups: immediate).
pub fn check_items(world: &World, r: &Read, items: &[Value], last: &mut Option<String>) {
    let (user, via, path, (t0, t1)) = (r.user, r.via, r.path, r.span);
    Stats::bump(&world.stats.reads_checked);
    let mut model = world.model();
    for item in items {
        let kind = item["type"].as_str().unwrap_or_default();
        let post = item["post_id"].as_str();
        let id = if r.grouped {
            item["latest_id"].as_str()
        } else {
            item["id"].as_str()
        };
        let id = id.unwrap_or_default().to_owned();
        if last.as_ref().is_some_and(|l| *l <= id) {
            model.violation(format!(
                "{user}'s notifications via {via} [{t0}..{t1}]: {id} after {last:?} (not newest first, or twice): {path}"
            ));
        }
        *last = Some(id);
        if !r.filter.is_empty() && !admitted(r.filter, r.api, kind) {
            model.violation(format!("{user}'s notifications via {via} {path}: a {kind}"));
        }
        if let Some(fault) = status_fault(&mut model, item) {
            model.violation(format!(
                "{user}'s notifications via {via} [{t0}..{t1}]: {fault}"
            ));
        }
        let actors: Vec<&str> = if r.grouped {
            item["actors"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|a| a["id"].as_str())
                .collect()
        } else {
            vec![item["actor"]["id"].as_str().unwrap_or_default()]
        };
        for actor in actors {
            if let Some(d) = model.surely_dismissed(user, kind, actor, post, t0) {
                model.violation(format!(
                    "{user}'s notifications via {via} [{t0}..{t1}]: a {kind} by {actor} ({post:?}) served after {d} was answered: {path}"
                ));
            }
            match note_fault(&mut model, user, kind, actor, post, (t0, t1)) {
                Ok(false) => {}
                Ok(true) => {
                    Stats::bump(&world.stats.stale_notifications);
                    if !r.grouped {
                        model.violation(format!(
                            "{user}'s notifications via {via} [{t0}..{t1}]: a {kind} by {actor} ({post:?}) whose cause was undone before the read"
                        ));
                    }
                }
                Err(fault) => model.violation(format!(
                    "{user}'s notifications via {via} [{t0}..{t1}]: {fault}"
                )),
            }
        }
    }
}

/// A `/v1` type filter in Mastodon's names.
fn masto_filter(filter: &str) -> &'static str {
    match filter {
        "&types=like,follow" => "&types[]=favourite&types[]=follow",
        "&types=repost" => "&types[]=reblog",
        "&exclude_types=mention" => "&exclude_types[]=mention",
        _ => "",
    }
}

/// The Mastodon view names a notification's post as a Status: its author and text must
/// be the post's as written (`None` on `/v1`, whose items carry the id alone).
fn status_fault(model: &mut Model, item: &Value) -> Option<String> {
    let status = item.get("status")?;
    let id = status["id"].as_str().unwrap_or_default();
    let text = status["text"].as_str().unwrap_or_default();
    let author = status["author"].as_str().unwrap_or_default();
    let i = model.learn(id, text)?;
    let p = &model.posts[i];
    (p.author != author || p.text != text).then(|| {
        format!(
            "status {id} served as {author} {text:?}, written by {} as {:?}",
            p.author, p.text
        )
    })
}

fn admitted(filter: &str, api: Api, kind: &str) -> bool {
    match filter {
        "&types=like,follow" => kind == "like" || kind == "follow",
        // Mastodon's `mention` is the engine's mentions and replies alike.
        "&exclude_types=mention" if api == Api::Masto => kind != "mention" && kind != "reply",
        "&types=repost" => kind == "repost",
        _ => true,
    }
}
