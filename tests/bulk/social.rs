//! Blocks, mutes, replies and notifications in a bulk load, on both stores: the
//! notifications a load writes are exactly the notifications worker's rebuild
//! (`derived::notifications::rebuilt`, ids and groups included), a block removes the
//! follows beside it (a stored follow; one in the same files refuses the import), reply
//! counts are derived, the workers start at the head (a later API write notifies once),
//! and every bad line is reported with its file and line.

use std::path::{Path, PathBuf};

use reqwest::StatusCode;
use socialite::bulk::import::ImportFiles;
use socialite::derived::notifications as expected;
use socialite::domain::{NotificationFilter, PostId, now_ms};
use socialite::store::Store;

use super::common::{TestConfig, TestServer, kinds};
use super::config;

fn file(dir: &Path, name: &str, lines: &[String]) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    path
}

const USERS: [&str; 6] = ["ann", "bob", "cat", "dan", "eve", "zed"];

/// Every user's stored notifications and groups, against the derived definition over
/// the store's own sources: equal, ids and groups included. Returns how many.
async fn assert_notifications_derived(store: &Store, label: &str) -> usize {
    assert_derived_for(store, &USERS, label).await
}

/// [`assert_notifications_derived`] for `users`.
pub async fn assert_derived_for(store: &Store, users: &[&str], label: &str) -> usize {
    let sources = store.notifications.notification_sources().await.unwrap();
    let want = expected::rebuilt(&sources);
    let all = NotificationFilter::default();
    let mut total = 0;
    for &user in users {
        let mut mine: Vec<_> = want.iter().filter(|n| n.user == user).cloned().collect();
        mine.sort_by_key(|n| std::cmp::Reverse(n.id));
        let got = store
            .notifications
            .notifications(user, &all, None, 1000)
            .await
            .unwrap();
        assert_eq!(got, mine, "{label}: {user}'s notifications");
        let groups = store
            .notifications
            .notification_groups(user, &all, None, 1000)
            .await
            .unwrap();
        assert_eq!(groups, expected::groups(&mine), "{label}: {user}'s groups");
        total += got.len();
    }
    total
}

async fn import(test: &TestConfig, files: ImportFiles) -> anyhow::Result<Store> {
    let store = socialite::app::open_store(&test.config).await?;
    let settings = socialite::bulk::derive_settings(&test.config);
    socialite::bulk::import::run(store.clone(), settings, &files).await?;
    Ok(store)
}

