//! The port's change feed as MongoDB change streams over `users`, `follows`, `likes`,
//! `content` and `reposts`.
//!
//! - **Mode**, detected once per store: one database-level stream filtered on
//!   `ns.coll` where the server has it (it answers with a post-batch resume token), so
//!   the server orders events across collections; otherwise (the test stand-in) one
//!   stream per collection, merged in cluster-time order under a watermark (`merge.rs`).
//! - **Positions** record where every stream stands after each change (`position.rs`):
//!   the last event's token, the post-batch token after a stream drains, or, on a
//!   server without post-batch tokens, the cluster time up to which a drained stream is
//!   complete. So a quiet collection's position moves on with the others'.
//! - **No position** starts every stream at the oldest oplog entry, read just before
//!   the streams are opened (a `startAtOperationTime` older than the oplog is accepted
//!   without an error, SERVER-50903), provided the oplog still reaches back to the
//!   database's birth (`birth.rs`); otherwise it is `HistoryLost`. An oplog that cannot
//!   be read is an error that names the privilege to grant, never a silent start at
//!   "now".
//! - **History lost**: a position that has rolled off the oplog (server error 286, or a
//!   cluster-time mark older than the oldest entry), and an invalidate, drop or rename
//!   of a watched collection, are `HistoryLost`.
//! - **Open streams are reused** between reads (`streams.rs`).

mod birth;
mod feed;
mod merge;
mod position;
mod streams;

use std::collections::HashMap;
use std::time::Duration;

use async_trait::async_trait;
use mongodb::Database;
use mongodb::bson::{Bson, Document, Timestamp, doc, oid::ObjectId};
use mongodb::change_stream::event::{ChangeStreamEvent, OperationType};
use mongodb::error::ErrorKind;

pub(super) use self::birth::record as record_birth;
use self::feed::Feed;
use self::position::{Mark, Mode};
pub(super) use self::streams::Streams;
use self::streams::oplog_entry;
use super::content::DELETED_POSTS;
use super::{MongoStore, all, db_error, error_code, post_from, user_from};
use crate::domain::{COUNTER_UPDATES, Change, ChangeOp, ChangePosition};
use crate::store::{ChangeFeed, StoreError, StoreResult};

/// The collections the feed watches, and the name each has in the feed. The one list:
/// renaming a collection is a change to this line.
const WATCHED: [(&str, &str); 5] = [
    ("users", "users"),
    ("follows", "follows"),
    ("likes", "likes"),
    ("content", "posts"),
    ("reposts", "reposts"),
];

const CHANGE_STREAM_HISTORY_LOST: i32 = 286;
const INVALID_RESUME_TOKEN: i32 = 260;
/// How long a read waits for changes that are not there yet.
const MAX_AWAIT: Duration = Duration::from_millis(200);
/// The most events a read fetches per stream, whatever the limit asked for.
const MAX_FETCH: usize = 1000;

fn history_lost(position: Option<&ChangePosition>, why: &str) -> StoreError {
    let at = position.map_or("(the start)", |p| p.0.as_str());
    StoreError::HistoryLost(format!("{at} ({why})"))
}

fn map_error(error: mongodb::error::Error, position: Option<&ChangePosition>) -> StoreError {
    match error_code(&error) {
        Some(CHANGE_STREAM_HISTORY_LOST) => {
            history_lost(position, "it is no longer in the oplog, error 286")
        }
        Some(INVALID_RESUME_TOKEN) if position.is_some() => {
            StoreError::InvalidPosition(position.map(|p| p.0.clone()).unwrap_or_default())
        }
        _ => db_error(error),
    }
}

fn key_of(value: Option<&Bson>) -> Option<String> {
    match value {
        Some(Bson::String(key)) => Some(key.clone()),
        Some(Bson::ObjectId(id)) => Some(id.to_hex()),
        // A like's `{u, p}`.
        Some(Bson::Document(id)) => match (id.get_str("u"), id.get_object_id("p")) {
            (Ok(user), Ok(post)) => Some(format!("{user}/{}", post.to_hex())),
            _ => None,
        },
        _ => None,
    }
}

