//! The bulk loader (`socialite import`, `socialite seed`), on both backends: a data set
//! imported in bulk is observably the data set written through the API, once that
//! server's workers are idle: every profile, every home timeline walked to its end,
//! every activity log, tag counts and trends. Re-runs, interrupted loads, malformed and
//! truncated files, and a live server beside the import are in `bulk/failures.rs`; the
//! seeder's data set in `bulk/seed.rs`; serve and load excluding each other in
//! `bulk/guard.rs`; the time range, post ids and repeated keys in `bulk/times.rs`;
//! blocks, mutes, replies and the derived notifications in `bulk/social.rs`; reposts in
//! `bulk/reposts.rs`; imported users found by their name words in `bulk/names.rs`.

mod common;

#[path = "bulk/failures.rs"]
mod failures;
#[path = "bulk/guard.rs"]
mod guard;
#[path = "bulk/names.rs"]
mod names;
#[path = "bulk/reposts.rs"]
mod reposts;
#[path = "bulk/seed.rs"]
mod seed;
#[path = "bulk/social.rs"]
mod social;
#[path = "bulk/times.rs"]
mod times;

use std::path::{Path, PathBuf};
use std::time::Duration;

use common::{Api, Kind, TestConfig, TestServer, fresh_config, kinds};
use reqwest::StatusCode;
use serde_json::{Value, json};
use socialite::config::AuthMode;
use socialite::domain::FeedStrategy;

const USERS: [(&str, &str); 6] = [
    ("ann", "Ann"),
    ("bob", "Bob B"),
    ("cat", "Cat"),
    ("dan", "Dan"),
    ("eve", "Eve"),
    ("fay", "Fay"),
];
/// Everyone follows ann; a few more edges.
const FOLLOWS: [(&str, &str); 9] = [
    ("bob", "ann"),
    ("cat", "ann"),
    ("dan", "ann"),
    ("eve", "ann"),
    ("fay", "ann"),
    ("ann", "bob"),
    ("cat", "bob"),
    ("dan", "cat"),
    ("eve", "dan"),
];

/// A configuration without authentication (an import issues no tokens), small enough
/// bounds that pages, buckets, timed parts and activity pages all fill up.
pub fn config(kind: Kind, strategy: FeedStrategy) -> TestConfig {
    let mut test = fresh_config(kind);
    let config = &mut test.config;
    config.auth.mode = AuthMode::None;
    config.feed.strategy = strategy;
    config.feed.cache_size = 3;
    config.feed.bucket_size = 2;
    config.feed.timed_bucket_max_entries = 3;
    config.feed.inline_fanout_max = 2;
    // `hybrid`: authors with more than 2 followers are celebrities, merged at read.
    config.feed.hybrid_threshold = 2;
    config.activity.primary_limit = 2;
    config.activity.page_size = 2;
    test
}

