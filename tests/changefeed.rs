//! The change feed as a worker sees it, on every backend: order across collections
//! while writers race a reader, a quiet collection that still resumes, and reads on
//! open streams that match fresh reads.

mod common;

use std::collections::HashSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use common::{Kind, fresh_name, fresh_store, kinds, mongo_base_uri, mongo_uri_with_database};
use mongodb::bson::doc;
use serde_json::{Value, json};
use socialite::domain::{Change, ChangeOp, ChangePosition, NewUser, now_ms};
use socialite::store::mongo::MongoStore;
use socialite::store::{ChangeFeed, Store, StoreError};

/// How long any polling loop may run before the test fails.
const DEADLINE: Duration = Duration::from_secs(60);

fn new_user(id: &str) -> NewUser {
    NewUser {
        id: id.into(),
        display_name: id.into(),
        created_at_ms: now_ms(),
    }
}

/// A store on its own database. On MongoDB, also the adapter itself (for its stream
/// counter) and the URI, so that a second store can read the same database.
struct Handle {
    store: Store,
    mongo: Option<(Arc<MongoStore>, String)>,
    _guard: Option<common::TestStore>,
}

async fn handle(kind: Kind) -> Handle {
    match kind {
        Kind::Embedded => {
            let t = fresh_store(kind).await;
            Handle {
                store: t.store.clone(),
                mongo: None,
                _guard: Some(t),
            }
        }
        Kind::Mongo => {
            let base = mongo_base_uri().expect("MongoDB URI");
            let uri = mongo_uri_with_database(&base, &fresh_name("feed"));
            let mongo = Arc::new(MongoStore::connect(&uri).await.expect("connecting"));
            Handle {
                store: Store::new(mongo.clone()),
                mongo: Some((mongo, uri)),
                _guard: None,
            }
        }
    }
}

impl Handle {
    /// A feed with no open streams of its own: a second store on the same database on
    /// MongoDB; the same store on the embedded backend, which keeps no streams.
    async fn fresh_feed(&self) -> Arc<dyn ChangeFeed> {
        match &self.mongo {
            Some((_, uri)) => Arc::new(MongoStore::connect(uri).await.expect("connecting")),
            None => self.store.change_feed.clone(),
        }
    }
}

/// Reads on from `position` in batches of `limit` until `done` holds for everything
/// read so far, failing at the deadline.
async fn read_until(
    feed: &dyn ChangeFeed,
    position: &mut Option<ChangePosition>,
    limit: usize,
    done: impl Fn(&[Change]) -> bool,
) -> Vec<Change> {
    let deadline = Instant::now() + DEADLINE;
    let mut read = Vec::new();
    while !done(&read) {
        assert!(Instant::now() < deadline, "gave up waiting; read {read:#?}");
        let batch = feed.changes(position.as_ref(), limit).await.unwrap();
        if let Some(last) = batch.last() {
            *position = Some(last.position.clone());
        }
        read.extend(batch);
    }
    read
}

/// Reads on until a read comes back empty.
async fn read_to_end(feed: &dyn ChangeFeed, position: &mut Option<ChangePosition>) -> Vec<Change> {
    let mut read = Vec::new();
    loop {
        let batch = feed.changes(position.as_ref(), 50).await.unwrap();
        let Some(last) = batch.last() else {
            return read;
        };
        *position = Some(last.position.clone());
        read.extend(batch);
    }
}

fn inserts<'a>(changes: &'a [Change], collection: &str) -> Vec<&'a str> {
    changes
        .iter()
        .filter(|c| c.op == ChangeOp::Insert && c.collection == collection)
        .map(|c| c.key.as_str())
        .collect()
}

/// The changes without their positions, which may differ and still be equivalent.
fn payload(changes: &[Change]) -> Vec<Value> {
    let strip = |c: &Change| json!([c.collection, c.op, c.key, c.document]);
    changes.iter().map(strip).collect()
}

