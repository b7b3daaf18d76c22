//! `socialite backup` and `socialite restore` with real server processes on fresh files:
//! a backup taken under a write load holds every write acknowledged before it began and
//! none begun after it ended, and restores to a store whose workers catch up and whose
//! derived data agrees with its sources; MongoDB stores are sent to MongoDB's tools.
//!
//! This file holds the helpers, the snapshot a backup takes, failed backups and MongoDB;
//! the backup under a write load is in `backup/load.rs`; refusals (a live store, a lease
//! still held, a damaged or foreign copy) and restores onto stopped and killed stores are
//! in `backup/restore.rs`; copies cut short, changed or without a manifest in
//! `backup/verify.rs`; event ids across a restore in `backup/ids.rs`; blocks, mutes,
//! replies and notifications carried by a restore in `backup/social.rs`; reposts in
//! `backup/reposts.rs`; Mastodon's markers in `backup/markers.rs`.

mod common;
#[path = "backup/dismissals.rs"]
mod dismissals;
#[path = "backup/ids.rs"]
mod ids;
#[path = "backup/load.rs"]
mod load;
#[path = "backup/markers.rs"]
mod markers;
#[path = "backup/reposts.rs"]
mod reposts;
#[path = "backup/restore.rs"]
mod restore;
#[path = "backup/social.rs"]
mod social;
#[path = "stream/sse.rs"]
mod sse;
#[path = "backup/verify.rs"]
mod verify;

use std::collections::BTreeSet;
use std::ffi::OsStr;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{Api, start_binary};
use reqwest::StatusCode;
use socialite::store::embedded::Synchronous;

/// Lease length of the servers under test (`workers.lease_ttl`), in milliseconds.
const LEASE_TTL_MS: i64 = 1000;

/// A server process on the store at `db`, without rate limits, with short leases.
fn serve(db: &Path) -> (Child, String) {
    serve_with(db, &[])
}

fn serve_with(db: &Path, more: &[(&str, &OsStr)]) -> (Child, String) {
    let mut env = vec![
        ("SOCIALITE_STORAGE__PATH", db.as_os_str()),
        ("SOCIALITE_RATE__WRITES_PER_MIN", OsStr::new("0")),
        ("SOCIALITE_RATE__READS_PER_MIN", OsStr::new("0")),
        ("SOCIALITE_RATE__IP_PER_MIN", OsStr::new("0")),
        ("SOCIALITE_WORKERS__LEASE_TTL", OsStr::new("1s")),
        ("SOCIALITE_WORKERS__REFRESH_INTERVAL", OsStr::new("200ms")),
    ];
    env.extend_from_slice(more);
    start_binary(&[], &env)
}

/// What one run of the command line did.
pub struct Run {
    ok: bool,
    stdout: String,
    stderr: String,
}

/// Runs `socialite ARGS` on the store at `db` (the `storage.path` of its configuration).
fn cli(db: &Path, args: &[&str]) -> Run {
    cli_with(&[("SOCIALITE_STORAGE__PATH", db.as_os_str())], args)
}

