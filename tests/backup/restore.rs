//! Restores: refused onto a store a process holds, onto one whose lease is still held,
//! and from a damaged, foreign or newer copy, each with the store left as it was; done
//! onto a stopped store and onto one whose server was killed with `kill -9`, with the
//! copy's positions and no stale lease holder.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use reqwest::StatusCode;
use socialite::domain::now_ms;

use super::common::Api;
use super::{
    LEASE_TTL_MS, assert_derived_consistent, backup, caught_up, cli, leases, serve, serve_with,
    stop_server,
};

/// Every file of `dir` with its bytes.
pub fn files(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_file())
        .map(|p| (p.clone(), std::fs::read(&p).unwrap()))
        .collect()
}

/// `dir` holds exactly the files named.
pub fn assert_only(dir: &Path, names: &[&str]) {
    let mut found: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    found.sort();
    let mut expected: Vec<String> = names.iter().map(|n| n.to_string()).collect();
    expected.sort();
    assert_eq!(found, expected, "the files in {}", dir.display());
}

pub fn restore(db: &Path, from: &Path) -> super::Run {
    cli(db, &["restore", "--from", from.to_str().unwrap()])
}

/// Writes a lease row straight into a stopped store: what a server that does not take
/// the lock file leaves, live or dead.
fn set_lease(db: &Path, holder: &str, expires_at: i64) {
    rusqlite::Connection::open(db)
        .unwrap()
        .execute(
            "INSERT INTO leases (name, holder, version, expires_at) VALUES ('activity', ?1, 1, ?2)
             ON CONFLICT (name) DO UPDATE SET holder = ?1, expires_at = ?2",
            rusqlite::params![holder, expires_at],
        )
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn restore_refuses_a_live_store_a_held_lease_and_a_damaged_or_foreign_copy() {
    let dir = tempfile::tempdir().unwrap();
    let store_dir = dir.path().join("store");
    std::fs::create_dir(&store_dir).unwrap();
    let db = store_dir.join("socialite.db");
    let good = dir.path().join("good.db");
    // Without workers the server holds no lease: only the lock file tells it is there.
    let (mut server, base) = serve_with(&db, &[("SOCIALITE_WORKERS__ENABLED", "false".as_ref())]);
    let api = Api::new(reqwest::Client::new(), &base);
    api.user("ann").await;
    let post = api.say("ann", "kept").await;
    backup(&db, &good);

    // A running server holds the store.
    let run = restore(&db, &good);
    assert!(!run.ok);
    assert!(
        run.stderr.contains("is in use") && run.stderr.contains("socialite.db-lock"),
        "{}",
        run.stderr
    );
    assert_eq!(
        api.get(&format!("/v1/posts/{post}")).await.0,
        StatusCode::OK
    );
    api.say("ann", "still served").await;
    assert!(
        std::fs::read_dir(&store_dir).unwrap().all(|e| !e
            .unwrap()
            .file_name()
            .to_string_lossy()
            .contains("restore")),
        "no copy was started"
    );
    stop_server(&mut server);

    // Copies that must be refused, and what the refusal says.
    let bytes = std::fs::read(&good).unwrap();
    let page = 4096;
    let truncated = dir.path().join("truncated.db");
    std::fs::write(&truncated, &bytes[..bytes.len() / 2]).unwrap();
    let garbled = dir.path().join("garbled.db");
    let root: i64 = rusqlite::Connection::open(&good)
        .unwrap()
        .query_row(
            "SELECT rootpage FROM sqlite_schema WHERE name = 'posts'",
            [],
            |row| row.get(0),
        )
        .unwrap();
    let mut damaged = bytes.clone();
    let root = root as usize;
    damaged[(root - 1) * page..root * page].fill(0xA5);
    std::fs::write(&garbled, &damaged).unwrap();
    let text = dir.path().join("notes.txt");
    std::fs::write(&text, "not a database\n".repeat(1000)).unwrap();
    let foreign = dir.path().join("foreign.db");
    rusqlite::Connection::open(&foreign)
        .unwrap()
        .execute_batch("CREATE TABLE users (id TEXT); INSERT INTO users VALUES ('x');")
        .unwrap();
    let newer = dir.path().join("newer.db");
    std::fs::copy(&good, &newer).unwrap();
    rusqlite::Connection::open(&newer)
        .unwrap()
        .execute_batch("PRAGMA user_version = 99;")
        .unwrap();
    let refused = [
        (&truncated, "damaged"),
        (&garbled, "damaged"),
        (&text, "not a readable SQLite database"),
        (&foreign, "not a socialite store"),
        (&newer, "written by a newer socialite"),
    ];
    let untouched = files(&store_dir);
    for (copy, why) in refused {
        let run = restore(&db, copy);
        assert!(!run.ok, "{} must be refused", copy.display());
        let said = format!("refusing {}: it ", copy.display());
        assert!(
            run.stderr.contains(&said) && run.stderr.contains(why),
            "{}: {why} in {}",
            copy.display(),
            run.stderr
        );
        let now = files(&store_dir);
        let changed: Vec<_> = now
            .keys()
            .chain(untouched.keys())
            .filter(|f| now.get(*f) != untouched.get(*f))
            .collect();
        assert!(
            changed.is_empty(),
            "{}: the store is untouched: {changed:?}",
            copy.display()
        );
    }

    // A lease held and unexpired: a server that does not take the lock file may be
    // running. Once the lease has expired, its holder is gone, and the restore goes on.
    set_lease(&db, "elsewhere-1", now_ms() + 3_600_000);
    let untouched = files(&store_dir);
    let run = restore(&db, &good);
    assert!(!run.ok);
    assert!(
        run.stderr
            .contains("worker lease activity is held by elsewhere-1"),
        "{}",
        run.stderr
    );
    assert!(files(&store_dir) == untouched, "the store is untouched");
    set_lease(&db, "elsewhere-1", now_ms() - 1);
    let run = restore(&db, &good);
    assert!(run.ok, "an expired lease is no live server: {}", run.stderr);
    let posts: i64 = rusqlite::Connection::open(&db)
        .unwrap()
        .query_row("SELECT count(*) FROM posts", [], |row| row.get(0))
        .unwrap();
    assert_eq!(
        posts, 1,
        "the copy's one post, not the two of the replaced store"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn restore_onto_a_stopped_store_takes_the_copys_data_and_positions() {
    let dir = tempfile::tempdir().unwrap();
    let (db, copy) = (dir.path().join("socialite.db"), dir.path().join("copy.db"));
    let (mut server, base) = serve(&db);
    let api = Api::new(reqwest::Client::new(), &base);
    for user in ["ann", "bob"] {
        api.user(user).await;
    }
    api.put("/v1/users/bob/following/ann").await;
    let kept = api.say("ann", "in the copy").await;
    let head = backup(&db, &copy);
    let in_copy = leases(&copy);
    let gone = api.say("ann", "after the copy").await;
    api.put("/v1/users/ann/following/bob").await;
    caught_up(&api, head + 2).await;
    stop_server(&mut server);
    let replaced = leases(&db);
    assert_ne!(
        positions(&replaced),
        positions(&in_copy),
        "the store moved on after the copy"
    );

    let run = restore(&db, &copy);
    assert!(run.ok, "{}", run.stderr);
    assert!(run.stdout.contains("restored"), "{}", run.stdout);
    let restored = leases(&db);
    assert_eq!(
        positions(&restored),
        positions(&in_copy),
        "the copy's positions"
    );
    assert!(
        restored.iter().all(|(_, holder, _)| holder.is_none()),
        "{restored:?}"
    );
    assert!(
        in_copy.iter().any(|(_, holder, _)| holder.is_some()),
        "{in_copy:?}"
    );

    let (mut server, base) = serve(&db);
    let api = api.at(&base);
    caught_up(&api, head).await;
    assert_eq!(
        api.get(&format!("/v1/posts/{kept}")).await.0,
        StatusCode::OK
    );
    assert_eq!(
        api.get(&format!("/v1/posts/{gone}")).await.0,
        StatusCode::NOT_FOUND
    );
    assert_derived_consistent(&db, &base, &api, &["ann".into(), "bob".into()]).await;
    stop_server(&mut server);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn restore_onto_a_store_whose_server_was_killed_once_its_leases_expired() {
    let dir = tempfile::tempdir().unwrap();
    let (db, copy) = (dir.path().join("socialite.db"), dir.path().join("copy.db"));
    let (mut server, base) = serve(&db);
    let api = Api::new(reqwest::Client::new(), &base);
    for user in ["ann", "bob"] {
        api.user(user).await;
    }
    api.put("/v1/users/bob/following/ann").await;
    let kept = api.say("ann", "in the copy").await;
    let head = backup(&db, &copy);
    // Written after the copy, and still in the WAL when the server dies: a restore that
    // left the old WAL beside the new file would replay it into the copy.
    let gone = api.say("ann", "after the copy").await;
    server.kill().unwrap();
    server.wait().unwrap();
    let killed_at = now_ms();
    let wal = dir.path().join("socialite.db-wal");
    assert!(
        wal.metadata().is_ok_and(|m| m.len() > 0),
        "the killed server left its WAL"
    );

    // Its leases were refreshed before it died, so they expire within a lease period.
    let expired_by = killed_at + LEASE_TTL_MS;
    while now_ms() <= expired_by {
        std::thread::sleep(std::time::Duration::from_millis(
            (expired_by + 1 - now_ms()) as u64,
        ));
    }
    let run = restore(&db, &copy);
    assert!(run.ok, "{}", run.stderr);
    assert!(!wal.exists(), "the old WAL is gone");

    let (mut server, base) = serve(&db);
    let api = api.at(&base);
    caught_up(&api, head).await;
    assert_eq!(
        api.get(&format!("/v1/posts/{kept}")).await.0,
        StatusCode::OK
    );
    assert_eq!(
        api.get(&format!("/v1/posts/{gone}")).await.0,
        StatusCode::NOT_FOUND
    );
    assert_derived_consistent(&db, &base, &api, &["ann".into(), "bob".into()]).await;
    stop_server(&mut server);
    let check: String = rusqlite::Connection::open(&db)
        .unwrap()
        .query_row("PRAGMA integrity_check", [], |row| row.get(0))
        .unwrap();
    assert_eq!(check, "ok");
}

fn positions(leases: &[(String, Option<String>, Option<String>)]) -> Vec<(String, Option<String>)> {
    leases
        .iter()
        .map(|(name, _, position)| (name.clone(), position.clone()))
        .collect()
}
