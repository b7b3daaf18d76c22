//! Shared test harness: fresh stores and servers on every backend under test.
//!
//! The embedded backend always runs. MongoDB runs when `SOCIALITE_TEST_MONGODB_URI`
//! points at a server (the README's test command starts the stand-in); otherwise each
//! test says plainly that it skipped MongoDB.
//!
//! This file holds the backends, fresh stores and configurations, and which backends
//! can keep an event log; servers (in process or the real binary) are in `server.rs`,
//! the JSON client and the credentials it learns in `api.rs`, and port decorators that
//! inject faults in `faults.rs`, a store with the file or database behind it in `raw.rs`.

#![allow(dead_code)]

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use socialite::config::{Backend, Config};
use socialite::domain::ActivityType;
use socialite::store::Store;
use socialite::store::embedded::{EmbeddedStore, Synchronous};

mod api;
pub mod faults;
pub mod raw;
mod server;

// Each test binary uses part of the harness (as `dead_code` above allows for items).
#[allow(unused_imports)]
pub use api::{Api, As, Credentials};
#[allow(unused_imports)]
pub use server::{TestServer, start_binary, try_start_binary};

/// The service over `store` with timelines built as `feed` says, default limits.
pub fn social(store: Store, feed: &socialite::feed::FeedSettings) -> socialite::service::Social {
    socialite::service::Social::new(
        store,
        feed,
        socialite::domain::ActivityLimits::default(),
        Default::default(),
    )
}

/// Creates user `id` (display name `id`) through the port.
pub async fn create_user(store: &Store, id: &str) {
    store
        .users
        .create_user(&socialite::domain::NewUser {
            id: id.into(),
            display_name: id.into(),
            created_at_ms: socialite::domain::now_ms(),
        })
        .await
        .unwrap();
}

pub const MONGO_ENV: &str = "SOCIALITE_TEST_MONGODB_URI";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Embedded,
    Mongo,
}

/// The backends this run tests, announcing a skipped MongoDB once per call site.
pub fn kinds(test: &str) -> Vec<Kind> {
    if mongo_base_uri().is_some() {
        vec![Kind::Embedded, Kind::Mongo]
    } else {
        eprintln!(
            "{test}: MongoDB adapter SKIPPED: {MONGO_ENV} is not set (run the README's test command to start the stand-in server)"
        );
        vec![Kind::Embedded]
    }
}

pub fn mongo_base_uri() -> Option<String> {
    std::env::var(MONGO_ENV)
        .ok()
        .filter(|uri| !uri.trim().is_empty())
}

/// A fresh database on a real MongoDB (one with a query planner and a profiler) and its
/// URI; `None` after printing `SKIPPED: needs a real MongoDB (<checks>: why)` past the
/// test harness's capture, so that the run's log shows it, when `MONGO_ENV` is unset or
/// names the mongo-java-server stand-in (which answers `buildInfo` without the server's
/// git revision).
pub async fn real_mongodb(prefix: &str, checks: &str) -> Option<(mongodb::Database, String)> {
    let name = fresh_name(prefix);
    let why = match mongo_base_uri() {
        None => format!("{MONGO_ENV} is not set"),
        Some(base) => {
            let uri = mongo_uri_with_database(&base, &name);
            let client = mongodb::Client::with_uri_str(&uri).await.unwrap();
            let db = client.database(&name);
            let info = db
                .run_command(mongodb::bson::doc! { "buildInfo": 1 })
                .await
                .unwrap();
            if info.contains_key("gitVersion") {
                return Some((db, uri));
            }
            "the mongo-java-server stand-in has no query planner to explain".into()
        }
    };
    use std::io::Write;
    let line = format!("SKIPPED: needs a real MongoDB ({checks}: {why})\n");
    std::io::stderr().write_all(line.as_bytes()).unwrap();
    None
}

