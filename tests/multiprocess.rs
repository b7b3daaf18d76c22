//! Several real server processes on one store (an embedded file, or one MongoDB): the lease makes
//! one of them run each worker; `kill -9` of that holder hands the work to another within about a
//! lease period, and after catch-up nothing is lost or doubled.

mod common;

use std::process::Child;
use std::time::{Duration, Instant};

use common::{Api, Kind, fresh_name, kinds, mongo_base_uri, mongo_uri_with_database, start_binary};
use reqwest::StatusCode;

/// Which of `apis` holds the activity worker's lease, polling until one does.
async fn holder(apis: &[Api]) -> usize {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        for (i, api) in apis.iter().enumerate() {
            let (_, body) = api.get("/v1/workers").await;
            if body["workers"].as_array().is_some_and(|w| {
                w.iter()
                    .any(|w| w["name"] == "activity" && w["held_here"] == true)
            }) {
                return i;
            }
        }
        assert!(Instant::now() < deadline, "no process took the lease");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn killing_the_lease_holder_hands_the_work_over_without_loss_or_doubling() {
    for kind in kinds("killing_the_lease_holder_hands_the_work_over") {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("shared.db");
        let mut storage: Vec<(&str, std::ffi::OsString)> =
            vec![("SOCIALITE_STORAGE__PATH", db.clone().into_os_string())];
        if kind == Kind::Mongo {
            let uri = mongo_uri_with_database(&mongo_base_uri().unwrap(), &fresh_name("procs"));
            storage.push(("SOCIALITE_STORAGE__BACKEND", "mongodb".into()));
            storage.push(("SOCIALITE_STORAGE__MONGODB_URI", uri.into()));
        }
        three_processes_and_a_kill(&storage).await;
    }
}

async fn three_processes_and_a_kill(storage: &[(&str, std::ffi::OsString)]) {
    let client = reqwest::Client::new();
    let mut processes: Vec<(Child, Api)> = Vec::new();
    let credentials = Api::new(client.clone(), "");
    for _ in 0..3 {
        let (child, base) = start_binary(
            &[],
            &storage
                .iter()
                .map(|(k, v)| (*k, v.as_os_str()))
                .chain([
                    ("SOCIALITE_WORKERS__LEASE_TTL", "2s".as_ref()),
                    ("SOCIALITE_WORKERS__REFRESH_INTERVAL", "300ms".as_ref()),
                ])
                .collect::<Vec<_>>(),
        );
        processes.push((child, credentials.at(base)));
    }
    processes[0].1.user("poster").await;

    let apis: Vec<Api> = processes
        .iter()
        .map(|(_, api)| api.at(api_base(api)))
        .collect();
    let first = holder(&apis).await;
    let mut posted = Vec::new();
    // Posts through every process, then kill -9 the holder mid-stream and go on
    // posting through the survivors.
    for i in 0..30 {
        if i == 15 {
            processes[first].0.kill().expect("SIGKILL");
            processes[first].0.wait().unwrap();
        }
        let mut target = i % 3;
        if i >= 15 && target == first {
            target = (first + 1) % 3;
        }
        posted.push(
            processes[target]
                .1
                .say("poster", &format!("post {i}"))
                .await,
        );
    }
    let survivors: Vec<Api> = (0..3)
        .filter(|i| *i != first)
        .map(|i| processes[i].1.at(api_base(&processes[i].1)))
        .collect();
    let second = holder(&survivors).await;

    // Catch-up: poll the log (bounded) until every post is there.
    let reader = &survivors[second];
    let deadline = Instant::now() + Duration::from_secs(60);
    let log = loop {
        let (status, log) = reader.get("/v1/users/poster/activity?limit=100").await;
        assert_eq!(status, StatusCode::OK);
        if log["total"].as_u64() >= Some(posted.len() as u64) || Instant::now() > deadline {
            break log;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let mut refs: Vec<String> = log["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["ref"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(
        log["total"].as_u64(),
        Some(posted.len() as u64),
        "nothing doubled: {log}"
    );
    refs.sort();
    posted.sort();
    assert_eq!(refs, posted, "every post once, none lost");
    let (_, workers) = reader.get("/v1/workers").await;
    eprintln!("after the kill: {workers}");
    for (mut child, _) in processes {
        let _ = child.kill();
        let _ = child.wait();
    }
}

fn api_base(api: &Api) -> String {
    api.base().to_owned()
}
