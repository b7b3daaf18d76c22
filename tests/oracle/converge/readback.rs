//! The sources read back after a run, through the API of one process: users, posts
//! (with their threads and `reposts_count`), follows, likes, reposts, blocks and mutes
//! (once every timed mute has surely expired), each checked against the history (a
//! write whose outcome was unknown resolved by what the store holds, one surely done or
//! surely undone that the store disagrees with a fault) and built into [`Sources`].

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use serde_json::Value;
use socialite::derived::{PostSource, Sources, Window};
use socialite::domain::PostId;

use super::super::cluster::Target;
use super::super::model::{Model, NEVER, Toggle};
use super::super::world::World;

/// Every page of a list, following `next_cursor` with `before` or `cursor`.
async fn walk(
    world: &World,
    target: &Target,
    path: &str,
    param: &str,
    token: Option<&str>,
) -> Result<Vec<Value>, String> {
    let mut items = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let sep = if path.contains('?') { '&' } else { '?' };
        let page_path = match &cursor {
            Some(c) => format!("{path}{sep}{param}={c}"),
            None => path.to_owned(),
        };
        let page = world
            .read(target, &page_path, token)
            .await
            .ok_or(format!("GET {page_path} failed"))?;
        items.extend(page["items"].as_array().cloned().unwrap_or_default());
        match page["next_cursor"].as_str() {
            Some(next) => cursor = Some(next.to_owned()),
            None => return Ok(items),
        }
        if items.len() > 100_000 {
            return Err(format!("{path} never ends"));
        }
    }
}

/// The sources as the store holds them, checked against the history, as [`Sources`].
pub async fn sources(world: &World, target: &Target) -> Result<(Sources, Vec<String>), String> {
    let users: Vec<String> = world.model().users.keys().cloned().collect();
    let mut faults = Vec::new();
    let mut s = Sources::default();
    let mut stored: BTreeMap<String, String> = BTreeMap::new();
    // Per stored post: its `replies_count` and the post its `reply_to` names.
    let mut threads: BTreeMap<String, (u64, Option<String>)> = BTreeMap::new();
    // Per stored post, its `reposts_count`; every repost listed, by its reposter.
    let mut reposts_counts: BTreeMap<String, u64> = BTreeMap::new();
    let mut listed_reposts: Vec<(String, super::super::reposts::RepostItem)> = Vec::new();
    expire_timed_mutes(world).await;
    let now = world.now();
    let relations = relations(world, target, &users).await?;
    (s.blocks, s.mutes) = (relations.0, relations.1);
    faults.extend(relations.2);
    for user in &users {
        let profile = world
            .read(target, &format!("/v1/users/{user}"), None)
            .await
            .ok_or("profile")?;
        s.users.insert(
            user.clone(),
            profile["display_name"]
                .as_str()
                .unwrap_or_default()
                .to_owned(),
        );
        for post in walk(
            world,
            target,
            &format!("/v1/users/{user}/posts?limit=100"),
            "before",
            None,
        )
        .await?
        {
            let id = post["id"].as_str().unwrap_or_default().to_owned();
            if let Some(r) = super::super::reposts::as_repost(&post) {
                listed_reposts.push((user.clone(), r));
                continue;
            }
            let replies = post["replies_count"].as_u64().unwrap_or(u64::MAX);
            reposts_counts.insert(
                id.clone(),
                post["reposts_count"].as_u64().unwrap_or(u64::MAX),
            );
            let parent = post["reply_to"]["post"].as_str().map(str::to_owned);
            threads.insert(id.clone(), (replies, parent));
            stored.insert(id, post["text"].as_str().unwrap_or_default().to_owned());
        }
        let path = format!("/v1/users/{user}/following?limit=100");
        for f in walk(world, target, &path, "cursor", None).await? {
            let followee = f["id"].as_str().unwrap_or_default().to_owned();
            s.follows.insert(
                (user.clone(), followee),
                socialite::derived::FollowSource {
                    created: Window::at(0),
                },
            );
        }
    }
    let mut model = world.model();
    for (id, text) in &stored {
        if model.learn(id, text).is_none() {
            faults.push(format!("stored post {id} {text:?} was never written"));
        }
    }
    for (i, p) in model.posts.clone().into_iter().enumerate() {
        let Some(id) = p.id.clone() else { continue };
        let live = stored.contains_key(&id);
        let deleted = (!live).then(|| {
            let from = p.deletes.iter().map(|d| d.invoke).min().unwrap_or(now);
            let to = p.deletes.iter().map(|d| d.complete).max().unwrap_or(NEVER);
            Window { from, to }
        });
        if live && p.deletes.iter().any(|d| d.acked()) {
            faults.push(format!(
                "post {id} ({}) is stored after its delete was acknowledged",
                p.author
            ));
        }
        if !live && p.deletes.is_empty() {
            faults.push(format!(
                "post {id} ({} {:?}, write {:?}) was lost",
                p.author, p.text, p.create
            ));
        }
        let parsed: PostId = id.parse().map_err(|_| format!("bad post id {id}"))?;
        let created = Window {
            from: p.create.invoke,
            to: p.create.complete,
        };
        let reply_to = match p.reply_to {
            Some(parent) => {
                let parent = &model.posts[parent];
                let id = parent.id.as_deref().unwrap_or_default();
                Some(socialite::domain::ReplyTo {
                    post: id.parse().map_err(|_| format!("bad parent id {id:?}"))?,
                    author: parent.author.clone(),
                })
            }
            None => None,
        };
        if let Some((_, served)) = threads.get(&id)
            && *served != reply_to.as_ref().map(|r| r.post.to_string())
        {
            faults.push(format!(
                "post {id} ({}) stored answering {served:?}, written answering {:?}",
                p.author,
                reply_to.as_ref().map(|r| r.post)
            ));
        }
        s.posts.insert(
            parsed,
            PostSource {
                author: p.author.clone(),
                text: p.text.clone(),
                created,
                deleted,
                reply_to,
            },
        );
        let _ = i;
    }
    for (id, (count, _)) in &threads {
        let Ok(parsed) = id.parse::<PostId>() else {
            continue;
        };
        let truth = s.replies_count(parsed);
        if *count != truth {
            let author = s.posts.get(&parsed).map(|p| p.author.clone());
            faults.push(format!(
                "post {id} ({author:?}) has replies_count {count}, {truth} live replies answer it"
            ));
        }
    }
    faults.extend(super::super::reposts::listed(
        &mut model,
        &mut s,
        &listed_reposts,
        &reposts_counts,
        now,
    ));
    for ((a, b), ops) in &model.pairs {
        let exists = s.follows.contains_key(&(a.clone(), b.clone()));
        if exists && !Model::may_hold(ops, now, now) {
            faults.push(format!(
                "edge {a}->{b} exists, yet its unfollow was acknowledged last"
            ));
        }
        if !exists && Model::surely_holds(ops, now, now) {
            faults.push(format!("edge {a}->{b} was lost"));
        }
    }
    for ((a, b), edge) in s.follows.iter_mut() {
        let ops = model.pair(a, b);
        if ops.is_empty() {
            faults.push(format!("edge {a}->{b} exists, never followed"));
        }
        edge.created = Model::creation_window(ops);
    }
    for ((user, post), ops) in &model.likes {
        if Model::surely_holds(ops, now, now)
            && let Ok(id) = post.parse()
            && s.posts.get(&id).is_some_and(PostSource::live)
        {
            s.likes.insert((user.clone(), id));
        }
    }
    for user in &users {
        let name = &s.users[user];
        let acked_last = model.users[user]
            .names
            .iter()
            .filter(|(_, sp)| sp.invoke != NEVER)
            .max_by_key(|(_, sp)| sp.invoke)
            .cloned();
        let names = model.names_of(user, NEVER);
        if !names.contains(&name.as_str()) {
            faults.push(format!("{user}'s name {name:?} was never given"));
        }
        if let Some((last, span)) = acked_last {
            let overlapped = model.users[user]
                .names
                .iter()
                .any(|(n, sp)| *n != last && sp.invoke != NEVER && sp.complete > span.invoke);
            if span.acked() && !overlapped && *name != last {
                faults.push(format!(
                    "{user}'s name is {name:?}, the last rename was {last:?}"
                ));
            }
        }
    }
    Ok((s, faults))
}