/// A unique database name per test, so tests never share state.
pub fn fresh_name(prefix: &str) -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .subsec_nanos();
    format!(
        "t_{prefix}_{}_{}_{nanos}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

/// `base` with its database path replaced by `database`.
pub fn mongo_uri_with_database(base: &str, database: &str) -> String {
    let (scheme, rest) = base.split_once("://").expect("a mongodb:// URI");
    let (hosts_and_path, query) = match rest.split_once('?') {
        Some((head, query)) => (head, Some(query)),
        None => (rest, None),
    };
    let hosts = hosts_and_path.split('/').next().unwrap();
    match query {
        Some(query) => format!("{scheme}://{hosts}/{database}?{query}"),
        None => format!("{scheme}://{hosts}/{database}"),
    }
}

/// A fresh store; keep the guard alive as long as the store.
pub struct TestStore {
    pub store: Store,
    pub kind: Kind,
    /// The MongoDB database's URI, for tests that write what no port would.
    pub mongo_uri: Option<String>,
    _dir: Option<tempfile::TempDir>,
}

impl TestStore {
    /// The embedded database file, for tests that write what no port would.
    pub fn embedded_file(&self) -> Option<PathBuf> {
        self._dir.as_ref().map(|dir| dir.path().join("t.db"))
    }
}

pub async fn fresh_store(kind: Kind) -> TestStore {
    match kind {
        Kind::Embedded => {
            let dir = tempfile::tempdir().unwrap();
            let store = Store::new(Arc::new(
                EmbeddedStore::open(&dir.path().join("t.db"), Synchronous::Normal).unwrap(),
            ));
            TestStore {
                store,
                kind,
                mongo_uri: None,
                _dir: Some(dir),
            }
        }
        Kind::Mongo => {
            let base = mongo_base_uri().expect("MongoDB URI");
            let uri = mongo_uri_with_database(&base, &fresh_name("store"));
            let store = socialite::store::mongo::connect(&uri)
                .await
                .expect("connecting to MongoDB");
            TestStore {
                store,
                kind,
                mongo_uri: Some(uri),
                _dir: None,
            }
        }
    }
}

/// A configuration on a fresh database, listening on a free port.
pub struct TestConfig {
    pub config: Config,
    pub dir: tempfile::TempDir,
}

pub fn fresh_config(kind: Kind) -> TestConfig {
    let dir = tempfile::tempdir().unwrap();
    let mut config = Config::default();
    config.server.listen = "127.0.0.1:0".parse().unwrap();
    config.storage.path = dir.path().join("socialite.db");
    if kind == Kind::Mongo {
        config.storage.backend = Backend::Mongodb;
        config.storage.mongodb_uri = Some(mongo_uri_with_database(
            &mongo_base_uri().expect("MongoDB URI"),
            &fresh_name("http"),
        ));
    }
    TestConfig { config, dir }
}

/// The line a test prints when the event log cannot run on the MongoDB it was given.
pub const EVENT_LOG_SKIPPED: &str =
    "SKIPPED: needs a real MongoDB (capped collections, tailable cursors)";

/// The backends whose store can keep an event log: embedded always, MongoDB only when
/// the server has capped collections (not the stand-in), otherwise announced as skipped.
pub async fn event_log_kinds(test: &str) -> Vec<Kind> {
    let mut found = vec![Kind::Embedded];
    for kind in kinds(test) {
        if kind != Kind::Mongo {
            continue;
        }
        let t = fresh_store(kind).await;
        let bounds = socialite::store::LogBounds {
            max_count: 1000,
            max_bytes: 1 << 20,
        };
        match t.store.events.prepare_log(bounds).await {
            Ok(()) => found.push(kind),
            Err(_) => {
                use std::io::Write;
                // Written past the test harness's capture, so that the run's log shows it.
                let line = format!("{EVENT_LOG_SKIPPED}\n");
                std::io::stderr().write_all(line.as_bytes()).unwrap();
            }
        }
    }
    found
}

/// Rows of the embedded store's pending retraction marks: (deletes, unfollows). The
/// store serves a cache unchecked only while none concerns its owner.
pub fn pending_marks(file: &std::path::Path) -> (i64, i64) {
    let conn = rusqlite::Connection::open(file).unwrap();
    let count = |table: &str| -> i64 {
        conn.query_row(&format!("SELECT count(*) FROM {table}"), [], |row| {
            row.get(0)
        })
        .unwrap()
    };
    (count("pending_deletes"), count("pending_unfollows"))
}

/// Runs `worker` over the whole change feed, as the server's runner would, until it has
/// nothing left to apply.
pub async fn drain(store: &Store, worker: impl socialite::workers::Worker + 'static) {
    use socialite::workers::{Runner, RunnerSettings, Step, SystemClock};
    let mut runner = Runner::new(
        Arc::new(worker),
        store.leases.clone(),
        store.change_feed.clone(),
        Arc::new(SystemClock),
        "test",
        RunnerSettings {
            lease_ttl_ms: 60_000,
            batch_size: 100,
            refresh_ms: 1_000,
        },
    );
    loop {
        match runner.step().await.unwrap() {
            Step::Applied(_) | Step::Rebuilt => {}
            Step::Idle => return,
            other => panic!("unexpected step {other:?}"),
        }
    }
}

/// Each of `users`' activity logs as (user, type, reference), sorted, each checked
/// newest first by time.
pub async fn activity_logged(store: &Store, users: &[&str]) -> Vec<(String, ActivityType, String)> {
    let mut all = Vec::new();
    for user in users {
        let page = store.activity.activities(user, 0, 1000).await.unwrap();
        let times: Vec<i64> = page.items.iter().map(|a| a.ts_ms).collect();
        assert!(
            times.windows(2).all(|w| w[0] >= w[1]),
            "{user}: newest first"
        );
        for a in page.items {
            all.push((user.to_string(), a.kind, a.reference));
        }
    }
    all.sort();
    all
}

/// What `users`' activity logs must hold when computed from scratch: (user, type,
/// reference), sorted.
pub async fn activity_from_scratch(
    store: &Store,
    users: &[&str],
) -> Vec<(String, ActivityType, String)> {
    let mut all = Vec::new();
    for user in users {
        for post in store
            .content
            .posts_by_author(user, None, 1000)
            .await
            .unwrap()
        {
            all.push((user.to_string(), ActivityType::Post, post.id.to_string()));
        }
        for followee in store.graph.following(user, None, 1000).await.unwrap() {
            all.push((user.to_string(), ActivityType::Follow, followee));
        }
    }
    all.sort();
    all
}
