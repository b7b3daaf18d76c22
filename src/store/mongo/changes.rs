//! The port's change feed as MongoDB change streams over `users`, `follows` and
//! `content`. A reader with no position starts at the oldest oplog entry, so no write
//! made before the first reader started is missed; one whose position has rolled off the
//! oplog gets `HistoryLost` (server error 286).

use std::collections::BTreeMap;
use std::time::Duration;

use async_trait::async_trait;
use mongodb::Database;
use mongodb::bson::{Bson, Document, Timestamp, doc};
use mongodb::change_stream::event::{ChangeStreamEvent, OperationType, ResumeToken};
use mongodb::options::FullDocumentType;

use super::{MongoStore, db_error, error_code, post_from, user_from};
use crate::domain::{Change, ChangeOp, ChangePosition};
use crate::store::{ChangeFeed, StoreError, StoreResult};

const CHANGE_STREAM_HISTORY_LOST: i32 = 286;
/// How long a read waits for changes that are not there yet.
const MAX_AWAIT: Duration = Duration::from_millis(200);

/// One stream per collection: the port's feed merges them by cluster time. (A
/// database-level stream would do, but the test stand-in does not implement one.)
const WATCHED: [(&str, &str); 4] = [
    ("users", "users"),
    ("follows", "follows"),
    ("likes", "likes"),
    ("content", "posts"),
];

/// The position is each stream's last consumed resume token, as extended JSON.
type Tokens = BTreeMap<String, ResumeToken>;

fn encode(tokens: &Tokens) -> StoreResult<ChangePosition> {
    let bson = mongodb::bson::to_bson(tokens).map_err(|e| StoreError::Backend(e.into()))?;
    Ok(ChangePosition(bson.into_relaxed_extjson().to_string()))
}

fn decode(position: &ChangePosition) -> StoreResult<Tokens> {
    let invalid = || StoreError::InvalidPosition(position.0.clone());
    let json: serde_json::Value = serde_json::from_str(&position.0).map_err(|_| invalid())?;
    let bson = Bson::try_from(json).map_err(|_| invalid())?;
    mongodb::bson::from_bson(bson).map_err(|_| invalid())
}

/// The timestamp of the oldest real entry in the oplog, if the server has one.
async fn oldest_oplog_entry(db: &Database) -> StoreResult<Option<Timestamp>> {
    let oplog = db
        .client()
        .database("local")
        .collection::<Document>("oplog.rs");
    let first = oplog
        .find_one(doc! { "op": { "$ne": "n" } })
        .sort(doc! { "$natural": 1 })
        .await;
    match first {
        Ok(Some(entry)) => Ok(entry.get_timestamp("ts").ok()),
        Ok(None) => Ok(None),
        // Without access to the oplog, start from now rather than fail.
        Err(error) => {
            tracing::warn!(error = %error, "cannot read local.oplog.rs; change feed starts now");
            Ok(None)
        }
    }
}

fn map_error(error: mongodb::error::Error, position: Option<&ChangePosition>) -> StoreError {
    if error_code(&error) == Some(CHANGE_STREAM_HISTORY_LOST) {
        return StoreError::HistoryLost(position.map(|p| p.0.clone()).unwrap_or_default());
    }
    db_error(error)
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

/// The change without its position, or `None` for events the feed does not carry.
fn to_change(
    collection: &'static str,
    event: &ChangeStreamEvent<Document>,
) -> StoreResult<Option<(ChangeOp, String, Option<serde_json::Value>)>> {
    let op = match event.operation_type {
        OperationType::Insert => ChangeOp::Insert,
        OperationType::Update | OperationType::Replace => ChangeOp::Update,
        OperationType::Delete => ChangeOp::Delete,
        _ => return Ok(None),
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
                "users" => serde_json::to_value(user_from(doc)?),
                "posts" => serde_json::to_value(post_from(doc)?),
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
    Ok(Some((op, key, document)))
}

/// Change streams kept open between reads. (Not yet used: every read opens its streams.)
#[derive(Default)]
pub(super) struct Streams {}

pub(super) async fn read(
    db: &Database,
    _streams: &Streams,
    after: Option<&ChangePosition>,
    limit: usize,
) -> StoreResult<Vec<Change>> {
    let mut tokens = match after {
        Some(position) => decode(position)?,
        None => Tokens::new(),
    };
    let mut oldest = None;
    // Pull what each stream has, then merge by cluster time.
    let mut pending: Vec<(Timestamp, usize, &'static str, ChangeStreamEvent<Document>)> =
        Vec::new();
    for (order, (name, collection)) in WATCHED.into_iter().enumerate() {
        let watched = db.collection::<Document>(name);
        let mut watch = watched
            .watch()
            .full_document(FullDocumentType::UpdateLookup)
            .max_await_time(MAX_AWAIT);
        match tokens.get(name) {
            Some(token) => watch = watch.resume_after(token.clone()),
            None => {
                if oldest.is_none() {
                    oldest = Some(oldest_oplog_entry(db).await?);
                }
                if let Some(Some(ts)) = oldest {
                    watch = watch.start_at_operation_time(ts);
                }
            }
        }
        let mut stream = watch.await.map_err(|e| map_error(e, after))?;
        let mut empty_batches = 0;
        let mut taken = 0;
        // The first call can see an empty initial batch before any getMore.
        while taken < limit && empty_batches < 3 {
            match stream
                .next_if_any()
                .await
                .map_err(|e| map_error(e, after))?
            {
                Some(event) => {
                    let time = event.cluster_time.unwrap_or(Timestamp {
                        time: 0,
                        increment: 0,
                    });
                    pending.push((time, order, collection, event));
                    taken += 1;
                    empty_batches = 0;
                }
                None => empty_batches += 1,
            }
        }
    }
    // Stable: events of one stream keep their order when times tie.
    pending.sort_by_key(|(time, order, _, _)| (time.time, time.increment, *order));
    let mut changes = Vec::new();
    for (_, order, collection, event) in pending.into_iter().take(limit) {
        tokens.insert(WATCHED[order].0.to_owned(), event.id.clone());
        if let Some((op, key, document)) = to_change(collection, &event)? {
            let at_ms = event
                .wall_time
                .map(|t| t.timestamp_millis())
                .or(event.cluster_time.map(|t| i64::from(t.time) * 1000))
                .unwrap_or_default();
            changes.push(Change {
                position: encode(&tokens)?,
                seq: event
                    .cluster_time
                    .map(|t| (u64::from(t.time) << 32) | u64::from(t.increment))
                    .unwrap_or_default(),
                at_ms,
                collection: collection.to_owned(),
                op,
                key,
                document,
            });
        }
    }
    Ok(changes)
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

    /// Not yet known on MongoDB without reading to the end: `None` makes a rebuilt
    /// worker replay what the oplog still holds, which its idempotent effects allow.
    async fn head(&self) -> StoreResult<Option<ChangePosition>> {
        Ok(None)
    }

    /// The oplog's size is MongoDB's retention; nothing to trim here.
    async fn trim_changes(&self, _older_than_ms: i64, _hard_cutoff_ms: i64) -> StoreResult<u64> {
        Ok(0)
    }
}
