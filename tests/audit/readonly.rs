//! The audit only reads. It refuses, with exit status 2 and nothing created, a store
//! that is not there (a mistyped path or database name) and one of an earlier format,
//! which it never upgrades (`--repair` included); it reads a cleanly closed store without
//! writing its file, and a store a server has open without committing anything to it.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use mongodb::bson::{Document, doc};
use socialite::domain::FeedStrategy;

use super::cli::{audit, env_of};
use super::common::{
    Kind, fresh_name, kinds, mongo_base_uri, mongo_uri_with_database, start_binary,
};
use super::{config, world};

/// The store file's bytes and modification time.
fn snapshot(path: &Path) -> (Vec<u8>, SystemTime) {
    let bytes = std::fs::read(path).unwrap();
    (bytes, std::fs::metadata(path).unwrap().modified().unwrap())
}

fn beside(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}

/// Asserts that the store at `path` is as `before` found it, and that no write waits in
/// its WAL (a reader may leave an empty one beside it).
fn assert_unchanged(path: &Path, before: &(Vec<u8>, SystemTime), label: &str) {
    let after = snapshot(path);
    assert!(
        after.0 == before.0,
        "{label}: the store file's bytes changed"
    );
    assert_eq!(after.1, before.1, "{label}: the store file's mtime changed");
    let wal = beside(path, "-wal");
    if wal.exists() {
        assert_eq!(std::fs::metadata(&wal).unwrap().len(), 0, "{label}: WAL");
    }
}

/// The world of `tests/audit.rs` on a fresh embedded store, built in a runtime of its
/// own that is then shut down, so that every connection is closed: the store as a
/// server leaves it when it stops cleanly, its WAL checkpointed and removed.
fn closed_world(strategy: FeedStrategy) -> (socialite::config::Config, tempfile::TempDir) {
    let (config, dir) = config(Kind::Embedded, strategy);
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        world(&config).await;
    });
    drop(runtime);
    let wal = beside(&config.storage.path, "-wal");
    assert!(!wal.exists(), "every connection closed: {}", wal.display());
    (config, dir)
}

#[test]
fn a_missing_store_is_refused_with_status_2_and_nothing_is_created() {
    let dir = tempfile::tempdir().unwrap();
    for path in [
        dir.path().join("tpyo.db"),
        dir.path().join("no/such/dir/s.db"),
    ] {
        let env = [("SOCIALITE_STORAGE__PATH", path.clone().into_os_string())];
        for args in [&[][..], &["--repair"]] {
            let (code, out) = audit(&env, args);
            assert_eq!(code, 2, "{args:?}: {out}");
            assert!(out.contains("there is no store at"), "{args:?}: {out}");
            assert!(!out.contains("audit clean"), "{args:?}: {out}");
        }
    }
    let left: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert!(left.is_empty(), "created: {left:?}");
}

#[test]
fn a_store_of_an_earlier_format_is_refused_and_left_as_it_was() {
    let (config, _dir) = closed_world(FeedStrategy::Cache);
    let path = config.storage.path.clone();
    let env = env_of(&config);
    for format in [3, 0] {
        {
            let conn = rusqlite::Connection::open(&path).unwrap();
            conn.execute_batch(&format!("PRAGMA user_version = {format};"))
                .unwrap();
        }
        let before = snapshot(&path);
        for args in [&[][..], &["--repair"]] {
            let label = format!("format {format}, {args:?}");
            let (code, out) = audit(&env, args);
            assert_eq!(code, 2, "{label}: {out}");
            for said in [
                format!("is a store of format {format}"),
                // The current format, whichever it is (format bumps leave this test be).
                "this socialite audits format ".to_owned(),
                "socialite serve".to_owned(),
                "docs/operations-upgrade.md#upgrading-an-existing-store".to_owned(),
            ] {
                assert!(out.contains(&said), "{label}: {said:?} in {out}");
            }
            assert_unchanged(&path, &before, &label);
        }
    }
}

#[test]
fn a_cleanly_closed_store_is_audited_without_writing_it() {
    let (config, _dir) = closed_world(FeedStrategy::Cache);
    let path = config.storage.path.clone();
    let before = snapshot(&path);
    let (code, out) = audit(&env_of(&config), &["--wait", "5"]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("audit clean"), "{out}");
    assert_unchanged(&path, &before, "a clean audit");
}

