//! Resuming and history lost: a quiet collection resumes from a saved position after
//! others churn (and a position gone from a real oplog is history lost), and a dropped
//! collection is history lost.

use std::time::Instant;

use mongodb::bson::doc;
use socialite::domain::{ChangeOp, ChangePosition, now_ms};
use socialite::store::StoreError;

use super::{DEADLINE, handle, inserts, new_user, read_to_end, read_until};
use crate::common::kinds;

fn lost<T>(result: &Result<T, StoreError>) -> bool {
    matches!(result, Err(StoreError::HistoryLost(_)))
}

/// Whether the MongoDB under test is a real server rather than the stand-in, which
/// answers `buildInfo` without a `gitVersion`.
async fn real_mongodb(uri: &str) -> bool {
    let client = mongodb::Client::with_uri_str(uri).await.unwrap();
    let info = client
        .database("admin")
        .run_command(doc! { "buildInfo": 1 })
        .await
        .unwrap();
    info.contains_key("gitVersion")
}

/// `position` with the cluster time of its MongoDB resume token moved back to 1970, a
/// point long gone from any oplog; `None` if it holds no such token. (A token's `_data`
/// starts with byte 130 and the cluster time, as hex.)
fn aged(position: &ChangePosition) -> Option<ChangePosition> {
    let (head, tail) = position.0.split_once(r#""_data":"82"#)?;
    let rest = tail.get(16..)?;
    let aged = format!(r#"{head}"_data":"820000000100000001{rest}"#);
    Some(ChangePosition(aged))
}

#[tokio::test]
async fn a_quiet_collection_resumes_after_others_churn() {
    for kind in kinds("a_quiet_collection_resumes_after_others_churn") {
        let h = handle(kind).await;
        let store = &h.store;
        // The follow graph stays quiet: on MongoDB every post also updates its author,
        // so `users` churns along with `content`.
        store.users.create_user(&new_user("a")).await.unwrap();
        store.users.create_user(&new_user("b")).await.unwrap();
        let mut position = None;
        let start = read_to_end(store.change_feed.as_ref(), &mut position).await;
        assert_eq!(inserts(&start, "users"), ["a", "b"], "{kind:?}");

        const POSTS: usize = 60;
        for _ in 0..POSTS {
            let post = store.content.insert_post("a", "churn", None, now_ms());
            post.await.unwrap();
        }
        let churn = read_until(store.change_feed.as_ref(), &mut position, 7, |read| {
            inserts(read, "posts").len() >= POSTS
        })
        .await;
        assert_eq!(inserts(&churn, "posts").len(), POSTS, "{kind:?}");
        assert!(inserts(&churn, "users").is_empty(), "{kind:?}: {churn:#?}");
        assert!(churn.iter().all(|c| c.collection != "follows"), "{kind:?}");

        // A reader that comes back later, with no streams open, resumes from there.
        store.graph.follow("a", "b", now_ms()).await.unwrap();
        store.users.create_user(&new_user("c")).await.unwrap();
        let fresh = h.fresh_feed().await;
        let saved = position.clone().expect("a position");
        let mut resumed = Some(saved.clone());
        let after = read_until(fresh.as_ref(), &mut resumed, 5, |read| {
            read.iter().any(|c| c.collection == "users" && c.key == "c")
        })
        .await;
        let after = [after, read_to_end(fresh.as_ref(), &mut resumed).await].concat();
        let inserted: Vec<_> = after
            .iter()
            .filter(|c| c.op == ChangeOp::Insert)
            .map(|c| (c.collection.as_str(), c.key.as_str()))
            .collect();
        let wanted = [("follows", "a/b"), ("users", "c")];
        assert_eq!(inserted, wanted, "{kind:?}: once each, in order");

        // On a real server, a position gone from the oplog is a real 286: history lost.
        let Some((_, uri)) = &h.mongo else { continue };
        if !real_mongodb(uri).await {
            eprintln!("SKIPPED: needs a real MongoDB (oplog rollover)");
            continue;
        }
        let gone = aged(&saved).expect("real MongoDB positions hold resume tokens");
        let result = h.fresh_feed().await.changes(Some(&gone), 10).await;
        assert!(lost(&result), "{result:?}");
    }
}
#[tokio::test]
async fn a_dropped_collection_is_history_lost() {
    for kind in kinds("a_dropped_collection_is_history_lost") {
        let h = handle(kind).await;
        let Some((_, uri)) = &h.mongo else { continue };
        h.store.users.create_user(&new_user("d")).await.unwrap();
        let mut position = None;
        let read = read_to_end(h.store.change_feed.as_ref(), &mut position).await;
        assert_eq!(inserts(&read, "users"), ["d"]);

        let client = mongodb::Client::with_uri_str(uri).await.unwrap();
        let db = client.default_database().expect("a database in the URI");
        let users = db.collection::<mongodb::bson::Document>("users");
        users.drop().await.unwrap();
        let deadline = Instant::now() + DEADLINE;
        loop {
            assert!(Instant::now() < deadline, "the drop never surfaced");
            let read = h.store.change_feed.changes(position.as_ref(), 10).await;
            if lost(&read) {
                break;
            }
            assert!(read.unwrap().is_empty(), "nothing new but the drop");
        }
        // It stays lost for a reader at that position, on open streams or fresh ones.
        let again = h.fresh_feed().await.changes(position.as_ref(), 10).await;
        assert!(lost(&again), "{again:?}");
    }
}