/// What a reader must have seen once every write is in: each user and post inserted
/// exactly once, no change twice, and nothing about a user (a post, a counter update)
/// before that user's insert.
fn check_reader(label: &str, read: &[Change], users: &HashSet<String>, posts: &HashSet<String>) {
    for (collection, written) in [("users", users), ("posts", posts)] {
        let read = inserts(read, collection);
        assert_eq!(read.len(), written.len(), "{label}: no {collection} twice");
        let read: HashSet<String> = read.into_iter().map(str::to_owned).collect();
        assert_eq!(&read, written, "{label}: every one of {collection}");
    }
    let positions: HashSet<_> = read.iter().map(|c| &c.position).collect();
    assert_eq!(positions.len(), read.len(), "{label}: no change twice");

    let mut created = HashSet::new();
    let mut early = Vec::new();
    for (index, change) in read.iter().enumerate() {
        let author = match (change.collection.as_str(), change.op) {
            ("users", ChangeOp::Insert) => {
                created.insert(change.key.clone());
                continue;
            }
            ("users", _) => change.key.clone(),
            ("posts", ChangeOp::Insert) => {
                let document = change.document.as_ref().expect("a post's document");
                document["author"].as_str().unwrap().to_owned()
            }
            _ => continue,
        };
        if !created.contains(&author) {
            early.push((index, author));
        }
    }
    assert!(early.is_empty(), "{label}: before their user: {early:?}");
}

fn insert_count(changes: &[Change]) -> usize {
    changes.iter().filter(|c| c.op == ChangeOp::Insert).count()
}

