//! What a restore checks a copy for before it may replace the store, in order, each
//! refusal naming what is wrong:
//!
//! 1. **Its length is the one its header states.** SQLite reads the pages a short file
//!    lacks as zeros, and its integrity check can then pass: a copy cut short by less
//!    than a page would restore with a row of zeros. The header's page size (bytes
//!    16-17, 1 meaning 65536) times its page count (bytes 28-31, valid while the
//!    version-valid-for number at 92 equals the change counter at 24, as every SQLite
//!    since 3.7.0 keeps it) must be the file's length, to the byte.
//! 2. **Its structure is sound:** `PRAGMA integrity_check`.
//! 3. **It is a socialite store this binary reads:** the core tables, a format version
//!    no newer than this binary's.
//! 4. **Its content is what was backed up:** every table's row count and digest equal
//!    the manifest `socialite backup` wrote into it (`backup/manifest.rs`). A copy
//!    without a manifest (taken by an older socialite) is refused unless the operator
//!    allowed it, and then restored with a warning.
//!
//! Then (`check_times`, `check_reposts`) its content is data the service keeps: times
//! in the kept range and not in the future, and reposts of posts and by users it holds.

use std::io::Read;
use std::path::Path;

use anyhow::{Context, bail};
use rusqlite::{Connection, OptionalExtension};

use super::super::backup::manifest::{self, Verdict};
use super::super::schema::{CORE_TABLES, check_version};
use crate::domain::{PostId, check_time_at, check_time_ms};

/// Integrity problems quoted in a refusal.
const PROBLEMS_SHOWN: usize = 5;
/// The first bytes of every SQLite database file.
const MAGIC: &[u8; 16] = b"SQLite format 3\0";

/// What the checks found in a sound copy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Verified {
    /// Its format version (`PRAGMA user_version`).
    pub version: i64,
    /// Whether its content was checked against its manifest.
    pub manifest: Verdict,
}

/// Runs every check on the copy at `file`, open as `conn`. `allow_no_manifest` lets a
/// copy without a manifest through.
pub fn verify(file: &Path, conn: &Connection, allow_no_manifest: bool) -> anyhow::Result<Verified> {
    check_length(file)?;
    let problems = integrity_problems(conn)
        .context("it is not a readable SQLite database (damaged or another kind of file)")?;
    if !problems.is_empty() {
        bail!(
            "it is damaged: SQLite's integrity check reports {}",
            problems.join("; ")
        );
    }
    let mut missing = Vec::new();
    for table in CORE_TABLES {
        if !has_table(conn, table)? {
            missing.push(table);
        }
    }
    if !missing.is_empty() {
        bail!(
            "it is not a socialite store: it has no {} table",
            missing.join(", ")
        );
    }
    let version = check_version(conn).context("it cannot be read by this socialite")?;
    let manifest = manifest::check(conn)?;
    if manifest == Verdict::Missing && !allow_no_manifest {
        bail!(
            "it has no manifest ({} table), so its content cannot be verified: it was not \
             written by this socialite's `backup` (an older socialite's backup, or another \
             copy). Take a new backup, or restore it as it is with --allow-no-manifest",
            manifest::TABLE
        );
    }
    Ok(Verified { version, manifest })
}

/// Every time the copy holds lies in the range the service keeps and is no later than
/// `now_ms` plus the clock skew (`domain::time`), as for data any other way in: the
/// oldest and newest of each table's `created_at`, and of the post and repost ids' times.
pub fn check_times(conn: &Connection, now_ms: i64) -> anyhow::Result<()> {
    let times = [
        ("users", "created_at"),
        ("follows", "created_at"),
        ("likes", "created_at"),
        ("blocks", "created_ms"),
        ("mutes", "created_ms"),
        ("markers", "updated_at"),
    ];
    for (table, column) in times {
        // A copy of an older format lacks the newer tables; its open will create them.
        let exists: bool = conn.query_row(
            "SELECT EXISTS (SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name = ?1)",
            [table],
            |row| row.get(0),
        )?;
        if !exists {
            continue;
        }
        let (oldest, newest): (Option<i64>, Option<i64>) = conn.query_row(
            &format!("SELECT min({column}), max({column}) FROM {table}"),
            [],
            |row| Ok((row.get(0)?, row.get(1)?)),
        )?;
        for ms in oldest.into_iter().chain(newest) {
            check_time_at(ms, now_ms)
                .with_context(|| format!("its {table} hold a time the service does not keep"))?;
        }
    }
    // A mute's end lies ahead of it by design: only the range is checked.
    if has_table(conn, "mutes")? {
        let (oldest, newest): (Option<i64>, Option<i64>) = conn.query_row(
            "SELECT min(until_ms), max(until_ms) FROM mutes",
            [],
            |row| Ok((row.get(0)?, row.get(1)?)),
        )?;
        for ms in oldest.into_iter().chain(newest) {
            check_time_ms(ms)
                .context("its mutes hold an expiry (until_ms) the service does not keep")?;
        }
    }
    for (table, order) in [
        ("posts", "ASC"),
        ("posts", "DESC"),
        ("reposts", "ASC"),
        ("reposts", "DESC"),
    ] {
        if !has_table(conn, table)? {
            continue;
        }
        let id: Option<Vec<u8>> = conn
            .query_row(
                &format!("SELECT id FROM {table} ORDER BY id {order} LIMIT 1"),
                [],
                |row| row.get(0),
            )
            .optional()?;
        let Some(bytes) = id else { continue };
        let id = PostId::from_bytes(
            bytes
                .try_into()
                .map_err(|_| anyhow::anyhow!("its {table} hold an id that is not 12 bytes"))?,
        );
        id.check_at(now_ms).with_context(|| {
            format!("its {table} hold id {id}, whose time the service does not keep")
        })?;
    }
    Ok(())
}

