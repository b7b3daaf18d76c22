//! The first read of `socialite import`: every line of every file parsed and checked
//! (the API's rules, references to users and posts in the files or the store, no
//! follow beside a block of the files, conflicting repeated keys), before anything is
//! written. See `import.rs`.

use std::collections::{HashMap, HashSet};

use super::duplicates::{Repeat, Seen};
use super::import::MAX_ERRORS;
use super::import::{Input, for_each_line};
use super::lines::{self, LineError};
use crate::domain::PostId;
use crate::store::Store;
use crate::store::bulk::Rows;

/// The files, in the order of [`ImportFiles`]' fields.
pub(super) const FILES: [&str; 7] = [
    "users", "follows", "posts", "likes", "blocks", "mutes", "reposts",
];

/// A pair of users, lesser id first: a block's pair either way.
fn pair(a: &str, b: &str) -> (String, String) {
    if a <= b {
        (a.to_owned(), b.to_owned())
    } else {
        (b.to_owned(), a.to_owned())
    }
}

/// What the first read learns.
#[derive(Default)]
pub(super) struct Check {
    pub(super) errors: Vec<String>,
    pub(super) rows: [u64; 7],
    /// The blocks file's pairs, lesser id first, with where each was first seen.
    blocked: HashMap<(String, String), String>,
    users: HashSet<String>,
    posts: HashSet<PostId>,
    /// References to users and posts not in the files, with where they were first seen.
    other_users: HashMap<String, String>,
    other_posts: HashMap<PostId, String>,
    /// What the reposts' checks need: kept only when there is a reposts file.
    pub(super) reposts: super::check_reposts::RepostCheck,
}

impl Check {
    /// Records a refused line; `Err` once the report is full, to stop reading.
    fn refuse(&mut self, input: &Input, line: u64, why: LineError) -> Result<(), String> {
        self.errors.push(format!("{}:{line}: {why}", input.label));
        if self.errors.len() >= MAX_ERRORS {
            return Err("too many errors".to_owned());
        }
        Ok(())
    }

    fn user_ref(&mut self, user: &str, input: &Input, line: u64) {
        if !self.users.contains(user) && !self.other_users.contains_key(user) {
            let at = format!("{}:{line}", input.label);
            self.other_users.insert(user.to_owned(), at);
        }
    }

    fn post_ref(&mut self, post: PostId, input: &Input, line: u64) {
        if !self.posts.contains(&post) && !self.other_posts.contains_key(&post) {
            let at = format!("{}:{line}", input.label);
            self.other_posts.insert(post, at);
        }
    }
}

