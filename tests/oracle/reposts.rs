//! Reposts in the history: the writes (repost, unrepost) with their outcomes, how a
//! served repost item is read (timeline pages, post lists, streams) and checked for
//! safety against the history, and the reposts the store lists at convergence, held to
//! the history and put in the sources (`socialite::derived`'s `reposts.rs` says which
//! of them a home timeline serves, each original once). The writes are in
//! `reposts/writes.rs`.

mod writes;

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;
use socialite::derived::{PostSource, Sources};
use socialite::domain::PostId;

use super::model::Model;

pub use writes::{repost, repost_at};

/// A timeline item that is a repost, as served: `{id, reposted_by, post}` with the
/// original as `post` (the post list's shape), read tolerantly while the timeline's
/// shape settles: the original's `author_display_name` and `reply_to_author` are
/// checked where present.
#[derive(Debug, Clone)]
pub struct RepostItem {
    pub id: String,
    pub by: String,
    /// The reposter's display name, where the item carries it.
    pub by_name: Option<String>,
    pub original: Value,
}

impl RepostItem {
    pub fn original_id(&self) -> &str {
        self.original["id"].as_str().unwrap_or_default()
    }
}

/// The repost an item is, if it is one.
pub fn as_repost(item: &Value) -> Option<RepostItem> {
    let by = item["reposted_by"]
        .as_str()
        .or_else(|| item["repost"]["reposted_by"].as_str())?;
    let original = match &item["post"] {
        Value::Object(_) => item["post"].clone(),
        _ => item["original"].clone(),
    };
    let id = item["repost"]["id"]
        .as_str()
        .or_else(|| item["id"].as_str())
        .unwrap_or_default();
    Some(RepostItem {
        id: id.to_owned(),
        by: by.to_owned(),
        by_name: item["reposted_by_display_name"].as_str().map(str::to_owned),
        original,
    })
}

/// The id of the post an item shows: its own, or a repost's original's.
pub fn shown_post(item: &Value) -> String {
    match as_repost(item) {
        Some(r) => r.original_id().to_owned(),
        None => item["id"].as_str().unwrap_or_default().to_owned(),
    }
}

/// Checks one served repost of `reader`'s read over `[t0, t1]`: a repost the history
/// made that may have stood, of a post that may have been live, by the reader or an
/// author they may have followed, neither the reposter nor the original's author surely
/// hidden from the reader. The reply rule does not apply to reposts.
pub fn repost_fault(
    model: &mut Model,
    reader: &str,
    r: &RepostItem,
    t0: i64,
    t1: i64,
) -> Option<String> {
    let original = &r.original;
    let post = r.original_id();
    let text = original["text"].as_str().unwrap_or_default();
    let author = original["author"].as_str().unwrap_or_default();
    let Some(i) = model.learn(post, text) else {
        return Some(format!("repost {} of an unknown post {original}", r.id));
    };
    let p = model.posts[i].clone();
    if p.author != author || p.text != text {
        return Some(format!(
            "repost {} carries {post} as {author} {text:?}, written by {} as {:?}",
            r.id, p.author, p.text
        ));
    }
    if !model
        .repost_ops(&r.by, post)
        .iter()
        .any(|t| t.on && t.span.invoke < t1)
    {
        return Some(format!(
            "repost {} of {post}: {} never reposted it",
            r.id, r.by
        ));
    }
    if let Some(fault) = model.learn_repost(&r.id, &r.by, post, t1) {
        return Some(fault);
    }
    if !model.post_may_be_live(i, t0, t1) {
        return Some(format!(
            "repost {} by {} of {post} served after the original's delete was acknowledged",
            r.id, r.by
        ));
    }
    if !model.repost_may_stand(&r.id, t0, t1) {
        return Some(format!(
            "repost {} by {} of {post} served after its unrepost was acknowledged",
            r.id, r.by
        ));
    }
    if r.by != reader && !Model::may_hold(model.pair(reader, &r.by), t0, t1) {
        return Some(format!(
            "repost {} by {} served to {reader}, who surely did not follow {}",
            r.id, r.by, r.by
        ));
    }
    for who in [r.by.as_str(), author] {
        if who != reader
            && let Some(why) = model.surely_hidden(reader, who, t0, t1)
        {
            return Some(format!(
                "repost {} by {} of {post} by {author} served to {reader} while {why}",
                r.id, r.by
            ));
        }
    }
    if let Some(name) = r.by_name.as_deref()
        && !model.fresh_names_of(&r.by, t0, t1).contains(&name)
    {
        return Some(format!(
            "repost {} by {} named {name:?}, not {}'s during [{t0}..{t1}]",
            r.id, r.by, r.by
        ));
    }
    let parent = p.reply_to.map(|r| model.posts[r].author.clone());
    if original.get("reply_to_author").is_some()
        && original["reply_to_author"].as_str() != parent.as_deref()
    {
        return Some(format!(
            "repost {} carries {post} with reply_to_author {}, answering {parent:?}",
            r.id, original["reply_to_author"]
        ));
    }
    if let Some(name) = original["author_display_name"].as_str()
        && !model.fresh_names_of(author, t0, t1).contains(&name)
    {
        return Some(format!(
            "repost {} carries {post} by {author} named {name:?}, not {author}'s during [{t0}..{t1}]",
            r.id
        ));
    }
    None
}

