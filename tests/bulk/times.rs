//! What an import lets in: times in the service's range and not in the future, post ids
//! the service could have made, and repeated keys only with the same values; and what
//! the API does with a store that holds something else (written before these checks).

use std::path::{Path, PathBuf};

use reqwest::StatusCode;
use serde_json::json;
use socialite::domain::{FeedStrategy, PostId, now_ms};
use socialite::store::bulk::{PostRow, Rows, UserRow};

use super::common::{Api, kinds};
use super::config;

fn file(dir: &Path, name: &str, lines: &[String]) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    path
}

fn files(
    users: Option<PathBuf>,
    follows: Option<PathBuf>,
    posts: Option<PathBuf>,
    likes: Option<PathBuf>,
) -> socialite::bulk::import::ImportFiles {
    socialite::bulk::import::ImportFiles {
        users,
        follows,
        posts,
        likes,
        ..Default::default()
    }
}

/// A created_at past year 9999, a post id from 2097 or with 1000 in its millisecond
/// field: each refused with its file and line, and nothing written.
#[tokio::test]
async fn times_outside_the_range_or_in_the_future_are_refused() {
    for kind in kinds("times_outside_the_range_or_in_the_future_are_refused") {
        let test = config(kind, FeedStrategy::Cache);
        let store = socialite::app::open_store(&test.config).await.unwrap();
        let settings = socialite::bulk::derive_settings(&test.config);
        let dir = tempfile::tempdir().unwrap();
        let users = file(
            dir.path(),
            "users.jsonl",
            &[
                r#"{"id":"ann"}"#.to_owned(),
                r#"{"id":"bob","created_at":253402300800000}"#.to_owned(),
            ],
        );
        let follows = file(
            dir.path(),
            "follows.jsonl",
            &[r#"{"follower":"ann","followee":"bob","created_at":253402300800000}"#.to_owned()],
        );
        let posts = file(
            dir.path(),
            "posts.jsonl",
            &[
                r#"{"id":"000000010000000000000001","author":"ann","text":"ok"}"#.to_owned(),
                r#"{"id":"f00000000000000000000001","author":"ann","text":"2097"}"#.to_owned(),
                r#"{"id":"0000000103e8000000000001","author":"ann","text":"ms"}"#.to_owned(),
            ],
        );
        let likes = file(
            dir.path(),
            "likes.jsonl",
            &[
                r#"{"user":"bob","post":"000000010000000000000001","created_at":253402300800000}"#
                    .to_owned(),
            ],
        );
        let error = socialite::bulk::import::run(
            store.clone(),
            settings,
            &files(
                Some(users.clone()),
                Some(follows.clone()),
                Some(posts.clone()),
                Some(likes.clone()),
            ),
        )
        .await
        .expect_err("refused");
        let error = format!("{error:#}");
        for at in [
            format!(
                "{}:2: created_at: time 253402300800000 ms is outside",
                users.display()
            ),
            format!("{}:1: created_at: time", follows.display()),
            format!(
                "{}:2: post id \"f00000000000000000000001\"",
                posts.display()
            ),
            format!(
                "{}:3: post id \"0000000103e8000000000001\"",
                posts.display()
            ),
            format!("{}:1: created_at: time", likes.display()),
        ] {
            assert!(error.contains(&at), "{kind:?}: {at} in {error}");
        }
        assert!(
            error.contains("future") && error.contains("below 1000"),
            "{error}"
        );
        assert_eq!(store.users.user("ann").await.unwrap(), None, "{kind:?}");
    }
}

/// A user with two names, a post with two texts, a follow and a like with two dates:
/// refused with both lines. The same rows repeated: imported, written once, and the
/// report counts rows written.
#[tokio::test]
async fn conflicting_duplicates_are_refused_and_identical_ones_written_once() {
    for kind in kinds("conflicting_duplicates_are_refused_and_identical_ones_written_once") {
        let test = config(kind, FeedStrategy::Cache);
        let store = socialite::app::open_store(&test.config).await.unwrap();
        let settings = socialite::bulk::derive_settings(&test.config);
        let dir = tempfile::tempdir().unwrap();
        let post = "000000010000000000000001";
        let user = |name: &str| format!(r#"{{"id":"ann","display_name":"{name}"}}"#);
        let follow =
            |at: i64| format!(r#"{{"follower":"bob","followee":"ann","created_at":{at}}}"#);
        let text = |text: &str| format!(r#"{{"id":"{post}","author":"ann","text":"{text}"}}"#);
        let like = |at: i64| format!(r#"{{"user":"bob","post":"{post}","created_at":{at}}}"#);
        let bob = r#"{"id":"bob"}"#.to_owned();
        let conflicting = files(
            Some(file(
                dir.path(),
                "users.jsonl",
                &[user("Ann"), bob.clone(), user("Anne")],
            )),
            Some(file(dir.path(), "follows.jsonl", &[follow(5), follow(6)])),
            Some(file(
                dir.path(),
                "posts.jsonl",
                &[text("hi"), text("hello")],
            )),
            Some(file(dir.path(), "likes.jsonl", &[like(7), like(8)])),
        );
        let error = socialite::bulk::import::run(store.clone(), settings.clone(), &conflicting)
            .await
            .expect_err("refused");
        let error = format!("{error:#}");
        for at in [
            "users.jsonl:3: user \"ann\" again, with another display_name or created_at than at line 1",
            "follows.jsonl:2: follow \"bob\" -> \"ann\" again, with another created_at than at line 1",
            "posts.jsonl:2: post 000000010000000000000001 again, with another author, text or in_reply_to than at line 1",
            "likes.jsonl:2: like of 000000010000000000000001 by \"bob\" again, with another created_at than at line 1",
        ] {
            assert!(error.contains(at), "{kind:?}: {at} in {error}");
        }
        assert_eq!(store.users.user("ann").await.unwrap(), None, "{kind:?}");

        let repeated = files(
            Some(file(
                dir.path(),
                "users.jsonl",
                &[user("Ann"), bob.clone(), user("Ann")],
            )),
            Some(file(dir.path(), "follows.jsonl", &[follow(5), follow(5)])),
            Some(file(dir.path(), "posts.jsonl", &[text("hi"), text("hi")])),
            Some(file(dir.path(), "likes.jsonl", &[like(7), like(7)])),
        );
        let report = socialite::bulk::import::run(store.clone(), settings.clone(), &repeated)
            .await
            .unwrap();
        assert_eq!(
            (
                report.users,
                report.follows,
                report.posts,
                report.likes,
                report.not_written
            ),
            (2, 1, 1, 1, 4),
            "{kind:?}: {report}"
        );
        assert_eq!(
            store.users.user("ann").await.unwrap().unwrap().display_name,
            "Ann"
        );
        // Run again: every row is there already, and none is counted as written.
        let again = socialite::bulk::import::run(store.clone(), settings, &repeated)
            .await
            .unwrap();
        assert_eq!(
            (again.rows(), again.not_written),
            (0, 9),
            "{kind:?}: {again}"
        );
    }
}

/// A store holding what imports let in before the checks: a created_at past year 9999
/// and a post id from 2097. The API writes the time (no panic, no closed connection),
/// and posts made through the API carry today's time, not 2097's.
#[tokio::test]
async fn the_api_survives_times_written_before_the_range_was_enforced() {
    for kind in kinds("the_api_survives_times_written_before_the_range_was_enforced") {
        let test = config(kind, FeedStrategy::Cache);
        {
            let store = socialite::app::open_store(&test.config).await.unwrap();
            store.bulk.begin_load(now_ms()).await.unwrap().unwrap();
            let mut users = Rows::default();
            for (id, at) in [("ann", 253_402_300_800_000), ("bob", now_ms())] {
                let (id, display_name) = (users.intern(id), users.intern(id));
                users.push(UserRow {
                    id,
                    display_name,
                    created_at_ms: at,
                });
            }
            store.bulk.insert_users(users).await.unwrap();
            let mut posts = Rows::default();
            let (author, text) = (posts.intern("ann"), posts.intern("from 2097"));
            let id: PostId = "f00000000000000000000001".parse().unwrap();
            posts.push(PostRow {
                id,
                author,
                text,
                reply_to: None,
            });
            store.bulk.insert_posts(posts).await.unwrap();
            let settings = socialite::bulk::derive_settings(&test.config);
            let step = std::sync::Arc::new(|_: &'static str| {});
            store.bulk.derive_all(&settings, step).await.unwrap();
            store.bulk.finish_load().await.unwrap();
        }
        let server = socialite::app::spawn(&test.config).await.unwrap();
        let api = Api::new(reqwest::Client::new(), format!("http://{}", server.addr));
        let (status, body) = api.get("/v1/users/ann").await;
        assert_eq!(status, StatusCode::OK, "{kind:?}: {body}");
        assert_eq!(body["created_at"], "+10000-01-01T00:00:00.000Z", "{kind:?}");

        let before = now_ms();
        let (status, body) = api
            .post("/v1/users/bob/posts", json!({ "text": "made now" }))
            .await;
        let after = now_ms();
        assert_eq!(status, StatusCode::CREATED, "{kind:?}: {body}");
        let created = humantime::parse_rfc3339(body["created_at"].as_str().unwrap()).unwrap();
        let created = created
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis() as i64;
        assert!(
            (before..=after).contains(&created),
            "{kind:?}: {body} is not between {before} and {after}"
        );
        server.stop().await.unwrap();
    }
}
