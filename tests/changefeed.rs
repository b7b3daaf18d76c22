//! The change feed as a worker sees it, on every backend: order across collections
//! while writers race a reader, a quiet collection that still resumes, and reads on
//! open streams that match fresh reads.
//!
//! This file holds the store handles and the reading helpers; order while writers race
//! a reader is in `changefeed/order.rs`, resuming from a saved position and history lost
//! (a position gone from the oplog, a dropped collection) in `changefeed/resume.rs`, and
//! reads on open streams and what a delete change carries in `changefeed/reads.rs`.

mod common;
#[path = "changefeed/order.rs"]
mod order;
#[path = "changefeed/reads.rs"]
mod reads;
#[path = "changefeed/resume.rs"]
mod resume;

use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{Kind, fresh_name, fresh_store, mongo_base_uri, mongo_uri_with_database};
use socialite::domain::{Change, ChangeOp, ChangePosition, NewUser, now_ms};
use socialite::store::mongo::MongoStore;
use socialite::store::{ChangeFeed, Store};

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