/// Waits until every timed mute of the run has surely expired, so that what is hidden
/// at the checks is what the untimed ones say. A mute expires at most its duration after
/// it was answered, or after now for one whose answer never came.
async fn expire_timed_mutes(world: &World) {
    let now = world.now();
    let until = world
        .model()
        .mutes
        .values()
        .flatten()
        .filter_map(|(t, lasts)| Some(t.span.complete.min(now) + (*lasts)?))
        .max();
    if let Some(until) = until.filter(|u| *u > now) {
        let wait = Duration::from_micros((until - now) as u64) + Duration::from_millis(50);
        tokio::time::sleep(wait).await;
    }
}

/// Every user's blocks and (standing) mutes as the store lists them, checked against
/// the history: a pair listed that was surely lifted, or one surely standing that is not
/// listed, is a fault.
async fn relations(
    world: &World,
    target: &Target,
    users: &[String],
) -> Result<
    (
        BTreeSet<(String, String)>,
        BTreeSet<(String, String)>,
        Vec<String>,
    ),
    String,
> {
    let (mut blocks, mut mutes, mut faults) = (BTreeSet::new(), BTreeSet::new(), Vec::new());
    let mut quiet = BTreeSet::new();
    for user in users {
        let token = world.token(user);
        for (noun, set) in [("blocks", &mut blocks), ("mutes", &mut mutes)] {
            let path = format!("/v1/users/{user}/{noun}?limit=100");
            for item in walk(world, target, &path, "cursor", Some(&token)).await? {
                let other = item["id"].as_str().unwrap_or_default().to_owned();
                if noun == "mutes" && item["notifications"] != false {
                    quiet.insert((user.clone(), other.clone()));
                }
                set.insert((user.clone(), other));
            }
        }
    }
    let now = world.now();
    let mut model = world.model();
    model.quiet_now = quiet;
    for ((a, b), ops) in &model.blocks {
        let listed = blocks.contains(&(a.clone(), b.clone()));
        if listed && !Model::may_hold(ops, now, now) {
            faults.push(format!(
                "{a} blocks {b}, yet the unblock was acknowledged last"
            ));
        }
        if !listed && Model::surely_holds(ops, now, now) {
            faults.push(format!("{a}'s block of {b} was lost"));
        }
    }
    for ((a, b), ops) in &model.mutes {
        let listed = mutes.contains(&(a.clone(), b.clone()));
        // Every timed mute has expired by now: each counts as an unmute.
        let untimed: Vec<_> = ops
            .iter()
            .map(|(t, lasts)| Toggle {
                on: t.on && lasts.is_none(),
                ..*t
            })
            .collect();
        let timed_may = ops
            .iter()
            .any(|(t, lasts)| t.on && lasts.is_some() && !t.span.acked());
        if listed && !Model::may_hold(&untimed, now, now) && !timed_may {
            faults.push(format!(
                "{a} mutes {b} (listed), yet no mute of theirs may stand"
            ));
        }
        if !listed && Model::surely_holds(&untimed, now, now) {
            faults.push(format!("{a}'s mute of {b} was lost"));
        }
    }
    Ok((blocks, mutes, faults))
}
