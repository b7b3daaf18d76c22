//! Reposts in a bulk load, on both stores: `socialite import --reposts` writes them with
//! their ids (given, or minted at their time), the load derives every post's
//! `reposts_count` and the repost notifications exactly as the notifications worker's
//! rebuild writes them, and every bad line (an unknown user or post, a conflicting
//! repeat, an id that names another repost or a post, a repost before its post, a
//! repost of a post whose author blocks the reposter, in the files or the store) is
//! reported by file and line with nothing written.

use std::path::{Path, PathBuf};

use socialite::bulk::import::ImportFiles;
use socialite::domain::{FeedStrategy, PostId, now_ms};
use socialite::store::Store;

use super::common::{Kind, TestConfig, TestServer, kinds};
use super::config;
use super::social::assert_derived_for;
use loaded_log::assert_loaded_log;

#[path = "reposts_log.rs"]
mod loaded_log;

fn file(dir: &Path, name: &str, lines: &[String]) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    path
}

async fn import(test: &TestConfig, files: ImportFiles) -> anyhow::Result<Store> {
    let store = socialite::app::open_store(&test.config).await?;
    let settings = socialite::bulk::derive_settings(&test.config);
    socialite::bulk::import::run(store.clone(), settings, &files).await?;
    Ok(store)
}

const USERS: [&str; 4] = ["ann", "bob", "cat", "dan"];