fn ms(rfc3339: &Value) -> i64 {
    let time = humantime::parse_rfc3339(rfc3339.as_str().unwrap()).unwrap();
    time.duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

/// Writes the data set through the API, one request at a time with a pause between, so
/// that each write has its own millisecond: the order by time is then the order of the
/// writes, which is what an import (knowing times, not the order of a feed) can rebuild.
pub async fn write_through_api(api: &Api) {
    let pause = || tokio::time::sleep(Duration::from_millis(3));
    for (id, name) in USERS {
        let (status, body) = api
            .post("/v1/users", json!({ "id": id, "display_name": name }))
            .await;
        assert_eq!(status, StatusCode::CREATED, "{body}");
        pause().await;
    }
    let mut posts = Vec::new();
    for (round, (follower, followee)) in FOLLOWS.iter().enumerate() {
        let (status, _) = api
            .put(&format!("/v1/users/{follower}/following/{followee}"))
            .await;
        assert_eq!(status, StatusCode::NO_CONTENT);
        pause().await;
        let (author, _) = USERS[round % USERS.len()];
        let text = match round % 3 {
            0 => format!("post {round} about #Rust"),
            1 => format!("post {round} on #feeds and #rust"),
            _ => format!("post {round}"),
        };
        posts.push(api.say(author, &text).await);
        pause().await;
    }
    for (round, (user, _)) in USERS.iter().enumerate() {
        let post = &posts[(round * 2) % posts.len()];
        let (status, _) = api.put(&format!("/v1/users/{user}/likes/{post}")).await;
        assert_eq!(status, StatusCode::NO_CONTENT);
        pause().await;
        posts.push(api.say(user, &format!("late post by {user} #Late")).await);
        pause().await;
    }
}

/// The JSON Lines files of what the server at `api` holds, written into `dir`.
pub async fn export(api: &Api, dir: &Path) -> [PathBuf; 4] {
    let mut files = [String::new(), String::new(), String::new(), String::new()];
    for (id, _) in USERS {
        let (_, user) = api.get(&format!("/v1/users/{id}")).await;
        let line = json!({
            "id": id, "display_name": user["display_name"], "created_at": ms(&user["created_at"]),
        });
        files[0] += &format!("{line}\n");
        let (_, posts) = api.get(&format!("/v1/users/{id}/posts?limit=100")).await;
        for post in posts["items"].as_array().unwrap() {
            let line = json!({ "id": post["id"], "author": id, "text": post["text"] });
            files[2] += &format!("{line}\n");
        }
        let (_, log) = api.get(&format!("/v1/users/{id}/activity?limit=100")).await;
        for item in log["items"].as_array().unwrap() {
            let at = ms(&item["ts"]);
            match item["type"].as_str().unwrap() {
                "follow" => {
                    let line = json!({ "follower": id, "followee": item["ref"], "created_at": at });
                    files[1] += &format!("{line}\n");
                }
                "like" => {
                    let line = json!({ "user": id, "post": item["ref"], "created_at": at });
                    files[3] += &format!("{line}\n");
                }
                _ => {}
            }
        }
    }
    let names = ["users.jsonl", "follows.jsonl", "posts.jsonl", "likes.jsonl"];
    let paths = names.map(|name| dir.join(name));
    for (path, text) in paths.iter().zip(&files) {
        std::fs::write(path, text).unwrap();
    }
    paths
}

pub fn files(paths: &[PathBuf; 4]) -> socialite::bulk::import::ImportFiles {
    socialite::bulk::import::ImportFiles {
        users: Some(paths[0].clone()),
        follows: Some(paths[1].clone()),
        posts: Some(paths[2].clone()),
        likes: Some(paths[3].clone()),
        ..Default::default()
    }
}

/// Imports `paths` into the store `test` configures, in this process.
pub async fn import(test: &TestConfig, paths: &[PathBuf; 4]) -> anyhow::Result<()> {
    let store = socialite::app::open_store(&test.config).await?;
    let settings = socialite::bulk::derive_settings(&test.config);
    socialite::bulk::import::run(store, settings, &files(paths)).await?;
    Ok(())
}

/// What a client can see of every user: the profile, the home timeline walked to its
/// end two items a page, the whole activity log; and the tag counts and trends.
pub async fn observe(api: &Api) -> Vec<(String, Value)> {
    let mut seen = Vec::new();
    for (id, _) in USERS {
        seen.push((
            format!("{id} profile"),
            api.get(&format!("/v1/users/{id}")).await.1,
        ));
        let items = api
            .walk(&format!("/v1/users/{id}/timeline?limit=2"), "before")
            .await;
        seen.push((format!("{id} timeline"), Value::Array(items)));
        let log = api
            .get(&format!("/v1/users/{id}/activity?limit=100"))
            .await
            .1;
        seen.push((format!("{id} activity"), log));
    }
    for path in [
        "/v1/tags/rust",
        "/v1/tags/feeds",
        "/v1/tags/late",
        "/v1/trends?window=24h",
    ] {
        let (status, body) = api.get(path).await;
        seen.push((
            path.to_owned(),
            json!({ "status": status.as_u16(), "body": body }),
        ));
    }
    seen
}

/// Equal, but for activity times: the API's come from its change feed, the import's
/// from the sources. A post's is then its id's time, a moment before its change. The
/// MongoDB stand-in reports change times to the second only (no `wallTime`), so there a
/// time may be up to a second off either way, and entries within one second may be
/// logged in another order: each log is compared as a set, its order checked apart.
pub fn assert_same(
    kind: Kind,
    through_api: &[(String, Value)],
    imported: &[(String, Value)],
    label: &str,
) {
    assert_eq!(through_api.len(), imported.len(), "{label}");
    for ((what, want), (_, got)) in through_api.iter().zip(imported) {
        if !what.ends_with("activity") {
            assert_eq!(want, got, "{label}: {what}");
            continue;
        }
        assert_eq!(want["total"], got["total"], "{label}: {what}");
        let mut want = want["items"].as_array().unwrap().clone();
        let mut got = got["items"].as_array().unwrap().clone();
        assert_eq!(want.len(), got.len(), "{label}: {what}");
        let times: Vec<i64> = got.iter().map(|item| ms(&item["ts"])).collect();
        assert!(
            times.windows(2).all(|w| w[0] >= w[1]),
            "{label}: {what}: newest first"
        );
        let seqs: Vec<u64> = got
            .iter()
            .map(|item| item["seq"].as_u64().unwrap())
            .collect();
        assert!(
            seqs.iter().rev().copied().eq(0..got.len() as u64),
            "{label}: {what}"
        );
        if kind == Kind::Mongo {
            let key = |item: &Value| (item["type"].to_string(), item["ref"].to_string());
            want.sort_by_key(key);
            got.sort_by_key(key);
        }
        for (a, b) in want.iter().zip(&got) {
            let fields: &[&str] = match kind {
                Kind::Embedded => &["type", "ref", "seq"],
                Kind::Mongo => &["type", "ref"],
            };
            for field in fields {
                assert_eq!(a[field], b[field], "{label}: {what}: {a} / {b}");
            }
            let late = ms(&a["ts"]) - ms(&b["ts"]);
            let allowed = match (kind, a["type"].as_str()) {
                (Kind::Mongo, _) => -1000..=1000,
                (Kind::Embedded, Some("post")) => 0..=2000,
                (Kind::Embedded, _) => 0..=0,
            };
            assert!(allowed.contains(&late), "{label}: {what}: {a} / {b}");
        }
    }
}

#[tokio::test]
async fn an_import_is_observably_the_same_data_written_through_the_api() {
    for kind in kinds("an_import_is_observably_the_same_data_written_through_the_api") {
        for strategy in [
            FeedStrategy::Cache,
            FeedStrategy::SizedBuckets,
            FeedStrategy::TimedBuckets,
            FeedStrategy::FanoutOnRead,
            FeedStrategy::Hybrid,
        ] {
            let label = format!("{kind:?}/{strategy}");
            let through_api = TestServer::start(config(kind, strategy)).await;
            let api = through_api.api();
            write_through_api(&api).await;
            through_api.settle().await;
            let dir = tempfile::tempdir().unwrap();
            let paths = export(&api, dir.path()).await;
            let want = observe(&api).await;
            through_api.stop().await;

            let test = config(kind, strategy);
            import(&test, &paths).await.unwrap();
            let imported = TestServer::start(test).await;
            let got = observe(&imported.api()).await;
            assert_same(kind, &want, &got, &label);
            // The imported timelines come from the bulk build, not from workers: they
            // had nothing to replay, and stay idle.
            imported.settle().await;
            assert_same(kind, &want, &observe(&imported.api()).await, &label);
            if kind == Kind::Embedded {
                // One event per source row: 6 users make none.
                let (_, events) = imported.api().get("/v1/events?limit=1000").await;
                let posts = want.iter().filter(|(w, _)| w.ends_with("profile"));
                let rows: u64 = posts
                    .map(|(_, p)| p["posts_count"].as_u64().unwrap())
                    .sum::<u64>()
                    + FOLLOWS.len() as u64
                    + USERS.len() as u64;
                assert_eq!(
                    events["events"].as_array().unwrap().len() as u64,
                    rows,
                    "{label}"
                );
            }
            imported.stop().await;
        }
    }
}