/// Every repost the copy holds names a user and a post it holds, the post by its
/// author, and is later than its post: the store never keeps another (a post's delete
/// removes its reposts in its transaction), so one that does not is a copy the service
/// would serve wrongly (a repost no read can show, a count that disagrees).
pub fn check_reposts(conn: &Connection) -> anyhow::Result<()> {
    if !has_table(conn, "reposts")? {
        return Ok(()); // a copy of a format before reposts
    }
    let (count, example): (i64, Option<String>) = conn.query_row(
        "SELECT count(*), min(lower(hex(r.id)) || ' of post ' || lower(hex(r.post)) || ' by ' || r.user)
           FROM reposts AS r
          WHERE NOT EXISTS (SELECT 1 FROM users AS u WHERE u.id = r.user)
             OR NOT EXISTS (SELECT 1 FROM posts AS p
                             WHERE p.id = r.post AND p.author = r.post_author)
             OR r.id <= r.post",
        [],
        |row| Ok((row.get(0)?, row.get(1)?)),
    )?;
    if count > 0 {
        bail!(
            "its reposts hold {count} repost(s) whose user or post it does not hold (or whose \
             post's author differs, or that are not later than their post), e.g. repost {}",
            example.unwrap_or_default()
        );
    }
    Ok(())
}

/// The file is exactly as long as its header says.
fn check_length(file: &Path) -> anyhow::Result<()> {
    let mut opened = std::fs::File::open(file)?;
    let length = opened.metadata()?.len();
    let mut header = [0_u8; 100];
    let readable = length >= header.len() as u64
        && opened.read_exact(&mut header).is_ok()
        && header.starts_with(MAGIC);
    if !readable {
        bail!(
            "it is not a readable SQLite database (damaged or another kind of file): it does \
             not begin with a SQLite header"
        );
    }
    let be32 = |at: usize| u32::from_be_bytes(header[at..at + 4].try_into().expect("4 bytes"));
    let page_size = match u16::from_be_bytes([header[16], header[17]]) {
        1 => 65536_u64,
        size => u64::from(size),
    };
    if !page_size.is_power_of_two() || !(512..=65536).contains(&page_size) {
        bail!("it is damaged: its header gives a page size of {page_size} bytes");
    }
    let (counter, pages, valid_for) = (be32(24), be32(28), be32(92));
    if valid_for != counter {
        bail!(
            "it is damaged: its header's page count is not current (valid for change \
             {valid_for}, the file is at change {counter}), so its length cannot be checked"
        );
    }
    let expected = page_size * u64::from(pages);
    if length != expected {
        let how = if length < expected {
            "it was cut short"
        } else {
            "it has bytes past its last page"
        };
        bail!(
            "it is damaged: the file is {length} bytes long and its header says {expected} \
             ({pages} pages of {page_size} bytes): {how}"
        );
    }
    Ok(())
}

/// The first problems `PRAGMA integrity_check` finds, none when the file is sound.
fn integrity_problems(conn: &Connection) -> rusqlite::Result<Vec<String>> {
    let mut stmt = conn.prepare(&format!("PRAGMA integrity_check({PROBLEMS_SHOWN})"))?;
    let rows = stmt.query_map([], |row| row.get::<_, String>(0))?;
    let rows: Vec<String> = rows.collect::<rusqlite::Result<_>>()?;
    Ok(if rows == ["ok"] { Vec::new() } else { rows })
}

pub(super) fn has_table(conn: &Connection, name: &str) -> rusqlite::Result<bool> {
    conn.prepare_cached("SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name = ?1")?
        .exists([name])
}