/// Whether the item showing `post` (its own post, or repost `repost` of it) was surely
/// an eligible occurrence of `post` for `reader` through `[t0, t1]`: then no newer
/// occurrence of it may have been served during that time (seen once).
pub fn surely_eligible(
    model: &Model,
    reader: &str,
    post: &str,
    repost: Option<&str>,
    (t0, t1): (i64, i64),
) -> bool {
    let Some(&i) = model.by_id.get(post) else {
        return false;
    };
    let p = &model.posts[i];
    let followed =
        |who: &str| who == reader || Model::surely_holds(model.pair(reader, who), t0, t1);
    let shown = |who: &str| who == reader || !model.may_hide(reader, who, t0, t1);
    if !model.post_surely_live(i, t0, t1) || !shown(&p.author) {
        return false;
    }
    match repost {
        None => {
            let parent = p.reply_to.map(|r| model.posts[r].author.as_str());
            followed(&p.author) && parent.is_none_or(|a| a == p.author || followed(a))
        }
        Some(id) => {
            let Some(seen) = model.repost_ids.get(id) else {
                return false;
            };
            let ops = model.repost_ops(&seen.user, post);
            seen.known < t0
                && !ops.iter().any(|t| !t.on && t.span.invoke < t1)
                && followed(&seen.user)
                && shown(&seen.user)
        }
    }
}

/// A repost listed among its reposter's posts, read over `[t0, t1]`: made, of a post
/// that may have been live, not surely undone.
pub fn repost_listed_fault(model: &mut Model, r: &RepostItem, t0: i64, t1: i64) -> Option<String> {
    let post = r.original_id();
    let text = r.original["text"].as_str().unwrap_or_default();
    let Some(i) = model.learn(post, text) else {
        return Some(format!("repost {} of an unknown post {}", r.id, r.original));
    };
    if !model
        .repost_ops(&r.by, post)
        .iter()
        .any(|t| t.on && t.span.invoke < t1)
    {
        return Some(format!("repost {} of {post}, never reposted", r.id));
    }
    if let Some(fault) = model.learn_repost(&r.id, &r.by, post, t1) {
        return Some(fault);
    }
    if !model.post_may_be_live(i, t0, t1) {
        return Some(format!(
            "repost {} of {post} listed after the post's delete was acknowledged",
            r.id
        ));
    }
    if !model.repost_may_stand(&r.id, t0, t1) {
        return Some(format!(
            "repost {} of {post} listed after its unrepost was acknowledged",
            r.id
        ));
    }
    None
}

/// The reposts the post lists hold, checked against the history and put in `s`: each
/// of a live post, made and not surely undone, and each repost surely standing of a
/// live post listed; every stored post's `reposts_count` the reposts of it that stand.
pub fn listed(
    model: &mut Model,
    s: &mut Sources,
    listed: &[(String, RepostItem)],
    counts: &BTreeMap<String, u64>,
    now: i64,
) -> Vec<String> {
    let mut faults = Vec::new();
    let mut pairs = BTreeSet::new();
    for (user, r) in listed {
        let post = r.original_id().to_owned();
        if r.by != *user || !pairs.insert((user.clone(), post.clone())) {
            faults.push(format!(
                "{user}'s posts list repost {} by {} of {post}",
                r.id, r.by
            ));
            continue;
        }
        if let Some(fault) = model.learn_repost(&r.id, user, &post, now) {
            faults.push(fault);
        }
        let (Ok(id), Ok(original)) = (r.id.parse::<PostId>(), post.parse::<PostId>()) else {
            faults.push(format!("repost {} of {post}: a bad id", r.id));
            continue;
        };
        let Some(p) = s.posts.get(&original).filter(|p| p.live()) else {
            faults.push(format!(
                "{user}'s repost {} of {post} stands, the post is gone",
                r.id
            ));
            continue;
        };
        let ops = model.repost_ops(user, &post);
        if ops.is_empty() {
            faults.push(format!(
                "{user}'s repost {} of {post} stands, never reposted",
                r.id
            ));
        } else if !Model::may_hold(ops, now, now) {
            faults.push(format!(
                "{user}'s repost {} of {post} stands, yet the unrepost was acknowledged last",
                r.id
            ));
        }
        let repost = socialite::domain::Repost {
            id,
            user: user.clone(),
            post: socialite::domain::ReplyTo {
                post: original,
                author: p.author.clone(),
            },
        };
        s.repost_windows.insert(id, Model::creation_window(ops));
        s.reposts.insert(id, repost);
    }
    for ((user, post), ops) in &model.reposts {
        let live = post
            .parse::<PostId>()
            .ok()
            .and_then(|id| s.posts.get(&id))
            .is_some_and(PostSource::live);
        if live
            && Model::surely_holds(ops, now, now)
            && !pairs.contains(&(user.clone(), post.clone()))
        {
            faults.push(format!("{user}'s repost of {post} was lost"));
        }
    }
    for (id, count) in counts {
        let Ok(parsed) = id.parse::<PostId>() else {
            continue;
        };
        let truth = s.reposts_count(parsed);
        if *count != truth {
            faults.push(format!(
                "post {id} has reposts_count {count}, {truth} reposts of it stand"
            ));
        }
    }
    faults
}
