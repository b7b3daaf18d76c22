//! A backup carries what users dismissed and cleared of their notifications (a source):
//! a store restored from it serves the notifications as they were when the copy was
//! taken, the dismissed one still gone, and the audit, which judges notifications by the
//! derived definition over the sources, finds nothing to repair.

use serde_json::Value;

use super::common::Api;
use super::restore::restore;
use super::{backup, caught_up, cli, serve, stop_server};

async fn notifications(api: &Api) -> Value {
    api.get("/v1/users/ann/notifications").await.1
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restored_backup_keeps_a_dismissal_and_the_audit_agrees() {
    let dir = tempfile::tempdir().unwrap();
    let (db, copy) = (dir.path().join("socialite.db"), dir.path().join("copy.db"));
    let (mut server, base) = serve(&db);
    let api = Api::new(reqwest::Client::new(), &base);
    for user in ["ann", "bob", "cat"] {
        api.user(user).await;
    }
    let post = api.say("ann", "like it").await;
    for user in ["bob", "cat"] {
        let (status, body) = api.put(&format!("/v1/users/{user}/likes/{post}")).await;
        assert!(status.is_success(), "{status} {body}");
    }
    // Once the worker has made both like notifications, dismiss bob's.
    caught_up(&api, backup(&db, &copy)).await;
    let page = notifications(&api).await;
    let items = page["items"].as_array().unwrap().clone();
    assert_eq!(items.len(), 2, "{page}");
    let bobs = items.iter().find(|n| n["actor"]["id"] == "bob").unwrap();
    let path = format!(
        "/v1/users/ann/notifications/{}",
        bobs["id"].as_str().unwrap()
    );
    let (status, body) = api.delete(&path).await;
    assert!(status.is_success(), "{status} {body}");

    let head = backup(&db, &copy);
    caught_up(&api, head).await;
    let want = notifications(&api).await;
    assert_eq!(want["items"].as_array().unwrap().len(), 1, "{want}");
    assert_eq!(want["items"][0]["actor"]["id"], "cat", "{want}");

    // The store moves on: everything cleared.
    let (status, _) = api.delete("/v1/users/ann/notifications").await;
    assert!(status.is_success());
    assert_ne!(notifications(&api).await, want, "the store moved on");
    stop_server(&mut server);

    let run = restore(&db, &copy);
    assert!(run.ok, "{}", run.stderr);
    let (mut server, base) = serve(&db);
    let api = api.at(&base);
    caught_up(&api, head).await;
    assert_eq!(notifications(&api).await, want);
    stop_server(&mut server);
    let run = cli(&db, &["audit"]);
    assert!(run.ok, "the audit: {}{}", run.stdout, run.stderr);
    assert!(run.stdout.contains("audit clean"), "{}", run.stdout);
}