fn cli_with(env: &[(&str, &OsStr)], args: &[&str]) -> Run {
    let output = Command::new(env!("CARGO_BIN_EXE_socialite"))
        .args(args)
        .envs(env.iter().copied())
        .env("NO_COLOR", "1")
        .env("RUST_LOG", "error")
        .stdin(Stdio::null())
        .output()
        .expect("the binary runs");
    Run {
        ok: output.status.success(),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

/// Backs up `db` to `to`; returns the change-feed head the backup reports.
fn backup(db: &Path, to: &Path) -> i64 {
    let run = cli(db, &["backup", "--to", to.to_str().unwrap()]);
    assert!(run.ok, "backup failed: {}", run.stderr);
    assert!(run.stdout.contains(" pages in "), "{}", run.stdout);
    let head = run.stdout.split("change feed at ").nth(1).unwrap().trim();
    head.parse()
        .unwrap_or_else(|_| panic!("a position: {}", run.stdout))
}

/// Stops a server as an operator would (SIGTERM): it drains and releases its leases.
fn stop_server(child: &mut Child) {
    let status = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    child.wait().unwrap();
}

/// The `leases` rows of the store file at `db`: (name, holder, position).
fn leases(db: &Path) -> Vec<(String, Option<String>, Option<String>)> {
    let conn =
        rusqlite::Connection::open_with_flags(db, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
            .unwrap();
    let mut stmt = conn
        .prepare("SELECT name, holder, position FROM leases ORDER BY name")
        .unwrap();
    stmt.query_map([], |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap()
}

/// Waits until this server holds every worker lease with nothing left to apply, and
/// every change-feed worker stands at `head` or later.
async fn caught_up(api: &Api, head: i64) {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let (status, body) = api.get("/v1/workers").await;
        assert_eq!(status, StatusCode::OK);
        let workers = body["workers"].as_array().unwrap();
        let done = !workers.is_empty()
            && workers.iter().all(|w| {
                let at_head = w["name"] == "aggregates"
                    || w["position"]
                        .as_str()
                        .and_then(|p| p.parse::<i64>().ok())
                        .is_some_and(|p| p >= head);
                w["held_here"] == true && w["lag_changes"] == 0 && at_head
            });
        if done {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "the workers did not catch up: {body}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Every item of a paged listing: `key` of each item, following `next_cursor` as `param`.
async fn all_pages(api: &Api, path: &str, param: &str, key: &str) -> Vec<String> {
    let items = api.walk(&format!("{path}?limit=100"), param).await;
    items
        .iter()
        .map(|item| item[key].as_str().unwrap().to_owned())
        .collect()
}

/// Derived data agrees with the sources, for `users` on the server at `base_url`: each
/// counter equals its edges or posts, each activity log holds one entry per post and
/// follow, and each home timeline is exactly the user's and their followees' posts,
/// newest first. `sessions` carries the users' tokens. Then `socialite audit`, beside
/// that server, finds the whole store at `db` clean, with nothing pending.
async fn assert_derived_consistent(db: &Path, base_url: &str, sessions: &Api, users: &[String]) {
    let api = sessions.at(base_url);
    for user in users {
        let (status, profile) = api.get(&format!("/v1/users/{user}")).await;
        assert_eq!(status, StatusCode::OK, "{user}");
        let following =
            all_pages(&api, &format!("/v1/users/{user}/following"), "cursor", "id").await;
        let followers =
            all_pages(&api, &format!("/v1/users/{user}/followers"), "cursor", "id").await;
        let posts = all_pages(&api, &format!("/v1/users/{user}/posts"), "before", "id").await;
        assert_eq!(
            profile["following_count"],
            following.len(),
            "{user}: {profile}"
        );
        assert_eq!(
            profile["followers_count"],
            followers.len(),
            "{user}: {profile}"
        );
        assert_eq!(profile["posts_count"], posts.len(), "{user}: {profile}");
        let (_, activity) = api.get(&format!("/v1/users/{user}/activity?limit=1")).await;
        assert_eq!(
            activity["total"],
            posts.len() + following.len(),
            "{user}: one activity per post and follow"
        );
        let mut expected: BTreeSet<String> = posts.into_iter().collect();
        for followee in &following {
            let theirs =
                all_pages(&api, &format!("/v1/users/{followee}/posts"), "before", "id").await;
            expected.extend(theirs);
        }
        let timeline = all_pages(&api, &format!("/v1/users/{user}/timeline"), "before", "id").await;
        let newest_first: Vec<String> = expected.into_iter().rev().collect();
        assert_eq!(timeline, newest_first, "{user}: the timeline");
    }
    let db = db.to_owned();
    let run = tokio::task::spawn_blocking(move || cli(&db, &["audit", "--wait", "30"]))
        .await
        .unwrap();
    assert!(run.ok, "the audit: {}{}", run.stdout, run.stderr);
    assert!(run.stdout.contains("audit clean"), "{}", run.stdout);
    assert!(!run.stdout.contains("pending ("), "{}", run.stdout);
}

/// MongoDB has its own tools: both commands name them and stop, touching nothing.
#[test]
fn mongodb_stores_are_sent_to_mongodump_and_mongorestore() {
    let uri = common::mongo_base_uri().unwrap_or_else(|| "mongodb://127.0.0.1:9/socialite".into());
    let env = [
        ("SOCIALITE_STORAGE__BACKEND", OsStr::new("mongodb")),
        ("SOCIALITE_STORAGE__MONGODB_URI", OsStr::new(&uri)),
    ];
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("dump.db");
    for (command, flag) in [("backup", "--to"), ("restore", "--from")] {
        let run = cli_with(&env, &[command, flag, file.to_str().unwrap()]);
        assert!(!run.ok, "{command} must fail on MongoDB");
        for needle in [
            "mongodump",
            "mongorestore",
            "worker_leases",
            "docs/operations-backup.md",
        ] {
            assert!(
                run.stderr.contains(needle),
                "{command}: {needle} in {}",
                run.stderr
            );
        }
        assert!(!file.exists());
    }
}

/// A backup that fails leaves the file it was to replace as it was, and no temporary.
#[test]
fn a_failed_backup_leaves_the_previous_file_and_no_partial_copy() {
    let dir = tempfile::tempdir().unwrap();
    let (store, to) = (dir.path().join("foreign.db"), dir.path().join("nightly.db"));
    rusqlite::Connection::open(&store)
        .unwrap()
        .execute_batch("CREATE TABLE t (x); INSERT INTO t VALUES (1);")
        .unwrap();
    std::fs::write(&to, b"last night's backup").unwrap();
    let run = cli(&store, &["backup", "--to", to.to_str().unwrap()]);
    assert!(!run.ok);
    assert!(
        run.stderr.contains("is this a socialite store"),
        "{}",
        run.stderr
    );
    assert_eq!(std::fs::read(&to).unwrap(), b"last night's backup");
    restore::assert_only(dir.path(), &["foreign.db", "foreign.db-lock", "nightly.db"]);

    let run = cli(&store, &["backup", "--to", store.to_str().unwrap()]);
    assert!(
        !run.ok && run.stderr.contains("is the store"),
        "{}",
        run.stderr
    );
}

/// The copy is one snapshot however the file changes while it is taken: rows written by
/// another connection between the backup's steps are not in it, and the backup never
/// starts over (one step per `PAGES` pages, each reported once).
#[tokio::test]
async fn the_copy_is_the_snapshot_of_when_it_began_whatever_is_written_between_steps() {
    use socialite::store::embedded::backup::{Progress, backup_in_steps};
    const PAGES: i32 = 4;
    let dir = tempfile::tempdir().unwrap();
    let (db, copy) = (dir.path().join("socialite.db"), dir.path().join("copy.db"));
    let store = socialite::store::Store::new(Arc::new(
        socialite::store::embedded::EmbeddedStore::open(&db, Synchronous::Normal).unwrap(),
    ));
    for i in 0..1000 {
        common::create_user(&store, &format!("user-{i:03}")).await;
    }
    drop(store);

    let writer = rusqlite::Connection::open(&db).unwrap();
    let (mut steps, mut total) = (0, 0);
    let mut during = |event: Progress| {
        if let Progress::Copied { total: t, .. } = event {
            steps += 1;
            total = t;
            // A few rows, so that a backup that starts over still ends.
            if steps > 3 {
                return;
            }
            writer
                .execute(
                    "INSERT INTO users (id, display_name, created_at) VALUES (?1, 'x', 0)",
                    [format!("during-{steps}")],
                )
                .unwrap();
        }
    };
    let report = backup_in_steps(&db, &copy, PAGES, &mut during).unwrap();
    assert!(steps > 2, "the backup took several steps: {steps}");
    assert_eq!(
        steps,
        total.div_ceil(PAGES as u64),
        "no step was taken twice"
    );
    assert!(
        report.pages > total,
        "the pages copied, and then the manifest's: {} of {total}",
        report.pages
    );

    let copied = rusqlite::Connection::open(&copy).unwrap();
    let count = |pattern: &str| -> i64 {
        copied
            .query_row(
                "SELECT count(*) FROM users WHERE id LIKE ?1",
                [pattern],
                |r| r.get(0),
            )
            .unwrap()
    };
    assert_eq!(count("user-%"), 1000, "everything written before it began");
    assert_eq!(count("during-%"), 0, "nothing written while it ran");
    let check: String = copied
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .unwrap();
    assert_eq!(check, "ok");
    let mode: String = copied
        .query_row("PRAGMA journal_mode", [], |r| r.get(0))
        .unwrap();
    assert_eq!(mode, "delete", "the copy is one self-contained file");
    let (pages, page_size): (i64, i64) = copied
        .query_row(
            "SELECT (SELECT page_count FROM pragma_page_count), (SELECT page_size FROM pragma_page_size)",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    let (pages, page_size) = (pages as u64, page_size as u64);
    assert_eq!((report.pages, report.bytes), (pages, pages * page_size));
}
