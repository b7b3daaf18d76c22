//! Event ids across a restore: no id ever names two events. A client that read events
//! the backup does not hold (issued after it, before the restore) gets a 410 from
//! `/v1/events` and a `reset` from its stream, never a silent skip; one positioned in
//! the copy's history goes on; new events get ids never issued before, also on a new
//! machine whose old store is lost; and the workers resume from the copy's positions
//! without reading the retired ids as history lost.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use reqwest::StatusCode;
use serde_json::Value;
use socialite::domain::{EventId, now_ms};
use socialite::store::StoreError;
use socialite::store::embedded::restore::{RestoreOptions, Retired};
use socialite::store::embedded::{EmbeddedStore, Synchronous};

use super::common::{self, Api};
use super::restore::restore;
use super::sse::Client;
use super::{assert_derived_consistent, backup, caught_up, cli, serve, stop_server};

/// Every event of the log: id, type and payload.
async fn events(api: &Api) -> BTreeMap<u64, (String, Value)> {
    let mut all = BTreeMap::new();
    let mut path = "/v1/events?limit=1000".to_owned();
    loop {
        let (status, page) = api.get(&path).await;
        assert_eq!(status, StatusCode::OK, "{page}");
        let batch = page["events"].as_array().unwrap();
        if batch.is_empty() {
            return all;
        }
        for event in batch {
            let id: u64 = event["id"].as_str().unwrap().parse().unwrap();
            let kind = event["type"].as_str().unwrap().to_owned();
            all.insert(id, (kind, event["payload"].clone()));
        }
        path = format!(
            "/v1/events?limit=1000&after={}",
            page["next"].as_str().unwrap()
        );
    }
}

