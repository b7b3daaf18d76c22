//! `socialite import --users FILE --follows FILE --posts FILE --likes FILE --blocks FILE
//! --mutes FILE --reposts FILE`: JSON Lines files (formats in `lines.rs`; `-` reads one of them
//! from standard input) loaded in bulk.
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
//! A repost of a post whose author blocks the reposter, by a block in the files (both
//! lines named) or in the store, refuses the import, as the API refuses such a repost;
//! so do repost ids that name another repost or a post (`check_reposts.rs`).
//!
//! Memory: the ids of the users file and of the posts file are kept for the reference
//! checks, the pairs of the blocks file, and a hash of every key for the repeats.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;

use anyhow::Context;

use super::check::{check_all, check_references};
use super::lines::{self, LineError};
use super::{BATCH, LoadReport, Loader, Source};
use crate::domain::now_ms;
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
    pub reposts: Option<PathBuf>,
}

/// A file to read: its name as given, and where its bytes are.
pub(super) struct Input {
    pub(super) label: String,
    pub(super) path: PathBuf,
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
pub(super) fn for_each_line(
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
    let inputs: [Option<Input>; 7] = [
        input(&files.users, &mut stdin_taken)?,
        input(&files.follows, &mut stdin_taken)?,
        input(&files.posts, &mut stdin_taken)?,
        input(&files.likes, &mut stdin_taken)?,
        input(&files.blocks, &mut stdin_taken)?,
        input(&files.mutes, &mut stdin_taken)?,
        input(&files.reposts, &mut stdin_taken)?,
    ];
    anyhow::ensure!(
        inputs.iter().any(Option::is_some),
        "nothing to import: give --users, --follows, --posts, --likes, --blocks, --mutes or \
         --reposts"
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
    let [users, follows, posts, likes, blocks, mutes, reposts] = inputs;
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
    // After the posts, whose authors each repost takes.
    if let Some(input) = reposts {
        let produce = move |send: &mut dyn FnMut(_) -> _| {
            batches(&input, |text, rows| lines::repost(text, rows, now), send)
        };
        loader
            .load(
                Source::Reposts,
                check.rows[6],
                produce,
                |s, rows| async move { s.bulk.insert_reposts(rows).await },
            )
            .await?;
    }
    loader.finish().await
}
