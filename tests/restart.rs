//! Durability: every post answered 201 survives `kill -9` and a restart.

mod common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::{Api, start_binary};
use reqwest::StatusCode;
use serde_json::json;

#[tokio::test]
async fn acknowledged_posts_survive_kill_9() {
    let dir = tempfile::tempdir().unwrap();
    let client = reqwest::Client::new();
    let (mut child, base) = start_binary(
        &["--feed-strategy", "sized_buckets"],
        &[(
            "SOCIALITE_STORAGE__PATH",
            dir.path().join("socialite.db").as_os_str(),
        )],
    );
    let api = Api::new(client.clone(), &base);
    for id in ["durable", "fan"] {
        api.user(id).await;
    }
    assert_eq!(
        api.put("/v1/users/fan/following/durable").await.0,
        StatusCode::NO_CONTENT
    );

    // Post from several loops and kill the process once KILL_AFTER posts were
    // acknowledged, with more requests still in flight: the kill lands mid-load however
    // fast or slow this build is.
    const KILL_AFTER: usize = 40;
    let acknowledged = Arc::new(Mutex::new(Vec::<String>::new()));
    let enough = Arc::new(tokio::sync::Notify::new());
    let mut tasks = Vec::new();
    let token = api.token("durable");
    for writer in 0..8 {
        let (client, base, token) = (client.clone(), base.clone(), token.clone());
        let (acknowledged, enough) = (acknowledged.clone(), enough.clone());
        tasks.push(tokio::spawn(async move {
            for i in 0.. {
                let sent = client
                    .post(format!("{base}/v1/users/durable/posts"))
                    .bearer_auth(&token)
                    .json(&json!({"text": format!("post {writer}.{i}")}))
                    .send()
                    .await;
                let Ok(response) = sent else { return };
                if response.status() != 201 {
                    return;
                }
                let Ok(body) = response.json::<serde_json::Value>().await else {
                    return;
                };
                let mut acknowledged = acknowledged.lock().unwrap();
                acknowledged.push(body["id"].as_str().unwrap().to_owned());
                if acknowledged.len() >= KILL_AFTER {
                    enough.notify_one();
                }
            }
        }));
    }
    tokio::time::timeout(Duration::from_secs(120), enough.notified())
        .await
        .expect("the server acknowledges posts");
    child.kill().expect("SIGKILL");
    child.wait().unwrap();
    for task in tasks {
        task.await.unwrap();
    }
    let acknowledged = std::mem::take(&mut *acknowledged.lock().unwrap());
    assert!(
        !acknowledged.is_empty(),
        "some posts were acknowledged before the kill"
    );

    let (mut child, base) = start_binary(
        &["--feed-strategy", "sized_buckets"],
        &[(
            "SOCIALITE_STORAGE__PATH",
            dir.path().join("socialite.db").as_os_str(),
        )],
    );
    let api = api.at(base);
    for id in &acknowledged {
        let (status, _) = api.get(&format!("/v1/posts/{id}")).await;
        assert_eq!(status, StatusCode::OK, "acknowledged post {id} was lost");
    }
    let (_, timeline) = api.get("/v1/users/fan/timeline?limit=100").await;
    let shown: Vec<&str> = timeline["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["id"].as_str().unwrap())
        .collect();
    for id in acknowledged.iter().rev().take(100) {
        assert!(
            shown.contains(&id.as_str()),
            "acknowledged post {id} missing from the follower's timeline"
        );
    }
    let (_, user) = api.get("/v1/users/durable").await;
    assert!(user["posts_count"].as_u64().unwrap() >= acknowledged.len() as u64);
    child.kill().unwrap();
    child.wait().unwrap();
    eprintln!(
        "{} posts acknowledged before kill -9, all present after restart",
        acknowledged.len()
    );
}
