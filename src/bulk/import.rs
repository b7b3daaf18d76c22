//! `socialite import --users FILE --follows FILE --posts FILE --likes FILE --blocks FILE
//! --mutes FILE`: JSON Lines files (formats in `lines.rs`; `-` reads one of them from
//! standard input) loaded in bulk.
//!
//! **Validate first, then write.** Every file is read twice: first every line is parsed
//! and checked (the API's rules for ids and texts, no self-follows, and every user and
//! post a line refers to, a reply's parent included, must be in the files or already in
//! the store; no follow of the files stands beside a block of the files), and only when
//! no line failed is anything written, in a second read. So a malformed or truncated
//! file is reported (file, line and why; up to [`MAX_ERRORS`] lines) and leaves the
//! store untouched. Standard input is copied to a temporary file for the two reads.
//!
//! **Repeated keys:** a line whose key (user id, post id, follower and followee, user
//! and post) an earlier line of its file had is written once when its values are the
//! same, and refuses the import when they differ (`duplicates.rs`). A row whose key is
//! already in the store is kept as stored. The report counts the rows written, so
//! repeats and rows already there are not counted.
//!
//! **Blocks beside follows.** A follow and a block of the same two users (either way) in
//! the files refuse the import, naming both lines: the files contradict each other (the
//! API refuses a follow while a block stands, and a block removes the follows). A block
//! loaded beside a follow already in the store removes that follow, as the API's block
//! does; so does a loaded follow beside a stored block (the load's report counts them).
//!
//! Memory: the ids of the users file and of the posts file are kept for the reference
//! checks, the pairs of the blocks file, and a hash of every key for the repeats.

use std::collections::{HashMap, HashSet};
use std::io::{BufRead, BufReader};
use std::path::PathBuf;

use anyhow::Context;

use super::duplicates::{Repeat, Seen};
use super::lines::{self, LineError};
use super::{BATCH, LoadReport, Loader, Source};
use crate::domain::{PostId, now_ms};
use crate::store::Store;
use crate::store::bulk::{DeriveSettings, Rows};

/// Refused lines reported before the check stops.
pub const MAX_ERRORS: usize = 10;

/// The files to import; `-` is standard input (for one of them at most).
#[derive(Debug, Clone, Default)]
pub struct ImportFiles {
    pub users: Option<PathBuf>,
    pub follows: Option<PathBuf>,
    pub posts: Option<PathBuf>,
    pub likes: Option<PathBuf>,
    pub blocks: Option<PathBuf>,
    pub mutes: Option<PathBuf>,
}

/// A file to read: its name as given, and where its bytes are.
struct Input {
    label: String,
    path: PathBuf,
    /// Standard input's copy, removed when dropped.
    spooled: bool,
}

