//! A backup taken while several clients post and follow through HTTP: the copy holds
//! every write acknowledged before the backup began and none sent after it ended, and
//! restores to a store whose workers catch up and whose derived data agrees with it.

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use reqwest::StatusCode;

use super::common::Api;
use super::{
    all_pages, assert_derived_consistent, backup, caught_up, cli, leases, serve, stop_server,
};

/// An acknowledged write of the load, and when it was sent and answered.
#[derive(Debug, Clone)]
enum Write {
    Post { id: String, text: String },
    Follow { from: String, to: String },
}

struct Acked {
    write: Write,
    sent: Instant,
    acked: Instant,
}

/// Posts as `me`, and follows `others` every third write, until `stop`.
async fn write_load(
    api: Api,
    me: String,
    others: Vec<String>,
    stop: Arc<AtomicBool>,
    log: Arc<Mutex<Vec<Acked>>>,
) {
    for i in 0.. {
        if stop.load(Ordering::Relaxed) {
            return;
        }
        let sent = Instant::now();
        let write = if i % 3 == 2 {
            let to = others[(i / 3) % others.len()].clone();
            let (status, body) = api.put(&format!("/v1/users/{me}/following/{to}")).await;
            assert_eq!(status, StatusCode::NO_CONTENT, "{body}");
            Write::Follow {
                from: me.clone(),
                to,
            }
        } else {
            let text = format!("{me} says {i}");
            let id = api.say(&me, &text).await;
            Write::Post { id, text }
        };
        let acked = Instant::now();
        log.lock().unwrap().push(Acked { write, sent, acked });
    }
}

async fn wait_for(what: &str, mut condition: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !condition() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_backup_under_load_restores_every_acknowledged_write_and_consistent_derived_data() {
    let dir = tempfile::tempdir().unwrap();
    let (source, copy, restored) = (
        dir.path().join("live.db"),
        dir.path().join("copy.db"),
        dir.path().join("restored/socialite.db"),
    );
    let (mut live, base) = serve(&source);
    let api = Api::new(reqwest::Client::new(), &base);
    let writers: Vec<String> = (0..6).map(|i| format!("w{i}")).collect();
    let readers = ["cached".to_owned(), "cold".to_owned()];
    for user in writers.iter().chain(&readers) {
        api.user(user).await;
    }
    for writer in &writers {
        for reader in &readers {
            api.put(&format!("/v1/users/{reader}/following/{writer}"))
                .await;
        }
        for i in 0..10 {
            api.say(writer, &format!("{writer} before the load {i}"))
                .await;
        }
    }
    // A timeline cache that the load's posts are pushed into, copied mid-push.
    assert_eq!(api.get("/v1/users/cached/timeline").await.0, StatusCode::OK);

    let stop = Arc::new(AtomicBool::new(false));
    let log = Arc::new(Mutex::new(Vec::new()));
    let tasks: Vec<_> = writers
        .iter()
        .map(|me| {
            let others = writers.iter().filter(|w| *w != me).cloned().collect();
            let task = write_load(api.at(&base), me.clone(), others, stop.clone(), log.clone());
            tokio::spawn(task)
        })
        .collect();
    wait_for("writes before the backup", || {
        log.lock().unwrap().len() >= 30
    })
    .await;
    let began = Instant::now();
    let (source_, copy_) = (source.clone(), copy.clone());
    let head = tokio::task::spawn_blocking(move || backup(&source_, &copy_))
        .await
        .unwrap();
    let ended = Instant::now();
    wait_for("writes after the backup", || {
        log.lock()
            .unwrap()
            .iter()
            .filter(|w| w.sent > ended)
            .count()
            >= 12
    })
    .await;
    stop.store(true, Ordering::Relaxed);
    for task in tasks {
        task.await.unwrap();
    }
    stop_server(&mut live);

    let log = std::mem::take(&mut *log.lock().unwrap());
    let before: Vec<&Write> = log
        .iter()
        .filter(|w| w.acked < began)
        .map(|w| &w.write)
        .collect();
    let after: Vec<&Write> = log
        .iter()
        .filter(|w| w.sent > ended)
        .map(|w| &w.write)
        .collect();
    eprintln!(
        "{} writes: {} acknowledged before the backup, {} sent after it",
        log.len(),
        before.len(),
        after.len()
    );
    let run = cli(&restored, &["restore", "--from", copy.to_str().unwrap()]);
    assert!(run.ok, "restore failed: {}", run.stderr);
    assert!(
        leases(&restored)
            .iter()
            .all(|(_, holder, _)| holder.is_none()),
        "the copy's lease holders are cleared: {:?}",
        leases(&restored)
    );

    let (mut server, base) = serve(&restored);
    let api = api.at(&base);
    caught_up(&api, head).await;
    let mut following: HashSet<(String, String)> = HashSet::new();
    for writer in &writers {
        let (status, _) = api.get(&format!("/v1/users/{writer}")).await;
        assert_eq!(status, StatusCode::OK, "{writer}");
        for to in all_pages(
            &api,
            &format!("/v1/users/{writer}/following"),
            "cursor",
            "id",
        )
        .await
        {
            following.insert((writer.clone(), to));
        }
    }
    for write in &before {
        match write {
            Write::Post { id, text } => {
                let (status, post) = api.get(&format!("/v1/posts/{id}")).await;
                assert_eq!(
                    status,
                    StatusCode::OK,
                    "post {id} acknowledged before the backup"
                );
                assert_eq!(post["text"], text.as_str());
            }
            Write::Follow { from, to } => assert!(
                following.contains(&(from.clone(), to.clone())),
                "follow {from} -> {to} acknowledged before the backup"
            ),
        }
    }
    for write in &after {
        if let Write::Post { id, .. } = write {
            let (status, _) = api.get(&format!("/v1/posts/{id}")).await;
            assert_eq!(
                status,
                StatusCode::NOT_FOUND,
                "post {id} sent after the backup"
            );
        }
    }
    let users: Vec<String> = writers.iter().chain(&readers).cloned().collect();
    assert_derived_consistent(&restored, &base, &api, &users).await;
    stop_server(&mut server);
}
