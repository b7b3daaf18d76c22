//! A restore checks the copy against itself: its length against its header, its content
//! against the manifest its backup wrote. A copy cut short by a byte, by 200 bytes or by
//! a page, or with one byte of a post's text changed, is refused with the store left as
//! it was; a copy without a manifest only when the operator says so, with a warning.

use reqwest::StatusCode;

use super::common::Api;
use super::restore::{files, restore};
use super::{backup, cli, serve, stop_server};

/// Text of the post whose bytes are changed in a copy: found once in the posts table.
const CHECKED: &str = "a post whose text is checked byte for byte";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn restore_refuses_a_copy_cut_short_or_changed_and_one_without_manifest_unless_told() {
    let dir = tempfile::tempdir().unwrap();
    let store_dir = dir.path().join("store");
    std::fs::create_dir(&store_dir).unwrap();
    let db = store_dir.join("socialite.db");
    let good = dir.path().join("good.db");
    let (mut server, base) = serve(&db);
    let api = Api::new(reqwest::Client::new(), &base);
    api.user("ann").await;
    let kept = api.say("ann", CHECKED).await;
    backup(&db, &good);
    let gone = api.say("ann", "after the backup").await;
    stop_server(&mut server);

    let bytes = std::fs::read(&good).unwrap();
    let page = match u16::from_be_bytes([bytes[16], bytes[17]]) {
        1 => 65536,
        size => size as usize,
    };
    let untouched = files(&store_dir);
    let refused = |copy: &std::path::Path, why: &[&str]| {
        let run = restore(&db, copy);
        assert!(
            !run.ok,
            "{} must be refused: {}",
            copy.display(),
            run.stdout
        );
        let said = format!("refusing {}: it ", copy.display());
        assert!(run.stderr.contains(&said), "{}", run.stderr);
        for needle in why {
            assert!(run.stderr.contains(needle), "{needle} in {}", run.stderr);
        }
        assert!(
            files(&store_dir) == untouched,
            "{}: the store is untouched",
            copy.display()
        );
        run.stderr
    };

    // Cut short: SQLite reads the missing bytes as zeros, and its integrity check may
    // pass; the header's page count does not.
    for cut in [1, 200, page] {
        let short = dir.path().join(format!("short-{cut}.db"));
        std::fs::write(&short, &bytes[..bytes.len() - cut]).unwrap();
        let expected = format!(
            "{} bytes long and its header says {}",
            bytes.len() - cut,
            bytes.len()
        );
        refused(&short, &["damaged", &expected, "cut short"]);
    }
    let long = dir.path().join("long.db");
    std::fs::write(&long, [&bytes[..], b"x"].concat()).unwrap();
    refused(&long, &["damaged", "bytes past its last page"]);

    // One byte of the post's text, in the posts table: a structure SQLite finds sound.
    let root: usize = rusqlite::Connection::open(&good)
        .unwrap()
        .query_row(
            "SELECT rootpage FROM sqlite_schema WHERE name = 'posts'",
            [],
            |row| row.get::<_, i64>(0),
        )
        .unwrap() as usize;
    let posts_page = (root - 1) * page..root * page;
    let at = bytes[posts_page.clone()]
        .windows(CHECKED.len())
        .position(|w| w == CHECKED.as_bytes())
        .expect("the post's text is in the posts table's page")
        + posts_page.start;
    let mut changed = bytes.clone();
    changed[at + CHECKED.find("byte").unwrap()] = b'B';
    let flipped = dir.path().join("flipped.db");
    std::fs::write(&flipped, &changed).unwrap();
    let check: String = rusqlite::Connection::open(&flipped)
        .unwrap()
        .query_row("PRAGMA integrity_check", [], |row| row.get(0))
        .unwrap();
    assert_eq!(check, "ok", "SQLite's integrity check cannot see it");
    let said = refused(&flipped, &["damaged", "manifest", "posts (the same"]);
    assert!(!said.contains("users ("), "only the posts differ: {said}");

    // No manifest: an older socialite's backup, refused unless allowed.
    let legacy = dir.path().join("legacy.db");
    std::fs::copy(&good, &legacy).unwrap();
    rusqlite::Connection::open(&legacy)
        .unwrap()
        .execute_batch("DROP TABLE backup_manifest;")
        .unwrap();
    refused(&legacy, &["no manifest", "--allow-no-manifest"]);
    let run = cli(
        &db,
        &[
            "restore",
            "--from",
            legacy.to_str().unwrap(),
            "--allow-no-manifest",
        ],
    );
    assert!(run.ok, "{}", run.stderr);
    assert!(
        run.stderr.contains("warning:") && run.stderr.contains("no manifest"),
        "{}",
        run.stderr
    );
    assert!(
        run.stdout.contains("content NOT verified"),
        "{}",
        run.stdout
    );

    // The copy as written restores, verified, and leaves no manifest in the store.
    let run = restore(&db, &good);
    assert!(run.ok, "{}", run.stderr);
    assert!(
        run.stdout
            .contains("content verified against the backup's manifest"),
        "{}",
        run.stdout
    );
    assert!(!run.stderr.contains("warning"), "{}", run.stderr);
    let manifests: i64 = rusqlite::Connection::open(&db)
        .unwrap()
        .query_row(
            "SELECT count(*) FROM sqlite_schema WHERE name = 'backup_manifest'",
            [],
            |row| row.get(0),
        )
        .unwrap();
    assert_eq!(manifests, 0, "the restored store keeps no manifest");
    let (mut server, base) = serve(&db);
    let api = api.at(&base);
    let (status, post) = api.get(&format!("/v1/posts/{kept}")).await;
    assert_eq!(
        (status, post["text"].as_str()),
        (StatusCode::OK, Some(CHECKED))
    );
    assert_eq!(
        api.get(&format!("/v1/posts/{gone}")).await.0,
        StatusCode::NOT_FOUND
    );
    assert_eq!(api.get("/v1/events").await.0, StatusCode::OK);
    stop_server(&mut server);
}

/// A store that holds a time from before the time range was enforced (a far-future
/// user written by an earlier import) backs up, manifest and all, but does not restore:
/// restore holds every time to the range, as import and the API do.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn restore_refuses_a_copy_holding_a_time_the_service_does_not_keep() {
    let dir = tempfile::tempdir().unwrap();
    let store_dir = dir.path().join("store");
    std::fs::create_dir(&store_dir).unwrap();
    let db = store_dir.join("socialite.db");
    let (mut server, base) = serve(&db);
    let api = Api::new(reqwest::Client::new(), &base);
    api.user("ann").await;
    stop_server(&mut server);
    for (what, sql) in [
        (
            "users",
            "UPDATE users SET created_at = 253402300800000 WHERE id = 'ann'",
        ),
        (
            "posts",
            "INSERT INTO posts (id, author, text) VALUES (x'f00000000000000000000001', 'ann', 'x')",
        ),
    ] {
        let copy = dir.path().join(format!("{what}.db"));
        let store = dir.path().join(format!("{what}-store.db"));
        std::fs::copy(&db, &store).unwrap();
        rusqlite::Connection::open(&store)
            .unwrap()
            .execute_batch(sql)
            .unwrap();
        backup(&store, &copy);
        let run = restore(&db, &copy);
        assert!(!run.ok, "{what}: restored: {}", run.stdout);
        assert!(
            run.stderr.contains(&format!("its {what} hold")),
            "{what}: {}",
            run.stderr
        );
    }
}
