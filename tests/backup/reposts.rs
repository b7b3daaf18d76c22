//! A backup carries reposts: a store restored from it serves the reposts, their counts,
//! the reposter's list and the repost notifications as they were when the copy was
//! taken; and a restore refuses a copy holding a repost of a post or by a user it does
//! not hold.

use reqwest::StatusCode;
use serde_json::{Value, json};

use super::common::Api;
use super::restore::restore;
use super::{backup, caught_up, cli, serve, stop_server};

async fn observe(api: &Api, post: &str) -> Vec<Value> {
    vec![
        api.get(&format!("/v1/posts/{post}")).await.1,
        api.get("/v1/users/bob/posts").await.1,
        api.get("/v1/users/ann/notifications").await.1,
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restored_backup_serves_its_reposts_and_refuses_dangling_ones() {
    let dir = tempfile::tempdir().unwrap();
    let (db, copy) = (dir.path().join("socialite.db"), dir.path().join("copy.db"));
    let (mut server, base) = serve(&db);
    let api = Api::new(reqwest::Client::new(), &base);
    for user in ["ann", "bob", "cat"] {
        api.user(user).await;
    }
    let post = api.say("ann", "pass it on").await;
    for user in ["bob", "cat"] {
        let (status, body) = api.put(&format!("/v1/users/{user}/reposts/{post}")).await;
        assert!(status.is_success(), "{status} {body}");
    }
    let head = backup(&db, &copy);
    caught_up(&api, head).await;
    let want = observe(&api, &post).await;
    assert_eq!(want[0]["reposts_count"], 2, "{}", want[0]);
    let listed = want[1]["items"].as_array().unwrap();
    assert_eq!(listed.len(), 1, "bob's repost: {}", want[1]);
    let kinds: Vec<&Value> = want[2]["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| &n["type"])
        .collect();
    assert_eq!(kinds, [&json!("repost"), &json!("repost")], "{}", want[2]);

    // The store moves on: bob's repost undone.
    let (status, _) = api.delete(&format!("/v1/users/bob/reposts/{post}")).await;
    assert!(status.is_success());
    caught_up(&api, head).await;
    assert_ne!(observe(&api, &post).await, want, "the store moved on");
    stop_server(&mut server);

    let run = restore(&db, &copy);
    assert!(run.ok, "{}", run.stderr);
    let (mut server, base) = serve(&db);
    let api = api.at(&base);
    caught_up(&api, head).await;
    assert_eq!(observe(&api, &post).await, want);
    stop_server(&mut server);

    // A copy whose repost names a post it does not hold (its manifest dropped, so that
    // only the reference check can see it) is refused, the store untouched.
    let dangling = dir.path().join("dangling.db");
    std::fs::copy(&copy, &dangling).unwrap();
    rusqlite::Connection::open(&dangling)
        .unwrap()
        .execute_batch(
            "DROP TABLE backup_manifest;
             UPDATE posts SET id = x'000000010000000000000001' WHERE author = 'ann';",
        )
        .unwrap();
    let run = cli(
        &db,
        &[
            "restore",
            "--from",
            dangling.to_str().unwrap(),
            "--allow-no-manifest",
        ],
    );
    assert!(!run.ok, "refused: {}", run.stdout);
    assert!(
        run.stderr
            .contains("its reposts hold 2 repost(s) whose user or post it does not hold"),
        "{}",
        run.stderr
    );
    let (mut server, base) = serve(&db);
    let api = api.at(&base);
    let (status, _) = api.get(&format!("/v1/posts/{post}")).await;
    assert_eq!(status, StatusCode::OK, "the store is untouched");
    stop_server(&mut server);
}