#[tokio::test]
async fn a_load_derives_notifications_reply_counts_and_removes_follows_beside_blocks() {
    for kind in kinds("a_load_derives_notifications_reply_counts_and_removes_follows_beside_blocks")
    {
        let label = format!("{kind:?}");
        let test = config(kind, socialite::domain::FeedStrategy::SizedBuckets);
        let dir = tempfile::tempdir().unwrap();
        let t0 = now_ms() - 100_000;
        let p = |k: i64| PostId::at(t0 + 1000 * k, 7);
        let mut users: Vec<String> = USERS[..5]
            .iter()
            .map(|u| format!(r#"{{"id":"{u}","created_at":{t0}}}"#))
            .collect();
        // zed signs up after the post that mentions them: no notification.
        users.push(format!(r#"{{"id":"zed","created_at":{}}}"#, t0 + 50_000));
        let follows: Vec<String> = [
            ("bob", "ann"),
            ("cat", "ann"),
            ("dan", "ann"),
            ("ann", "bob"),
            ("eve", "ann"),
            ("ann", "dan"),
        ]
        .iter()
        .map(|(a, b)| format!(r#"{{"follower":"{a}","followee":"{b}","created_at":{t0}}}"#))
        .collect();
        let posts = vec![
            format!(
                r#"{{"id":"{}","author":"ann","text":"hello @bob @zed"}}"#,
                p(1)
            ),
            format!(
                r#"{{"id":"{}","author":"bob","text":"@ann yes @cat","in_reply_to":"{}"}}"#,
                p(2),
                p(1)
            ),
            format!(
                r#"{{"id":"{}","author":"ann","text":"thanks","in_reply_to":"{}"}}"#,
                p(3),
                p(2)
            ),
            // A self-thread: no notification.
            format!(
                r#"{{"id":"{}","author":"ann","text":"and more","in_reply_to":"{}"}}"#,
                p(4),
                p(3)
            ),
            format!(r#"{{"id":"{}","author":"cat","text":"mine"}}"#, p(5)),
        ];
        let likes: Vec<String> = [("bob", 1), ("cat", 1), ("ann", 1), ("dan", 2)]
            .iter()
            .map(|(u, k)| format!(r#"{{"user":"{u}","post":"{}","created_at":{t0}}}"#, p(*k)))
            .collect();
        let mutes = vec![
            format!(
                r#"{{"user":"bob","other":"cat","created_at":{t0},"notifications":false,"until":{}}}"#,
                t0 + 10_000_000
            ),
            format!(r#"{{"user":"cat","other":"ann","created_at":{t0}}}"#),
        ];
        let store = import(
            &test,
            ImportFiles {
                users: Some(file(dir.path(), "users", &users)),
                follows: Some(file(dir.path(), "follows", &follows)),
                posts: Some(file(dir.path(), "posts", &posts)),
                likes: Some(file(dir.path(), "likes", &likes)),
                mutes: Some(file(dir.path(), "mutes", &mutes)),
                ..Default::default()
            },
        )
        .await
        .unwrap();
        // 5 follows (one each way between ann and dan), bob's and cat's likes of p1 and
        // dan's of p2, bob's reply to ann, ann's to bob, the mentions of bob and cat.
        let n = assert_notifications_derived(&store, &label).await;
        assert_eq!(n, 6 + 3 + 2 + 2, "{label}");

        // A later load of a block: dan's follows both ways go, and their notifications.
        let blocks = vec![format!(
            r#"{{"user":"ann","other":"dan","created_at":{t0}}}"#
        )];
        let store = import(
            &test,
            ImportFiles {
                blocks: Some(file(dir.path(), "blocks", &blocks)),
                ..Default::default()
            },
        )
        .await
        .unwrap();
        let n = assert_notifications_derived(&store, &label).await;
        assert_eq!(
            n,
            4 + 3 + 2 + 2,
            "{label}: the follows beside the block are gone"
        );
        drop(store);

        let server = TestServer::start(test).await;
        let api = server.api();
        let (_, ann) = api.get("/v1/users/ann").await;
        assert_eq!(ann["followers_count"], 3, "{label}: {ann}");
        assert_eq!(ann["following_count"], 1, "{label}: {ann}");
        for (k, replies) in [(1, 1), (2, 1), (3, 1), (4, 0), (5, 0)] {
            let (_, post) = api.get(&format!("/v1/posts/{}", p(k))).await;
            assert_eq!(post["replies_count"], replies, "{label}: p{k} {post}");
        }
        let (_, blocks) = api.get("/v1/users/ann/blocks").await;
        assert_eq!(blocks["items"][0]["id"], "dan", "{label}: {blocks}");
        let (status, _) = api.put("/v1/users/dan/following/ann").await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{label}");
        let (_, mutes) = api.get("/v1/users/bob/mutes").await;
        assert_eq!(mutes["items"][0]["id"], "cat", "{label}: {mutes}");
        assert_eq!(
            mutes["items"][0]["notifications"], false,
            "{label}: {mutes}"
        );
        // The workers start at the head: nothing replayed, and a new follow notifies once.
        server.settle().await;
        let (status, _) = api.put("/v1/users/cat/following/bob").await;
        assert_eq!(status, StatusCode::NO_CONTENT, "{label}");
        server.settle().await;
        let (_, page) = api.get("/v1/users/bob/notifications?limit=100").await;
        let items = page["items"].as_array().unwrap();
        let follows: Vec<_> = items.iter().filter(|i| i["type"] == "follow").collect();
        assert_eq!(
            follows.len(),
            2,
            "{label}: ann's loaded and cat's new: {page}"
        );
        // And ann's reply and mention, and dan's like of bob's reply.
        assert_eq!(items.len(), 2 + 3, "{label}: {page}");
        server.stop().await;
    }
}

#[tokio::test]
async fn bad_blocks_mutes_and_replies_are_reported_by_line_and_nothing_is_written() {
    for kind in kinds("bad_blocks_mutes_and_replies_are_reported_by_line_and_nothing_is_written") {
        let test = config(kind, socialite::domain::FeedStrategy::Cache);
        let dir = tempfile::tempdir().unwrap();
        let t0 = now_ms() - 100_000;
        let p = |k: i64| PostId::at(t0 + 1000 * k, 7);
        let users: Vec<String> = ["ann", "bob", "cat"]
            .iter()
            .map(|u| format!(r#"{{"id":"{u}"}}"#))
            .collect();
        let follows = vec![r#"{"follower":"bob","followee":"ann"}"#.to_owned()];
        let posts = vec![
            format!(r#"{{"id":"{}","author":"ann","text":"a"}}"#, p(2)),
            format!(
                r#"{{"id":"{}","author":"bob","text":"b","in_reply_to":"{}"}}"#,
                p(1),
                p(2)
            ),
            format!(
                r#"{{"id":"{}","author":"bob","text":"c","in_reply_to":"{}"}}"#,
                p(3),
                p(0)
            ),
        ];
        let blocks = vec![
            r#"{"user":"cat","other":"cat"}"#.to_owned(),
            r#"{"user":"ann","other":"bob"}"#.to_owned(),
        ];
        let mutes = vec![format!(
            r#"{{"user":"ann","other":"cat","created_at":{t0},"until":{t0}}}"#
        )];
        let files = ImportFiles {
            users: Some(file(dir.path(), "users", &users)),
            follows: Some(file(dir.path(), "follows", &follows)),
            posts: Some(file(dir.path(), "posts", &posts)),
            blocks: Some(file(dir.path(), "blocks", &blocks)),
            mutes: Some(file(dir.path(), "mutes", &mutes)),
            ..Default::default()
        };
        let Err(error) = import(&test, files).await else {
            panic!("{kind:?}: the import was refused")
        };
        let why = format!("{error:#}");
        let at = |name: &str, line: u32| format!("{}:{line}:", dir.path().join(name).display());
        for (name, line, says) in [
            ("posts", 2, "is not an earlier post than"),
            ("blocks", 1, "cat cannot block themselves"),
            ("mutes", 1, "the mute would have ended before it began"),
            ("follows", 1, "beside the block of the same two at"),
            ("posts", 3, "is neither in the posts file nor in the store"),
        ] {
            let wanted = format!("{} {}", at(name, line), "");
            let found = why
                .lines()
                .any(|l| l.trim_start().starts_with(wanted.trim_end()) && l.contains(says));
            assert!(found, "{kind:?}: {name}:{line} {says:?} in\n{why}");
        }
        assert!(
            why.contains(&at("blocks", 2)),
            "{kind:?}: the block is named: {why}"
        );
        assert!(
            why.starts_with("nothing was imported; 5 line(s) refused"),
            "{why}"
        );
        let store = socialite::app::open_store(&test.config).await.unwrap();
        assert!(store.users.user("ann").await.unwrap().is_none(), "{kind:?}");
    }
}