/// Waits until the log holds `count` `post.created` events; returns the log.
async fn posts_logged(api: &Api, count: usize) -> BTreeMap<u64, (String, Value)> {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let log = events(api).await;
        let posts = log.values().filter(|(k, _)| k == "post.created").count();
        if posts >= count {
            return log;
        }
        assert!(Instant::now() < deadline, "{posts} of {count} posts logged");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Every worker of the server at `api` counts no history lost.
async fn no_history_lost(api: &Api) {
    let (_, body) = api.get("/v1/workers").await;
    for worker in body["workers"].as_array().unwrap() {
        assert_eq!(worker["history_lost"], 0, "{worker}");
    }
}

/// The first message of `bob`'s stream resumed after `last`.
async fn first_streamed(api: &Api, base: &str, last: u64) -> super::sse::Message {
    let client = reqwest::Client::new();
    let token = Some(api.token("bob"));
    let mut stream = Client::open(&client, base, "bob", token, Some(&last.to_string())).await;
    tokio::time::timeout(Duration::from_secs(30), stream.next())
        .await
        .expect("a message")
        .expect("the stream is open")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_a_restore_no_id_names_two_events_and_positions_past_the_backup_are_reset() {
    let dir = tempfile::tempdir().unwrap();
    let (db, copy) = (dir.path().join("socialite.db"), dir.path().join("copy.db"));
    let (mut server, base) = serve(&db);
    let api = Api::new(reqwest::Client::new(), &base);
    for user in ["ann", "bob"] {
        api.user(user).await;
    }
    api.put("/v1/users/bob/following/ann").await;
    for i in 0..2 {
        api.say("ann", &format!("#restore before the backup {i}"))
            .await;
    }
    posts_logged(&api, 2).await;
    let head = backup(&db, &copy);
    for i in 0..3 {
        api.say("ann", &format!("#restore after the backup {i}"))
            .await;
    }
    let old = posts_logged(&api, 5).await;
    caught_up(&api, head + 3).await;
    stop_server(&mut server);
    let newest_old = *old.keys().last().unwrap();
    let in_copy = *old.range(..=head as u64).last().unwrap().0;
    let past_copy = *old.range(head as u64 + 1..).next().unwrap().0;

    let run = restore(&db, &copy);
    assert!(run.ok, "{}", run.stderr);
    assert!(run.stdout.contains("retired"), "{}", run.stdout);
    let (mut server, base) = serve(&db);
    let api = api.at(&base);
    caught_up(&api, head).await;
    for i in 0..5 {
        api.say("ann", &format!("#restore after the restore {i}"))
            .await;
    }
    let log = posts_logged(&api, 7).await;
    let newest = *log.keys().last().unwrap();
    caught_up(&api, newest as i64).await;

    // Each id names one event: the copy's as before, every new one above every old one.
    let new: Vec<u64> = log.keys().copied().filter(|id| *id > head as u64).collect();
    assert_eq!(new.len(), 5, "{log:?}");
    assert!(
        new[0] > newest_old,
        "new ids {new:?} above the old {newest_old}"
    );
    for (id, event) in log.range(..=head as u64) {
        assert_eq!(old.get(id), Some(event), "event {id} is the copy's");
    }
    // Past the copy: lost. In the copy: goes on with the new events.
    for lost in [past_copy, newest_old] {
        let (status, body) = api.get(&format!("/v1/events?after={lost}")).await;
        assert_eq!(status, StatusCode::GONE, "after={lost}: {body}");
        assert_eq!(first_streamed(&api, &base, lost).await.event, "reset");
    }
    let (status, page) = api.get(&format!("/v1/events?after={in_copy}")).await;
    assert_eq!(status, StatusCode::OK, "{page}");
    let ids: Vec<u64> = page["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["id"].as_str().unwrap().parse().unwrap())
        .collect();
    assert_eq!(ids, new, "after an id of the copy, the new events");
    let item = first_streamed(&api, &base, in_copy).await;
    assert_eq!(
        (item.event.as_str(), item.id),
        ("item", Some(new[0].to_string()))
    );

    // The workers went on from the copy's positions: nothing lost, everything derived.
    no_history_lost(&api).await;
    let (_, tag) = api.get("/v1/tags/restore").await;
    assert_eq!(tag["total"], 7, "{tag}");
    assert_derived_consistent(&db, &base, &api, &["ann".into(), "bob".into()]).await;
    stop_server(&mut server);
}

/// The old store is lost: the ids retired run up to the clock's floor, so a client of
/// the lost store is reset and new ids are above any it could have seen. A rebuild of
/// the aggregates right after, whose watermark is the change sequence, reads no loss.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restore_onto_a_new_machine_retires_every_id_below_the_clocks_floor() {
    let dir = tempfile::tempdir().unwrap();
    let (lost, copy) = (dir.path().join("lost.db"), dir.path().join("copy.db"));
    let db = dir.path().join("new-machine/socialite.db");
    let (mut server, base) = serve(&lost);
    let api = Api::new(reqwest::Client::new(), &base);
    api.user("ann").await;
    api.say("ann", "#restore in the copy").await;
    posts_logged(&api, 1).await;
    let head = backup(&lost, &copy);
    for i in 0..3 {
        api.say("ann", &format!("#restore lost {i}")).await;
    }
    let old = posts_logged(&api, 4).await;
    stop_server(&mut server);
    std::fs::remove_file(&lost).unwrap();

    let restored_at = now_ms();
    let run = restore(&db, &copy);
    assert!(run.ok, "{}", run.stderr);
    let run = cli(&db, &["aggregates", "rebuild"]);
    assert!(run.ok, "{}", run.stderr);
    let (mut server, base) = serve(&db);
    let api = api.at(&base);
    caught_up(&api, head).await;
    api.say("ann", "#restore new").await;
    let log = posts_logged(&api, 2).await;
    let newest = *log.keys().last().unwrap();
    assert!(
        newest > restored_at as u64 * 1000,
        "the new id {newest} is above the clock's floor"
    );
    caught_up(&api, newest as i64).await;
    for id in old.keys().filter(|id| **id > head as u64) {
        let (status, body) = api.get(&format!("/v1/events?after={id}")).await;
        assert_eq!(status, StatusCode::GONE, "after={id}: {body}");
    }
    no_history_lost(&api).await;
    let (_, tag) = api.get("/v1/tags/restore").await;
    assert_eq!(tag["total"], 2, "{tag}");
    stop_server(&mut server);
}

/// With a clock far behind (the floor below every id), the replaced store's newest id
/// is what is retired, exactly: one above it is the sequence, and the next change two.
#[tokio::test]
async fn the_replaced_stores_newest_id_is_retired_whatever_the_clock() {
    use socialite::store::embedded::backup::backup;
    use socialite::store::embedded::restore::restore;
    let dir = tempfile::tempdir().unwrap();
    let (db, copy) = (dir.path().join("socialite.db"), dir.path().join("copy.db"));
    let open = || {
        socialite::store::Store::new(std::sync::Arc::new(
            EmbeddedStore::open(&db, Synchronous::Normal).unwrap(),
        ))
    };
    let store = open();
    for user in ["a", "b", "c"] {
        common::create_user(&store, user).await;
    }
    drop(store);
    backup(&db, &copy, &mut |_| {}).unwrap();
    let store = open();
    for user in ["d", "e", "f"] {
        common::create_user(&store, user).await;
    }
    drop(store);

    let report = restore(&copy, &db, 0, RestoreOptions::default(), &mut |_| {}).unwrap();
    assert_eq!(
        report.retired,
        Some(Retired {
            after: 3,
            through: 6
        })
    );
    let store = open();
    for retired in [4, 6] {
        let read = store.events.events_after(Some(EventId(retired)), 10).await;
        assert!(
            matches!(read, Err(StoreError::PositionLost(_))),
            "{retired}: {read:?}"
        );
    }
    for kept in [0, 3, 7] {
        let read = store.events.events_after(Some(EventId(kept)), 10).await;
        assert!(read.is_ok(), "{kept}: {read:?}");
    }
    common::create_user(&store, "g").await;
    let head = store.change_feed.head().await.unwrap().unwrap();
    assert_eq!(head.0, "8", "the next change after the sequence");
}