#[test]
fn beside_a_running_server_the_audit_reads_and_commits_nothing() {
    let (config, _dir) = closed_world(FeedStrategy::Cache);
    let path = config.storage.path.clone();
    let mut env = env_of(&config);
    // No workers: the server then writes nothing on its own, so any commit is the audit's.
    env.push(("SOCIALITE_WORKERS__ENABLED", OsString::from("false")));
    let server_env: Vec<(&str, &std::ffi::OsStr)> =
        env.iter().map(|(k, v)| (*k, v.as_os_str())).collect();
    let (mut server, _base) = start_binary(&[], &server_env);
    assert!(
        beside(&path, "-wal").exists(),
        "the server has the store open"
    );
    let watcher = rusqlite::Connection::open(&path).unwrap();
    let version = || -> i64 {
        watcher
            .query_row("PRAGMA data_version", [], |r| r.get(0))
            .unwrap()
    };
    let before = version();
    let (code, out) = audit(&env, &["--wait", "5"]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("audit clean"), "{out}");
    assert!(
        out.lines()
            .any(|l| l.starts_with("counters") && l.contains(" 5 ")),
        "the server's users were read: {out}"
    );
    assert_eq!(version(), before, "a commit by another connection");
    server.kill().unwrap();
    server.wait().unwrap();
}

/// The MongoDB cases run only against a server.
fn mongo(test: &str) -> Option<String> {
    kinds(test)
        .contains(&Kind::Mongo)
        .then(|| mongo_base_uri().unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_mistyped_mongodb_database_is_refused_and_not_created() {
    let Some(base) = mongo("a_mistyped_mongodb_database_is_refused_and_not_created") else {
        return;
    };
    let name = fresh_name("tpyo");
    let env = vec![
        ("SOCIALITE_STORAGE__BACKEND", OsString::from("mongodb")),
        (
            "SOCIALITE_STORAGE__MONGODB_URI",
            mongo_uri_with_database(&base, &name).into(),
        ),
    ];
    for args in [&[][..], &["--repair"]] {
        let (code, out) = tokio::task::block_in_place(|| audit(&env, args));
        assert_eq!(code, 2, "{args:?}: {out}");
        assert!(out.contains("holds no socialite store"), "{args:?}: {out}");
    }
    // MongoDB lists no database without collections; the test stand-in may list one
    // it was merely asked about, so what counts is that it holds nothing.
    let client = mongodb::Client::with_uri_str(&base).await.unwrap();
    let created = client
        .database(&name)
        .list_collection_names()
        .await
        .unwrap();
    assert!(
        created.is_empty(),
        "the audit created {created:?} in {name}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_mongodb_store_is_audited_without_creating_an_index() {
    if mongo("a_mongodb_store_is_audited_without_creating_an_index").is_none() {
        return;
    }
    let (config, _dir) = config(Kind::Mongo, FeedStrategy::Cache);
    world(&config).await;
    let uri = config.storage.mongodb_uri.clone().unwrap();
    let client = mongodb::Client::with_uri_str(&uri).await.unwrap();
    let likes = client
        .default_database()
        .unwrap()
        .collection::<Document>("likes");
    let names = likes.list_index_names().await.unwrap();
    let by_user = names
        .iter()
        .find(|n| n.starts_with("_id.u"))
        .unwrap_or_else(|| panic!("the audit's index on likes: {names:?}"))
        .clone();
    likes.drop_index(&by_user).await.unwrap();
    let env = env_of(&config);
    let (code, out) = tokio::task::block_in_place(|| audit(&env, &["--wait", "5"]));
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("audit clean"), "{out}");
    let after = likes.list_index_names().await.unwrap();
    assert!(
        !after.contains(&by_user),
        "the audit created {by_user}: {after:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_mongodb_store_of_the_earlier_graph_layout_is_refused_and_not_migrated() {
    let Some(base) =
        mongo("a_mongodb_store_of_the_earlier_graph_layout_is_refused_and_not_migrated")
    else {
        return;
    };
    let name = fresh_name("layout");
    let uri = mongo_uri_with_database(&base, &name);
    let client = mongodb::Client::with_uri_str(&uri).await.unwrap();
    let db = client.default_database().unwrap();
    for user in ["ann", "bob"] {
        db.collection::<Document>("users")
            .insert_one(doc! { "_id": user, "display_name": user, "version": 0_i64 })
            .await
            .unwrap();
    }
    db.collection::<Document>("following")
        .insert_one(doc! { "_id": "ann", "following": ["bob"] })
        .await
        .unwrap();
    let env = vec![
        ("SOCIALITE_STORAGE__BACKEND", OsString::from("mongodb")),
        ("SOCIALITE_STORAGE__MONGODB_URI", uri.into()),
    ];
    for args in [&[][..], &["--repair"]] {
        let (code, out) = tokio::task::block_in_place(|| audit(&env, args));
        assert_eq!(code, 2, "{args:?}: {out}");
        assert!(out.contains("earlier layout"), "{args:?}: {out}");
        assert!(out.contains("socialite serve"), "{args:?}: {out}");
    }
    let mut collections = db.list_collection_names().await.unwrap();
    collections.sort();
    assert_eq!(collections, ["following", "users"], "nothing created");
}
