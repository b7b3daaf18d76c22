//! What the feed keeps between reads: the detected mode, and open stream sets keyed by
//! the position they stand at. Also the oplog readings the feed needs.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};

use mongodb::Database;
use mongodb::bson::{Document, Timestamp, doc};
use mongodb::error::ErrorKind;
use tokio::sync::OnceCell;

use super::WATCHED;
use super::feed::Feed;
use super::position::Mode;
use crate::store::mongo::db_error;
use crate::store::{StoreError, StoreResult};

/// How many open stream sets to keep; beyond it the least recently used is closed.
const KEEP_OPEN: usize = 8;

/// Open change streams kept between reads, so that a reader that comes back with the
/// position it was last given continues on the same server cursors.
///
/// Several readers may read at different positions: each set is keyed by the position
/// it stands at (the empty string for a reader with no position yet). A read takes its
/// set out of the map, reads without holding the lock, and puts it back under the
/// position it handed out last. A read whose position matches no set opens one there.
#[derive(Default)]
pub(in crate::store::mongo) struct Streams {
    mode: OnceCell<Mode>,
    open: Mutex<Open>,
    /// Change streams opened by the feed, for tests that check reuse.
    opened: AtomicU64,
}

#[derive(Default)]
struct Open {
    clock: u64,
    sets: HashMap<String, (u64, Feed)>,
}

impl Streams {
    fn lock(&self) -> MutexGuard<'_, Open> {
        // A panic elsewhere cannot leave the map half-updated: every change is one call.
        self.open
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The mode, detected on first use and then remembered.
    pub(super) async fn mode(&self, db: &Database) -> StoreResult<Mode> {
        self.mode.get_or_try_init(|| detect(db)).await.copied()
    }

    pub(super) fn take(&self, key: &str) -> Option<Feed> {
        self.lock().sets.remove(key).map(|(_, feed)| feed)
    }

    pub(super) fn put(&self, key: String, feed: Feed) {
        let closed = {
            let mut open = self.lock();
            open.clock += 1;
            let now = open.clock;
            let replaced = open.sets.insert(key, (now, feed)).map(|(_, feed)| feed);
            let oldest = (open.sets.len() > KEEP_OPEN)
                .then(|| {
                    open.sets
                        .iter()
                        .min_by_key(|(_, (used, _))| *used)
                        .map(|(key, _)| key.clone())
                })
                .flatten();
            let evicted = oldest.and_then(|key| open.sets.remove(&key).map(|(_, feed)| feed));
            (replaced, evicted)
        };
        // Closing streams kills their cursors; do it outside the lock.
        drop(closed);
    }

    pub(super) fn count_opened(&self, streams: usize) {
        self.opened.fetch_add(streams as u64, Ordering::Relaxed);
    }

    pub(super) fn opened(&self) -> u64 {
        self.opened.load(Ordering::Relaxed)
    }
}

/// One database-level stream where the server has it in full, which it proves by
/// answering with a post-batch resume token; otherwise one stream per collection.
/// (The test stand-in accepts a database-level `$changeStream` but watches a
/// collection named "1" with it, and sends no post-batch tokens.)
async fn detect(db: &Database) -> StoreResult<Mode> {
    match db.watch().batch_size(0).await {
        Ok(stream) if stream.resume_token().is_some() => return Ok(Mode::Database),
        Ok(_) => tracing::info!(
            "database-level change streams come without post-batch tokens; \
             the change feed merges one stream per collection"
        ),
        Err(error) if matches!(*error.kind, ErrorKind::Command(_)) => tracing::info!(
            %error,
            "database-level change streams refused; the change feed merges one stream per collection"
        ),
        Err(error) => return Err(db_error(error)),
    }
    let probe = db
        .collection::<Document>(WATCHED[0].0)
        .watch()
        .batch_size(0)
        .await
        .map_err(db_error)?;
    Ok(Mode::Collections {
        post_batch_tokens: probe.resume_token().is_some(),
    })
}

/// The privilege the feed needs, named in every failure to read the oplog.
const GRANT: &str = "the change feed reads local.oplog.rs to find where history starts \
    (and, on servers without post-batch resume tokens, how far each stream is drained); \
    grant the connecting user read on it, e.g. the `read` role on the `local` database, \
    or a role with the `find` action on `local.oplog.rs`";

/// The cluster time of the oldest (`newest = false`) or newest oplog entry, `None` for
/// an empty oplog. An oplog that cannot be read is an error that says what to grant:
/// starting "now" instead would lose every change before it without a word.
pub(super) async fn oplog_entry(db: &Database, newest: bool) -> StoreResult<Option<Timestamp>> {
    let entry = db
        .client()
        .database("local")
        .collection::<Document>("oplog.rs")
        .find_one(doc! {})
        .sort(doc! { "$natural": if newest { -1 } else { 1 } })
        .projection(doc! { "ts": 1 })
        .await
        .map_err(|error| StoreError::Backend(anyhow::Error::new(error).context(GRANT)))?;
    match entry {
        None => Ok(None),
        Some(entry) => entry.get_timestamp("ts").map(Some).map_err(|error| {
            StoreError::Backend(anyhow::anyhow!("an oplog entry without a ts: {error}"))
        }),
    }
}