fn users(t0: i64) -> Vec<String> {
    USERS
        .iter()
        .map(|u| format!(r#"{{"id":"{u}","created_at":{t0}}}"#))
        .collect()
}

#[tokio::test]
async fn a_load_writes_reposts_and_derives_their_counts_and_notifications() {
    for kind in kinds("a_load_writes_reposts_and_derives_their_counts_and_notifications") {
        let label = format!("{kind:?}");
        let test = config(kind, FeedStrategy::Cache);
        let dir = tempfile::tempdir().unwrap();
        let t0 = now_ms() - 100_000;
        let p = |k: i64| PostId::at(t0 + 1000 * k, 7);
        let mut posts: Vec<String> = [(1, "ann"), (2, "ann"), (3, "bob")]
            .iter()
            .map(|(k, a)| format!(r#"{{"id":"{}","author":"{a}","text":"p{k}"}}"#, p(*k)))
            .collect();
        // dan answers bob's p3: a reply's event names what it answers.
        posts.push(format!(
            r#"{{"id":"{}","author":"dan","text":"re","in_reply_to":"{}"}}"#,
            p(4),
            p(3)
        ));
        let given = PostId::at(t0 + 20_000, 99);
        let reposts = vec![
            format!(
                r#"{{"user":"bob","post":"{}","created_at":{}}}"#,
                p(1),
                t0 + 10_000
            ),
            format!(
                r#"{{"user":"cat","post":"{}","created_at":{}}}"#,
                p(1),
                t0 + 11_000
            ),
            // The same line again: written once.
            format!(
                r#"{{"user":"cat","post":"{}","created_at":{}}}"#,
                p(1),
                t0 + 11_000
            ),
            format!(r#"{{"id":"{given}","user":"cat","post":"{}"}}"#, p(3)),
            // Reposting one's own post is allowed, and notifies no one.
            format!(r#"{{"user":"ann","post":"{}"}}"#, p(2)),
        ];
        let store = import(
            &test,
            ImportFiles {
                users: Some(file(dir.path(), "users", &users(t0))),
                posts: Some(file(dir.path(), "posts", &posts)),
                reposts: Some(file(dir.path(), "reposts", &reposts)),
                ..Default::default()
            },
        )
        .await
        .unwrap();
        // bob's and cat's reposts of ann's p1, cat's of bob's p3, and dan's reply to p3.
        let n = assert_derived_for(&store, &USERS, &label).await;
        assert_eq!(n, 4, "{label}");
        for (k, count) in [(1, 2), (2, 1), (3, 1)] {
            let post = store.content.post(p(k)).await.unwrap().unwrap();
            assert_eq!(post.reposts_count, count, "{label}: p{k}");
        }
        let cat = store.reposts.reposts_by("cat", None, 10).await.unwrap();
        assert_eq!(cat.len(), 2, "{label}: {cat:?}");
        assert_eq!(cat[0].id, given, "{label}: the id given is kept");
        assert_eq!(cat[0].post.author, "bob", "{label}: the original's author");
        assert_eq!(
            cat[1].id.timestamp_ms(),
            t0 + 11_000,
            "{label}: minted at its time"
        );
        drop(store);

        // Run again: nothing more is written, and the counts stay.
        let again = socialite::app::open_store(&test.config).await.unwrap();
        let settings = socialite::bulk::derive_settings(&test.config);
        let report = socialite::bulk::import::run(
            again.clone(),
            settings,
            &ImportFiles {
                reposts: Some(file(dir.path(), "reposts", &reposts)),
                ..Default::default()
            },
        )
        .await
        .unwrap();
        assert_eq!(report.reposts, 0, "{label}: {report}");
        let post = again.content.post(p(1)).await.unwrap().unwrap();
        assert_eq!(post.reposts_count, 2, "{label}");
        assert_eq!(assert_derived_for(&again, &USERS, &label).await, 4);
        drop(again);

        // Served: the count, the reposter's list, and a later unrepost through the API
        // takes the loaded notification away (the workers start at the head).
        let server = TestServer::start(test).await;
        let api = server.api();
        if kind == Kind::Embedded {
            assert_loaded_log(&api, &p, given, &label).await;
        }
        let (_, post) = api.get(&format!("/v1/posts/{}", p(1))).await;
        assert_eq!(post["reposts_count"], 2, "{label}: {post}");
        let (_, page) = api.get("/v1/users/ann/notifications?limit=100").await;
        assert_eq!(
            page["items"].as_array().unwrap().len(),
            2,
            "{label}: {page}"
        );
        let (status, _) = api.delete(&format!("/v1/users/bob/reposts/{}", p(1))).await;
        assert!(status.is_success(), "{label}: {status}");
        server.settle().await;
        let (_, page) = api.get("/v1/users/ann/notifications?limit=100").await;
        let items = page["items"].as_array().unwrap();
        assert_eq!(items.len(), 1, "{label}: {page}");
        assert_eq!(items[0]["type"], "repost", "{label}: {page}");
        server.stop().await;
    }
}

#[tokio::test]
async fn bad_repost_lines_are_reported_by_line_and_nothing_is_written() {
    for kind in kinds("bad_repost_lines_are_reported_by_line_and_nothing_is_written") {
        let test = config(kind, FeedStrategy::Cache);
        let dir = tempfile::tempdir().unwrap();
        let t0 = now_ms() - 100_000;
        let p = |k: i64| PostId::at(t0 + 1000 * k, 7);
        // First a stored block (dan blocks cat) and a stored post of dan's.
        let stored = import(
            &test,
            ImportFiles {
                users: Some(file(dir.path(), "users0", &users(t0))),
                posts: Some(file(
                    dir.path(),
                    "posts0",
                    &[format!(r#"{{"id":"{}","author":"dan","text":"d"}}"#, p(9))],
                )),
                blocks: Some(file(
                    dir.path(),
                    "blocks0",
                    &[r#"{"user":"dan","other":"cat"}"#.to_owned()],
                )),
                ..Default::default()
            },
        )
        .await
        .unwrap();
        drop(stored);
        let posts = vec![
            format!(r#"{{"id":"{}","author":"ann","text":"a"}}"#, p(1)),
            format!(r#"{{"id":"{}","author":"bob","text":"b"}}"#, p(2)),
        ];
        let blocks = vec![r#"{"user":"ann","other":"bob"}"#.to_owned()];
        let later = |k: i64| t0 + 50_000 + k;
        let reposts = vec![
            // 1: unknown user; 2: unknown post.
            format!(
                r#"{{"user":"zed","post":"{}","created_at":{}}}"#,
                p(1),
                later(1)
            ),
            format!(
                r#"{{"user":"cat","post":"{}","created_at":{}}}"#,
                p(5),
                later(2)
            ),
            // 3, 4: the same pair with another time.
            format!(
                r#"{{"user":"cat","post":"{}","created_at":{}}}"#,
                p(2),
                later(3)
            ),
            format!(
                r#"{{"user":"cat","post":"{}","created_at":{}}}"#,
                p(2),
                later(4)
            ),
            // 5: an id that is a post's of the file; 6: an id that names line 7's repost.
            format!(r#"{{"id":"{}","user":"dan","post":"{}"}}"#, p(2), p(1)),
            format!(
                r#"{{"id":"{}","user":"dan","post":"{}"}}"#,
                PostId::at(later(6), 1),
                p(2)
            ),
            format!(
                r#"{{"id":"{}","user":"cat","post":"{}"}}"#,
                PostId::at(later(6), 1),
                p(1)
            ),
            // 8: before its post.
            format!(r#"{{"user":"ann","post":"{}","created_at":{}}}"#, p(2), t0),
            // 9: ann blocks bob (the blocks file's line 1); 10: dan blocks cat (stored).
            format!(
                r#"{{"user":"bob","post":"{}","created_at":{}}}"#,
                p(1),
                later(9)
            ),
            format!(
                r#"{{"user":"cat","post":"{}","created_at":{}}}"#,
                p(9),
                later(10)
            ),
        ];
        let files = ImportFiles {
            posts: Some(file(dir.path(), "posts", &posts)),
            blocks: Some(file(dir.path(), "blocks", &blocks)),
            reposts: Some(file(dir.path(), "reposts", &reposts)),
            ..Default::default()
        };
        let Err(error) = import(&test, files).await else {
            panic!("{kind:?}: the import was refused")
        };
        let why = format!("{error:#}");
        let at = |name: &str, line: u32| format!("{}:{line}:", dir.path().join(name).display());
        let mut missing = Vec::new();
        for (line, says) in [
            (
                1,
                "user \"zed\" is neither in the users file nor in the store",
            ),
            (2, "is neither in the posts file nor in the store"),
            (4, "again, with another id or created_at than at line 3"),
            (5, "is also a post's id in the posts file"),
            (7, "already names the repost of"),
            (8, "is not later than post"),
            (9, "beside the block of \"bob\" by its author \"ann\" at"),
            (10, "whose author \"dan\" blocks them in the store"),
        ] {
            let found = why
                .lines()
                .any(|l| l.trim_start().starts_with(&at("reposts", line)) && l.contains(says));
            if !found {
                missing.push(format!("reposts:{line} {says:?}"));
            }
        }
        assert!(
            missing.is_empty(),
            "{kind:?}: missing {missing:?} in\n{why}"
        );
        assert!(
            why.contains(&format!("at {}", at("blocks", 1))),
            "{kind:?}: the block's line is named: {why}"
        );
        assert!(
            why.starts_with("nothing was imported; 8 line(s) refused"),
            "{why}"
        );
        let store = socialite::app::open_store(&test.config).await.unwrap();
        assert!(
            store.content.post(p(1)).await.unwrap().is_none(),
            "{kind:?}"
        );
        let dan = store.reposts.reposts_by("dan", None, 10).await.unwrap();
        assert!(dan.is_empty(), "{kind:?}: {dan:?}");
    }
}

#[tokio::test]
async fn a_repost_id_of_a_stored_post_or_repost_is_refused() {
    for kind in kinds("a_repost_id_of_a_stored_post_or_repost_is_refused") {
        let test = config(kind, FeedStrategy::Cache);
        let dir = tempfile::tempdir().unwrap();
        let t0 = now_ms() - 100_000;
        let p = |k: i64| PostId::at(t0 + 1000 * k, 7);
        let taken = PostId::at(t0 + 30_000, 5);
        let store = import(
            &test,
            ImportFiles {
                users: Some(file(dir.path(), "users", &users(t0))),
                posts: Some(file(
                    dir.path(),
                    "posts",
                    &[
                        format!(r#"{{"id":"{}","author":"ann","text":"a"}}"#, p(1)),
                        format!(r#"{{"id":"{}","author":"ann","text":"b"}}"#, p(2)),
                    ],
                )),
                reposts: Some(file(
                    dir.path(),
                    "reposts0",
                    &[format!(
                        r#"{{"id":"{taken}","user":"bob","post":"{}"}}"#,
                        p(1)
                    )],
                )),
                ..Default::default()
            },
        )
        .await
        .unwrap();
        drop(store);
        let reposts = vec![
            format!(r#"{{"id":"{}","user":"cat","post":"{}"}}"#, p(2), p(1)),
            // (The stored repost itself again is fine: the re-run of the test above.)
            format!(r#"{{"id":"{taken}","user":"dan","post":"{}"}}"#, p(1)),
        ];
        let Err(error) = import(
            &test,
            ImportFiles {
                reposts: Some(file(dir.path(), "reposts", &reposts)),
                ..Default::default()
            },
        )
        .await
        else {
            panic!("{kind:?}: the import was refused")
        };
        let why = format!("{error:#}");
        let at = |line: u32| format!("{}:{line}:", dir.path().join("reposts").display());
        assert!(
            why.contains(&format!(
                "{} repost id {} is a stored post's id",
                at(1),
                p(2)
            )),
            "{why}"
        );
        assert!(
            why.contains(&format!(
                "{} repost id {taken} already names the stored repost",
                at(2)
            )),
            "{why}"
        );
        assert!(
            why.starts_with("nothing was imported; 2 line(s) refused"),
            "{why}"
        );
    }
}