/// Waits, up to the deadline, until `seen` reaches `count`.
async fn until_seen(seen: &AtomicUsize, count: usize) {
    let deadline = Instant::now() + DEADLINE;
    while seen.load(Ordering::SeqCst) < count {
        assert!(Instant::now() < deadline, "the reader never caught up");
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn users_come_before_their_posts_while_a_reader_reads_concurrently() {
    const WRITERS: usize = 4;
    const ROUNDS: usize = 12;
    const POSTS: usize = 2;
    for kind in kinds("users_come_before_their_posts_while_a_reader_reads_concurrently") {
        let h = handle(kind).await;
        let wanted = WRITERS * ROUNDS * (1 + POSTS);
        // One reader pages through with a small limit. The other takes all there is and
        // sets the pace: each round of writes starts once it has read the last, so that
        // writes land while it reads at the head of the feed, where order is decided.
        let head = Arc::new(AtomicUsize::new(0));
        let readers: Vec<_> = [(3, None), (500, Some(head.clone()))]
            .into_iter()
            .map(|(limit, progress)| {
                let feed = h.store.change_feed.clone();
                tokio::spawn(async move {
                    let mut position = None;
                    let read = read_until(feed.as_ref(), &mut position, limit, |read| {
                        if let Some(progress) = &progress {
                            progress.store(insert_count(read), Ordering::SeqCst);
                        }
                        insert_count(read) >= wanted
                    })
                    .await;
                    (limit, read, position)
                })
            })
            .collect();
        let mut users = HashSet::new();
        let mut posts = HashSet::new();
        for round in 0..ROUNDS {
            let writers: Vec<_> = (0..WRITERS)
                .map(|w| {
                    let store = h.store.clone();
                    let id = format!("w{w}r{round}");
                    tokio::spawn(async move {
                        store.users.create_user(&new_user(&id)).await.unwrap();
                        let mut posts = Vec::new();
                        for p in 0..POSTS {
                            let text = format!("{p}");
                            let post = store.content.insert_post(&id, &text, now_ms());
                            posts.push(post.await.unwrap().post.id.to_string());
                        }
                        (id, posts)
                    })
                })
                .collect();
            for writer in writers {
                let (id, new) = writer.await.unwrap();
                users.insert(id);
                posts.extend(new);
            }
            until_seen(&head, users.len() + posts.len()).await;
        }
        for reader in readers {
            let (limit, mut read, mut position) = reader.await.unwrap();
            // What is left (counter updates on MongoDB) must not repeat an insert.
            read.extend(read_to_end(h.store.change_feed.as_ref(), &mut position).await);
            check_reader(&format!("{kind:?}, limit {limit}"), &read, &users, &posts);
        }
    }
}

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
            let post = store.content.insert_post("a", "churn", now_ms());
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
async fn reads_on_open_streams_match_fresh_reads() {
    for kind in kinds("reads_on_open_streams_match_fresh_reads") {
        let h = handle(kind).await;
        let store = &h.store;
        for id in ["r1", "r2", "r3"] {
            store.users.create_user(&new_user(id)).await.unwrap();
        }
        store.graph.follow("r1", "r2", now_ms()).await.unwrap();
        let mut doomed = None;
        for i in 0..12 {
            let author = ["r2", "r3"][i % 2];
            let post = store.content.insert_post(author, "x", now_ms());
            doomed = Some(post.await.unwrap().post.id);
        }
        store.users.rename_user("r1", "Renata").await.unwrap();
        store.content.delete_post(doomed.unwrap()).await.unwrap();
        store.graph.unfollow("r1", "r2").await.unwrap();

        let mut position: Option<ChangePosition> = None;
        let mut reads = 0;
        let mut all = Vec::new();
        let mut opened_after_first = None;
        loop {
            let batch = store.change_feed.changes(position.as_ref(), 3);
            let batch = batch.await.unwrap();
            let fresh = h.fresh_feed().await;
            let again = fresh.changes(position.as_ref(), 3).await.unwrap();
            assert_eq!(payload(&batch), payload(&again), "{kind:?}: read {reads}");
            if let Some((mongo, _)) = &h.mongo {
                opened_after_first.get_or_insert(mongo.change_streams_opened());
            }
            reads += 1;
            let Some(last) = batch.last() else { break };
            position = Some(last.position.clone());
            all.extend(batch);
            assert!(reads < 1_000, "the feed never ran dry");
        }
        assert!(reads > 5, "{kind:?}: enough reads to matter: {reads}");
        assert_eq!(inserts(&all, "posts").len(), 12, "{kind:?}");
        let unfollowed = all
            .iter()
            .any(|c| c.op == ChangeOp::Delete && c.key == "r1/r2");
        assert!(unfollowed, "{kind:?}: the whole history");
        if let Some((mongo, _)) = &h.mongo {
            assert_eq!(
                Some(mongo.change_streams_opened()),
                opened_after_first,
                "{kind:?}: {reads} reads, streams opened once"
            );
        }
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

/// A post's delete change carries the deleted post, in the insert's shape, so a worker
/// knows whose post it was (the counters worker recounts that author).
#[tokio::test]
async fn a_post_delete_change_carries_the_deleted_post() {
    for kind in kinds("a_post_delete_change_carries_the_deleted_post") {
        let h = handle(kind).await;
        h.store.users.create_user(&new_user("del")).await.unwrap();
        let post = h
            .store
            .content
            .insert_post("del", "short-lived", now_ms())
            .await
            .unwrap()
            .post;
        h.store.content.delete_post(post.id).await.unwrap().unwrap();
        let key = post.id.to_string();
        let mut position = None;
        let read = read_until(h.store.change_feed.as_ref(), &mut position, 50, |read| {
            read.iter()
                .any(|c| c.op == ChangeOp::Delete && c.key == key)
        })
        .await;
        let posts: Vec<&Change> = read.iter().filter(|c| c.key == key).collect();
        let (insert, delete) = (posts[0], posts[posts.len() - 1]);
        assert_eq!((insert.op, delete.op), (ChangeOp::Insert, ChangeOp::Delete));
        let deleted = delete
            .document
            .clone()
            .expect("the delete carries the post");
        assert_eq!(deleted["author"], "del", "{kind:?}: {deleted}");
        assert_eq!(
            Some(&deleted),
            insert.document.as_ref(),
            "{kind:?}: the insert's shape"
        );
    }
}