/// The first read: parses and checks every line, collecting keys and references.
pub(super) fn check_all(
    inputs: &[Option<Input>; 7],
    progress: &super::Progress,
    now: i64,
) -> Check {
    let mut check = Check::default();
    let with_reposts = inputs[6].is_some();
    // Users, then posts, then blocks, so that the others find them.
    for slot in [0, 2, 4, 5, 1, 3, 6] {
        let Some(input) = &inputs[slot] else { continue };
        let size = std::fs::metadata(&input.path).map_or(0, |m| m.len());
        let bar = progress.bar(&format!("check {}", FILES[slot]), size);
        let (mut users, mut follows) = (Rows::default(), Rows::default());
        let (mut posts, mut likes) = (Rows::default(), Rows::default());
        let (mut relations, mut reposts) = (Rows::default(), Rows::default());
        let mut seen = Seen::default();
        let outcome = for_each_line(
            input,
            |line, text| {
                // Cleared before each line, not after: a refused line returns early.
                users.clear();
                follows.clear();
                posts.clear();
                likes.clear();
                relations.clear();
                reposts.clear();
                let parsed = match slot {
                    0 => lines::user(text, &mut users, now),
                    1 => lines::follow(text, &mut follows, now),
                    2 => lines::post(text, &mut posts, now),
                    3 => lines::like(text, &mut likes, now),
                    6 => lines::repost(text, &mut reposts, now),
                    _ => lines::relation(text, &mut relations, now, slot == 5),
                };
                if let Err(why) = parsed {
                    return check.refuse(input, line, why);
                }
                check.rows[slot] += 1;
                // Set when the line repeats a key with other values: what differs.
                let mut conflict = None;
                let mut note = |repeat: Repeat, what: &dyn Fn() -> String| {
                    if let Repeat::Conflict(first) = repeat {
                        conflict = Some(format!(
                            "{} than at line {first}: a conflicting duplicate",
                            what()
                        ));
                    }
                };
                if let Some(row) = users.rows().first() {
                    let id = users.str(row.id);
                    check.users.insert(id.to_owned());
                    let values = (users.str(row.display_name), row.created_at_ms);
                    note(seen.note(&id, &values, line), &|| {
                        format!("user {id:?} again, with another display_name or created_at")
                    });
                } else if let Some(row) = follows.rows().first() {
                    let (from, to) = (follows.str(row.follower), follows.str(row.followee));
                    check.user_ref(from, input, line);
                    check.user_ref(to, input, line);
                    if let Some(at) = check.blocked.get(&pair(from, to)) {
                        let why = format!(
                            "follow {from:?} -> {to:?} beside the block of the same two at {at}: \
                             no follow stands beside a block, so an import holding both is \
                             refused (leave out one of them)"
                        );
                        return check.refuse(input, line, why);
                    }
                    note(seen.note(&(from, to), &row.created_at_ms, line), &|| {
                        format!("follow {from:?} -> {to:?} again, with another created_at")
                    });
                } else if let Some(row) = posts.rows().first() {
                    check.user_ref(posts.str(row.author), input, line);
                    check.posts.insert(row.id);
                    if with_reposts {
                        check.reposts.note_author(row.id, posts.str(row.author));
                    }
                    if let Some(parent) = row.reply_to {
                        check.post_ref(parent, input, line);
                    }
                    let values = (posts.str(row.author), posts.str(row.text), row.reply_to);
                    note(seen.note(&row.id, &values, line), &|| {
                        format!(
                            "post {} again, with another author, text or in_reply_to",
                            row.id
                        )
                    });
                } else if let Some(row) = likes.rows().first() {
                    let user = likes.str(row.user);
                    check.user_ref(user, input, line);
                    check.post_ref(row.post, input, line);
                    note(
                        seen.note(&(user, row.post), &row.created_at_ms, line),
                        &|| {
                            format!(
                                "like of {} by {user:?} again, with another created_at",
                                row.post
                            )
                        },
                    );
                } else if let Some(row) = relations.rows().first() {
                    let (user, other) = (relations.str(row.user), relations.str(row.other));
                    check.user_ref(user, input, line);
                    check.user_ref(other, input, line);
                    if row.mute.is_none() {
                        let at = format!("{}:{line}", input.label);
                        check.blocked.entry(pair(user, other)).or_insert(at.clone());
                        if with_reposts {
                            check.reposts.note_block(user, other, at);
                        }
                    }
                    let values = (
                        row.created_at_ms,
                        row.mute.map(|m| (m.notifications, m.until_ms)),
                    );
                    note(seen.note(&(user, other), &values, line), &|| {
                        let what = if row.mute.is_some() { "mute" } else { "block" };
                        format!("{what} of {other:?} by {user:?} again, with other values")
                    });
                }
                if let Some(row) = reposts.rows().first() {
                    let user = reposts.str(row.user);
                    check.user_ref(user, input, line);
                    check.post_ref(row.post, input, line);
                    if check.posts.contains(&row.id) {
                        let why = format!(
                            "repost id {} is also a post's id in the posts file: an id names \
                             one post or repost",
                            row.id
                        );
                        return check.refuse(input, line, why);
                    }
                    note(seen.note(&(user, row.post), &row.id, line), &|| {
                        format!(
                            "repost of {} by {user:?} again, with another id or created_at",
                            row.post
                        )
                    });
                    if conflict.is_none()
                        && let Err(why) = check.reposts.note_repost(row, user, input, line)
                    {
                        return check.refuse(input, line, why);
                    }
                }
                if let Some(why) = conflict {
                    return check.refuse(input, line, why);
                }
                Ok(())
            },
            |bytes| bar.inc(bytes),
        );
        bar.finish();
        if let Err(why) = outcome
            && check.errors.len() < MAX_ERRORS
        {
            check.errors.push(why);
        }
        if check.errors.len() >= MAX_ERRORS {
            break;
        }
    }
    check
}

/// References to users and posts that are not in the files must be in the store.
pub(super) async fn check_references(store: &Store, check: &mut Check) -> anyhow::Result<()> {
    let users: Vec<(String, String)> = check.other_users.drain().collect();
    for (user, at) in users {
        if store.users.user(&user).await?.is_none() {
            check.errors.push(format!(
                "{at}: user {user:?} is neither in the users file nor in the store"
            ));
        }
    }
    let posts: Vec<(PostId, String)> = check.other_posts.drain().collect();
    for chunk in posts.chunks(500) {
        let ids: Vec<PostId> = chunk.iter().map(|(id, _)| *id).collect();
        let found: HashSet<PostId> = store
            .content
            .existing_posts(&ids, &[])
            .await?
            .into_iter()
            .collect();
        for (post, at) in chunk.iter().filter(|(id, _)| !found.contains(id)) {
            check.errors.push(format!(
                "{at}: post {post} is neither in the posts file nor in the store"
            ));
        }
    }
    check.reposts.check(store, &mut check.errors).await
}