/// A change as the feed carries it, without its position.
type Converted = (&'static str, ChangeOp, String, Option<serde_json::Value>);

/// The change without its position (and the collection it is filed under), or `None`
/// for events the feed does not carry.
fn to_change(
    collection: &'static str,
    event: &ChangeStreamEvent<Document>,
) -> StoreResult<Option<Converted>> {
    let op = match event.operation_type {
        OperationType::Insert => ChangeOp::Insert,
        OperationType::Update | OperationType::Replace => ChangeOp::Update,
        OperationType::Delete => ChangeOp::Delete,
        _ => return Ok(None),
    };
    // Counter updates (a request's `$inc`, a recount's `$set`) are not changes of the
    // profile: they are filed under `COUNTER_UPDATES`, so a `users` update always means a
    // rename, as on the embedded store. They stay in the feed because the counters
    // worker must recount after an `$inc` that landed after its last recount.
    let collection = if collection == "users"
        && op == ChangeOp::Update
        && event
            .update_description
            .as_ref()
            .is_some_and(|d| !d.updated_fields.contains_key("display_name"))
    {
        COUNTER_UPDATES
    } else {
        collection
    };
    let full = event.full_document.as_ref();
    let key = key_of(event.document_key.as_ref().and_then(|k| k.get("_id")))
        .or_else(|| key_of(full.and_then(|d| d.get("_id"))));
    let Some(key) = key else {
        tracing::debug!(?event.operation_type, collection, "skipping a change without a key");
        return Ok(None);
    };
    let document = match (op, full) {
        (ChangeOp::Delete, _) | (_, None) => None,
        (_, Some(doc)) => Some(
            match collection {
                "users" | COUNTER_UPDATES => serde_json::to_value(user_from(doc)?),
                "posts" => serde_json::to_value(post_from(doc)?),
                "reposts" => serde_json::to_value(super::reposts::repost_from(doc)?),
                "likes" => {
                    let id = doc.get_document("_id").ok();
                    Ok(serde_json::json!({
                        "user": id.and_then(|d| d.get_str("u").ok()).unwrap_or_default(),
                        "post": id.and_then(|d| d.get_object_id("p").ok()).map(|p| p.to_hex()),
                    }))
                }
                _ => Ok(serde_json::json!({
                    "follower": doc.get_str("from").unwrap_or_default(),
                    "followee": doc.get_str("to").unwrap_or_default(),
                })),
            }
            .map_err(|e| StoreError::Backend(e.into()))?,
        ),
    };
    Ok(Some((collection, op, key, document)))
}

/// `HistoryLost` if the oplog no longer reaches back to a cluster-time mark. (Token
/// marks are checked by the server, which answers 286.)
async fn check_retained(
    db: &Database,
    marks: &[Mark],
    after: Option<&ChangePosition>,
) -> StoreResult<()> {
    let Some(earliest) = marks
        .iter()
        .filter_map(|mark| match mark {
            Mark::From(time) => Some(*time),
            Mark::After(_) => None,
        })
        .min()
    else {
        return Ok(());
    };
    match oplog_entry(db, false).await? {
        Some(oldest) if oldest > earliest => Err(history_lost(
            after,
            "the oplog no longer reaches back to it",
        )),
        _ => Ok(()),
    }
}

/// The open set for `key`, or a new one at `start` (the oldest oplog entry when there is
/// no position); `None` when there is no position and nothing has ever been written.
async fn open(
    db: &Database,
    streams: &Streams,
    mode: Mode,
    start: Option<Vec<Mark>>,
    after: Option<&ChangePosition>,
) -> StoreResult<Option<Feed>> {
    let marks = match start {
        Some(marks) => {
            check_retained(db, &marks, after).await?;
            marks
        }
        // Read just before opening, so that it is as fresh as it can be.
        None => match oplog_entry(db, false).await? {
            Some(oldest) => {
                birth::check(db, oldest).await?;
                vec![Mark::From(oldest); Feed::lanes(mode)]
            }
            None => return Ok(None),
        },
    };
    streams.count_opened(Feed::lanes(mode));
    let feed = Feed::open(db, mode, marks)
        .await
        .map_err(|e| map_error(e, after))?;
    Ok(Some(feed))
}

pub(super) async fn read(
    db: &Database,
    streams: &Streams,
    after: Option<&ChangePosition>,
    limit: usize,
) -> StoreResult<Vec<Change>> {
    let mode = streams.mode(db).await?;
    let start = after.map(|p| position::decode(p, mode)).transpose()?;
    if limit == 0 {
        return Ok(Vec::new());
    }
    // Without post-batch tokens, a stream that drains empty is complete up to the
    // newest oplog entry read before it was polled: read it before anything else.
    let newest = match mode {
        Mode::Collections {
            post_batch_tokens: false,
        } => Some(oplog_entry(db, true).await?.unwrap_or(Timestamp {
            time: 0,
            increment: 0,
        })),
        _ => None,
    };
    let key = after.map(|p| p.0.clone()).unwrap_or_default();
    let mut feed = match streams.take(&key) {
        Some(feed) => feed,
        None => match open(db, streams, mode, start, after).await? {
            Some(feed) => feed,
            None => return Ok(Vec::new()),
        },
    };
    // On failure the set is dropped: the next read reopens from the position.
    feed.fill(limit.min(MAX_FETCH), newest, after).await?;
    let mut changes = feed.deliver(limit, after)?;
    // On failure the set is dropped too: the changes it delivered are read again.
    fill_deleted_posts(db, &mut changes).await?;
    super::reposts::fill_deleted(db, &mut changes).await?;
    let key = changes.last().map_or(key, |c| c.position.0.clone());
    streams.put(key, feed);
    Ok(changes)
}

/// A delete event carries only the post's id: give each post delete of the batch its
/// post, as the insert carried it, from the tombstones `delete_post` writes before the
/// delete (one `$in` lookup per batch). A tombstone that has expired leaves `None`.
async fn fill_deleted_posts(db: &Database, changes: &mut [Change]) -> StoreResult<()> {
    let deleted = |c: &Change| c.collection == "posts" && c.op == ChangeOp::Delete;
    let ids: Vec<ObjectId> = changes
        .iter()
        .filter(|c| deleted(c) && c.document.is_none())
        .filter_map(|c| ObjectId::parse_str(&c.key).ok())
        .collect();
    if ids.is_empty() {
        return Ok(());
    }
    let tombstones = all(db
        .collection::<Document>(DELETED_POSTS)
        .find(doc! { "_id": { "$in": ids } }))
    .await?;
    let mut posts = HashMap::with_capacity(tombstones.len());
    for tombstone in &tombstones {
        if let Ok(id) = tombstone.get_object_id("_id") {
            let post = serde_json::to_value(post_from(tombstone)?)
                .map_err(|e| StoreError::Backend(e.into()))?;
            posts.insert(id.to_hex(), post);
        }
    }
    for change in changes.iter_mut().filter(|c| deleted(c)) {
        if change.document.is_none() {
            change.document = posts.get(&change.key).cloned();
        }
    }
    Ok(())
}

/// The newest oplog entry's time, once the majority snapshot has reached it; `None` for
/// an empty oplog.
pub(in crate::store::mongo) async fn majority_head(
    db: &Database,
) -> StoreResult<Option<Timestamp>> {
    let Some(newest) = oplog_entry(db, true).await? else {
        return Ok(None);
    };
    await_majority(db, newest).await?;
    Ok(Some(newest))
}

/// Waits until the majority-committed snapshot reaches `time`, so that reads made after
/// this (at read concern majority) see every write up to it: a causally consistent
/// session's read after `time`. A server without sessions (the test stand-in, which has
/// no replication) needs no wait.
async fn await_majority(db: &Database, time: Timestamp) -> StoreResult<()> {
    let mut session = match db.client().start_session().causal_consistency(true).await {
        Ok(session) => session,
        Err(error) => {
            tracing::debug!(%error, "no sessions; not waiting for the majority snapshot");
            return Ok(());
        }
    };
    session.advance_operation_time(time);
    let read = db
        .collection::<Document>(WATCHED[0].0)
        .find_one(doc! {})
        .projection(doc! { "_id": 1 })
        .session(&mut session)
        .await;
    match read {
        Ok(_) => Ok(()),
        // Sessions are refused at the first use, not when the session starts.
        Err(error) if matches!(*error.kind, ErrorKind::SessionsNotSupported) => {
            tracing::debug!("no sessions; not waiting for the majority snapshot");
            Ok(())
        }
        Err(error) => Err(db_error(error)),
    }
}

impl MongoStore {
    /// How many change streams this store's feed has opened so far. Not part of any
    /// port: tests read it to check that consecutive reads reuse open streams.
    #[doc(hidden)]
    pub fn change_streams_opened(&self) -> u64 {
        self.streams.opened()
    }
}

#[async_trait]
impl ChangeFeed for MongoStore {
    async fn changes(
        &self,
        after: Option<&ChangePosition>,
        limit: usize,
    ) -> StoreResult<Vec<Change>> {
        read(&self.db, &self.streams, after, limit).await
    }

    /// Every stream just after the newest oplog entry, once the majority snapshot has
    /// reached it: a rebuild that reads after this sees every change up to the head, and
    /// a reader continuing from it sees every change after it. (The entry may belong to
    /// a collection the feed does not watch; nothing between it and the watched
    /// collections' last changes is then skipped, since it is newer than all of them.)
    async fn head(&self) -> StoreResult<Option<ChangePosition>> {
        let mode = self.streams.mode(&self.db).await?;
        let Some(newest) = majority_head(&self.db).await? else {
            return Ok(None);
        };
        let marks = vec![Mark::From(position::successor(newest)); Feed::lanes(mode)];
        position::encode(mode, &marks).map(Some)
    }

    /// The oplog's size is MongoDB's retention; nothing to trim here.
    async fn trim_changes(&self, _older_than_ms: i64, _hard_cutoff_ms: i64) -> StoreResult<u64> {
        Ok(0)
    }
}
