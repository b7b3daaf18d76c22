//! A backup carries Mastodon's markers (a source): a store restored from it answers
//! the markers as they were when the copy was taken, and the next write moves on from
//! the copy's version; a copy whose markers were changed after the backup is refused,
//! naming the table.

use reqwest::StatusCode;
use serde_json::{Value, json};

use super::common::Api;
use super::restore::restore;
use super::{backup, serve, stop_server};

const MARKERS: &str = "/api/v1/markers?timeline[]=home&timeline[]=notifications";

async fn markers(http: &reqwest::Client, base: &str, token: &str) -> Value {
    let answer = http
        .get(format!("{base}{MARKERS}"))
        .bearer_auth(token)
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), StatusCode::OK);
    answer.json().await.unwrap()
}

async fn set(http: &reqwest::Client, base: &str, token: &str, home: &str) -> Value {
    let answer = http
        .post(format!("{base}/api/v1/markers"))
        .bearer_auth(token)
        .json(&json!({"home": {"last_read_id": home}}))
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), StatusCode::OK);
    answer.json().await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restored_backup_keeps_the_markers_and_refuses_them_changed() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("socialite.db");
    let (copy, changed) = (dir.path().join("copy.db"), dir.path().join("changed.db"));
    let (mut server, base) = serve(&db);
    let http = reqwest::Client::new();
    let api = Api::new(http.clone(), &base);
    api.user("ann").await;
    let token = api.token("ann");
    set(&http, &base, &token, "100").await;
    let second = set(&http, &base, &token, "200").await;
    assert_eq!(second["home"]["version"], 2, "{second}");
    let want = markers(&http, &base, &token).await;
    assert_eq!(want, second, "{want}");
    backup(&db, &copy);
    // The store moves on after the copy.
    let later = set(&http, &base, &token, "300").await;
    assert_eq!(later["home"]["version"], 3);
    stop_server(&mut server);

    // A copy whose marker was changed after the backup is refused, by name.
    std::fs::copy(&copy, &changed).unwrap();
    rusqlite::Connection::open(&changed)
        .unwrap()
        .execute("UPDATE markers SET last_read_id = '999'", [])
        .unwrap();
    let run = restore(&db, &changed);
    assert!(!run.ok, "a changed copy restored: {}", run.stdout);
    assert!(run.stderr.contains("markers"), "{}", run.stderr);

    let run = restore(&db, &copy);
    assert!(run.ok, "{}", run.stderr);
    let (mut server, base) = serve(&db);
    assert_eq!(markers(&http, &base, &token).await, want);
    let next = set(&http, &base, &token, "400").await;
    assert_eq!(
        next["home"]["version"], 3,
        "moves on from the copy's: {next}"
    );
    stop_server(&mut server);
}