impl Drop for Input {
    fn drop(&mut self) {
        if self.spooled {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

fn input(given: &Option<PathBuf>, stdin_taken: &mut bool) -> anyhow::Result<Option<Input>> {
    let Some(path) = given else { return Ok(None) };
    if path.as_os_str() != "-" {
        return Ok(Some(Input {
            label: path.display().to_string(),
            path: path.clone(),
            spooled: false,
        }));
    }
    anyhow::ensure!(
        !*stdin_taken,
        "only one file can be read from standard input (-)"
    );
    *stdin_taken = true;
    let spool = std::env::temp_dir().join(format!(
        "socialite-import-{}-{:08x}.jsonl",
        std::process::id(),
        rand::random::<u32>()
    ));
    let input = Input {
        label: "<stdin>".to_owned(),
        path: spool,
        spooled: true,
    };
    let mut file = std::fs::File::create(&input.path)
        .with_context(|| format!("creating {}", input.path.display()))?;
    std::io::copy(&mut std::io::stdin().lock(), &mut file).context("reading standard input")?;
    Ok(Some(input))
}

/// Calls `each` with every line's number and text (blank lines are skipped), and
/// `read` with the bytes read so far. Stops at the first `Err` of `each`.
fn for_each_line(
    input: &Input,
    mut each: impl FnMut(u64, &str) -> Result<(), String>,
    mut read: impl FnMut(u64),
) -> Result<(), String> {
    let file = std::fs::File::open(&input.path)
        .map_err(|e| format!("{}: cannot open: {e}", input.label))?;
    let mut reader = BufReader::with_capacity(1 << 20, file);
    let mut line = String::with_capacity(1024);
    let mut number = 0;
    loop {
        line.clear();
        let read_now = match reader.read_line(&mut line) {
            Ok(0) => return Ok(()),
            Ok(n) => n,
            Err(e) => return Err(format!("{}:{}: {e}", input.label, number + 1)),
        };
        number += 1;
        read(read_now as u64);
        let text = line.trim_end_matches(['\n', '\r']);
        if text.trim().is_empty() {
            continue;
        }
        each(number, text)?;
    }
}

/// The files, in the order of [`ImportFiles`]' fields.
const FILES: [&str; 6] = ["users", "follows", "posts", "likes", "blocks", "mutes"];

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
struct Check {
    errors: Vec<String>,
    rows: [u64; 6],
    /// The blocks file's pairs, lesser id first, with where each was first seen.
    blocked: HashMap<(String, String), String>,
    users: HashSet<String>,
    posts: HashSet<PostId>,
    /// References to users and posts not in the files, with where they were first seen.
    other_users: HashMap<String, String>,
    other_posts: HashMap<PostId, String>,
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
fn check_all(inputs: &[Option<Input>; 6], progress: &super::Progress, now: i64) -> Check {
    let mut check = Check::default();
    // Users, then posts, then blocks, so that the others find them.
    for slot in [0, 2, 4, 5, 1, 3] {
        let Some(input) = &inputs[slot] else { continue };
        let size = std::fs::metadata(&input.path).map_or(0, |m| m.len());
        let bar = progress.bar(&format!("check {}", FILES[slot]), size);
        let (mut users, mut follows) = (Rows::default(), Rows::default());
        let (mut posts, mut likes) = (Rows::default(), Rows::default());
        let mut relations = Rows::default();
        let mut seen = Seen::default();
        let outcome = for_each_line(
            input,
            |line, text| {
                let parsed = match slot {
                    0 => lines::user(text, &mut users, now),
                    1 => lines::follow(text, &mut follows, now),
                    2 => lines::post(text, &mut posts, now),
                    3 => lines::like(text, &mut likes, now),
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
                        check.blocked.entry(pair(user, other)).or_insert(at);
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
                if let Some(why) = conflict {
                    return check.refuse(input, line, why);
                }
                users.clear();
                follows.clear();
                posts.clear();
                likes.clear();
                relations.clear();
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
async fn check_references(store: &Store, check: &mut Check) -> anyhow::Result<()> {
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
    Ok(())
}

/// Reads `input` again into batches of [`BATCH`] rows, handing each to `send`.
fn batches<R>(
    input: &Input,
    parse: impl Fn(&str, &mut Rows<R>) -> Result<(), LineError>,
    send: &mut dyn FnMut(Rows<R>) -> anyhow::Result<()>,
) -> anyhow::Result<()> {
    let mut rows = Rows::with_capacity(BATCH, 64);
    let mut sent: anyhow::Result<()> = Ok(());
    let read = for_each_line(
        input,
        |line, text| {
            parse(text, &mut rows).map_err(|why| format!("{}:{line}: {why}", input.label))?;
            if rows.len() == BATCH {
                let full = std::mem::replace(&mut rows, Rows::with_capacity(BATCH, 64));
                if let Err(error) = send(full) {
                    sent = Err(error);
                    return Err("stopped".to_owned());
                }
            }
            Ok(())
        },
        |_| {},
    );
    sent?;
    read.map_err(|why| anyhow::anyhow!("{why} (the file changed since it was checked?)"))?;
    if !rows.is_empty() {
        send(rows)?;
    }
    Ok(())
}

/// Checks every file, then loads them and builds the derived data.
pub async fn run(
    store: Store,
    settings: DeriveSettings,
    files: &ImportFiles,
) -> anyhow::Result<LoadReport> {
    super::ensure_stopped(&store).await?;
    let now = now_ms();
    let mut stdin_taken = false;
    let inputs: [Option<Input>; 6] = [
        input(&files.users, &mut stdin_taken)?,
        input(&files.follows, &mut stdin_taken)?,
        input(&files.posts, &mut stdin_taken)?,
        input(&files.likes, &mut stdin_taken)?,
        input(&files.blocks, &mut stdin_taken)?,
        input(&files.mutes, &mut stdin_taken)?,
    ];
    anyhow::ensure!(
        inputs.iter().any(Option::is_some),
        "nothing to import: give --users, --follows, --posts, --likes, --blocks or --mutes"
    );
    let progress = super::Progress::new();
    let (inputs, mut check) = tokio::task::spawn_blocking(move || {
        let check = check_all(&inputs, &progress, now);
        (inputs, check)
    })
    .await?;
    if check.errors.len() < MAX_ERRORS {
        check_references(&store, &mut check).await?;
    }
    if !check.errors.is_empty() {
        check.errors.truncate(MAX_ERRORS);
        anyhow::bail!(
            "nothing was imported; {} line(s) refused{}:\n  {}",
            check.errors.len(),
            if check.errors.len() == MAX_ERRORS {
                " (the first ones)"
            } else {
                ""
            },
            check.errors.join("\n  ")
        );
    }
    let [users, follows, posts, likes, blocks, mutes] = inputs;
    let mut loader = Loader::begin(store, settings).await?;
    if let Some(input) = users {
        let produce = move |send: &mut dyn FnMut(_) -> _| {
            batches(&input, |text, rows| lines::user(text, rows, now), send)
        };
        loader
            .load(
                Source::Users,
                check.rows[0],
                produce,
                |s, rows| async move { s.bulk.insert_users(rows).await },
            )
            .await?;
    }
    if let Some(input) = follows {
        let produce = move |send: &mut dyn FnMut(_) -> _| {
            batches(&input, |text, rows| lines::follow(text, rows, now), send)
        };
        loader
            .load(
                Source::Follows,
                check.rows[1],
                produce,
                |s, rows| async move { s.bulk.insert_follows(rows).await },
            )
            .await?;
    }
    if let Some(input) = posts {
        let produce = move |send: &mut dyn FnMut(_) -> _| {
            batches(&input, |text, rows| lines::post(text, rows, now), send)
        };
        loader
            .load(
                Source::Posts,
                check.rows[2],
                produce,
                |s, rows| async move { s.bulk.insert_posts(rows).await },
            )
            .await?;
    }
    if let Some(input) = likes {
        let produce = move |send: &mut dyn FnMut(_) -> _| {
            batches(&input, |text, rows| lines::like(text, rows, now), send)
        };
        loader
            .load(
                Source::Likes,
                check.rows[3],
                produce,
                |s, rows| async move { s.bulk.insert_likes(rows).await },
            )
            .await?;
    }
    for (input, mute) in [(blocks, false), (mutes, true)] {
        let Some(input) = input else { continue };
        let produce = move |send: &mut dyn FnMut(_) -> _| {
            let parse = |text: &str, rows: &mut _| lines::relation(text, rows, now, mute);
            batches(&input, parse, send)
        };
        let (source, expected) = match mute {
            false => (Source::Blocks, check.rows[4]),
            true => (Source::Mutes, check.rows[5]),
        };
        loader
            .load(source, expected, produce, |s, rows| async move {
                s.bulk.insert_relations(rows).await
            })
            .await?;
    }
    loader.finish().await
}
