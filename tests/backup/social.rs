//! A backup carries blocks, mutes (their settings and expiry), replies (and their
//! counts) and notifications: a store restored from it serves them as they were when
//! the copy was taken, though the store moved on after it.

use reqwest::StatusCode;
use serde_json::{Value, json};

use super::common::Api;
use super::restore::restore;
use super::{backup, caught_up, serve, stop_server};

/// Everything the new sources and their notifications show through the API.
async fn observe(api: &Api, posts: &[&str]) -> Vec<Value> {
    let mut seen = Vec::new();
    for user in ["ann", "bob", "cat"] {
        for what in [
            "notifications",
            "notifications?grouped=true",
            "blocks",
            "mutes",
            "following",
        ] {
            let (status, body) = api.get(&format!("/v1/users/{user}/{what}")).await;
            assert_eq!(status, StatusCode::OK, "{user} {what}: {body}");
            seen.push(json!({ "user": user, "what": what, "body": body }));
        }
    }
    for post in posts {
        seen.push(api.get(&format!("/v1/posts/{post}")).await.1);
        seen.push(api.get(&format!("/v1/posts/{post}/context")).await.1);
    }
    seen
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restored_backup_serves_its_blocks_mutes_replies_and_notifications() {
    let dir = tempfile::tempdir().unwrap();
    let (db, copy) = (dir.path().join("socialite.db"), dir.path().join("copy.db"));
    let (mut server, base) = serve(&db);
    let api = Api::new(reqwest::Client::new(), &base);
    for user in ["ann", "bob", "cat"] {
        api.user(user).await;
    }
    api.put("/v1/users/bob/following/ann").await;
    api.put("/v1/users/cat/following/bob").await;
    let root = api.say("ann", "hello @cat").await;
    let (status, reply) = api
        .post(
            "/v1/users/bob/posts",
            json!({ "text": "hi ann", "in_reply_to": root }),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{reply}");
    let reply = reply["id"].as_str().unwrap().to_owned();
    api.put(&format!("/v1/users/cat/likes/{root}")).await;
    let (status, _) = api
        .send(
            reqwest::Method::PUT,
            "/v1/users/ann/mutes/cat",
            Some(json!({ "notifications": false, "duration": "1h" })),
        )
        .await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let (status, _) = api.put("/v1/users/cat/blocks/bob").await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let head = backup(&db, &copy);
    caught_up(&api, head).await;
    // The copy was taken before the workers caught up: what it holds is what the
    // restored store's workers finish from the copy's positions.
    let posts = [root.as_str(), reply.as_str()];
    let want = observe(&api, &posts).await;
    let ann = &want[0]["body"]["items"];
    assert_eq!(
        ann.as_array().unwrap().len(),
        3,
        "follow, reply, like: {ann}"
    );
    assert_eq!(want[15]["replies_count"], 1, "{}", want[15]);

    // The store moves on: all of it undone.
    api.delete("/v1/users/ann/mutes/cat").await;
    api.delete("/v1/users/cat/blocks/bob").await;
    api.delete(&format!("/v1/users/cat/likes/{root}")).await;
    api.delete(&format!("/v1/posts/{reply}")).await;
    let moved = observe(&api, &posts).await;
    assert_ne!(moved, want, "the store moved on after the copy");
    stop_server(&mut server);

    let run = restore(&db, &copy);
    assert!(run.ok, "{}", run.stderr);
    let (mut server, base) = serve(&db);
    let api = api.at(&base);
    caught_up(&api, head).await;
    assert_eq!(observe(&api, &posts).await, want);
    stop_server(&mut server);
}
