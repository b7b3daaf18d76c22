//! The event log on MongoDB: the capped collection `events` (`events.max_bytes`),
//! `{_id: id, type, at, post?, payload}` with `_id` indexed (capped collections have
//! the `_id` index) and `{post: 1}` for deletions to find their post's creation.
//!
//! - Readers follow it with a tailable awaitData cursor from their position; a dead
//!   cursor (id 0) is reopened from the last event seen, and an empty collection is
//!   polled (MongoDB does not block a tailable cursor on an empty capped collection).
//! - `CappedPositionLost` (error 136: the cursor's place was overwritten) is
//!   `PositionLost`. Opening at a position older than the oldest kept event is
//!   `PositionLost` too: a capped collection does not say what it removed, so this is
//!   conservative (a gap is never silent, at the price of a reset that was not needed
//!   when the position named no event of this log).
//! - Appends are in id order from one fenced holder. The fence is checked just before
//!   the insert (MongoDB cannot check it in the same command); a paused holder resuming
//!   in between can only insert ids the newer holder inserts too, refused as duplicates.
//! - A server without capped collections (the test stand-in) cannot keep the log:
//!   `prepare_log` says so and everything here answers an error.

use std::sync::atomic::Ordering;
use std::time::Duration;

use async_trait::async_trait;
use futures::TryStreamExt;
use futures::stream::{self, BoxStream, StreamExt};
use mongodb::bson::{Document, doc};
use mongodb::options::CursorType;
use mongodb::{Collection, Database};

use super::leases::LEASES;
use super::{MongoStore, db_error, error_code, index, int, is_duplicate_key, oid};
use crate::domain::{Event, EventId, EventType, Fence, PostId};
use crate::store::events::{EventStore, LogBounds};
use crate::store::{StoreError, StoreResult};

pub(super) const EVENTS: &str = "events";
const CAPPED_POSITION_LOST: i32 = 136;
const NAMESPACE_EXISTS: i32 = 48;
/// How long one getMore waits for new events.
const MAX_AWAIT: Duration = Duration::from_millis(500);

fn unavailable() -> StoreError {
    StoreError::Backend(anyhow::anyhow!(
        "the event log is off: this MongoDB server has no capped collections (see the start-up log)"
    ))
}

fn to_doc(event: &Event) -> StoreResult<Document> {
    let mut doc = doc! {
        "_id": event.id.0 as i64,
        "type": event.kind.as_str(),
        "at": event.at_ms,
        "payload": serde_json::to_string(&event.payload).map_err(|e| StoreError::Backend(e.into()))?,
    };
    if event.kind == EventType::PostCreated
        && let Some(post) = event.field("post").and_then(|p| p.parse::<PostId>().ok())
    {
        doc.insert("post", oid(post));
    }
    Ok(doc)
}

fn from_doc(doc: &Document) -> StoreResult<Event> {
    let id = int(doc, "_id");
    let kind = doc.get_str("type").unwrap_or_default();
    let kind = EventType::parse(kind).ok_or_else(|| {
        StoreError::Backend(anyhow::anyhow!("event {id} has unknown type {kind:?}"))
    })?;
    let payload = doc.get_str("payload").unwrap_or("{}");
    Ok(Event {
        id: EventId(id as u64),
        kind,
        at_ms: int(doc, "at"),
        payload: serde_json::from_str(payload).map_err(|e| StoreError::Backend(e.into()))?,
    })
}

fn map_error(error: mongodb::error::Error, after: Option<EventId>) -> StoreError {
    if error_code(&error) == Some(CAPPED_POSITION_LOST) {
        let at = after.map_or_else(|| "the start".to_owned(), |a| a.to_string());
        return StoreError::PositionLost(format!("the capped log overwrote the place after {at}"));
    }
    db_error(error)
}

/// `PositionLost` when the oldest kept event is newer than `after`.
async fn check_kept(events: &Collection<Document>, after: Option<EventId>) -> StoreResult<()> {
    let Some(after) = after else { return Ok(()) };
    let oldest = events
        .find_one(doc! {})
        .sort(doc! { "$natural": 1 })
        .projection(doc! { "_id": 1 })
        .await
        .map_err(db_error)?;
    match oldest {
        Some(doc) if (int(&doc, "_id") as u64) > after.0 => Err(StoreError::PositionLost(format!(
            "the oldest kept event {} is past {after}",
            int(&doc, "_id")
        ))),
        _ => Ok(()),
    }
}

pub(super) async fn is_capped(db: &Database) -> StoreResult<bool> {
    let mut names = db
        .list_collections()
        .filter(doc! { "name": EVENTS })
        .await
        .map_err(db_error)?;
    let Some(spec) = names.try_next().await.map_err(db_error)? else {
        return Ok(false);
    };
    Ok(spec.options.capped == Some(true))
}

impl MongoStore {
    fn events_coll(&self) -> StoreResult<Collection<Document>> {
        if self.event_log.load(Ordering::SeqCst) {
            Ok(self.collection(EVENTS))
        } else {
            Err(unavailable())
        }
    }
}

#[async_trait]
impl EventStore for MongoStore {
    async fn prepare_log(&self, bounds: LogBounds) -> StoreResult<()> {
        let created = self
            .db
            .create_collection(EVENTS)
            .capped(true)
            .size(bounds.max_bytes)
            .await;
        match created {
            Ok(()) => {}
            Err(error) if error_code(&error) == Some(NAMESPACE_EXISTS) => {}
            Err(error) => {
                return Err(StoreError::Backend(anyhow::anyhow!(
                    "this MongoDB server cannot create the capped collection {EVENTS}: {error}"
                )));
            }
        }
        if !is_capped(&self.db).await? {
            return Err(StoreError::Backend(anyhow::anyhow!(
                "{EVENTS} is not a capped collection on this MongoDB server (the test stand-in has none)"
            )));
        }
        self.collection(EVENTS)
            .create_index(index(doc! { "post": 1 }, false))
            .await
            .map_err(db_error)?;
        self.event_log.store(true, Ordering::SeqCst);
        Ok(())
    }

    async fn append(
        &self,
        fence: &Fence,
        events: &[Event],
        _bounds: LogBounds,
    ) -> StoreResult<usize> {
        let coll = self.events_coll()?;
        if events.is_empty() {
            return Ok(0);
        }
        let held =
            doc! { "_id": &fence.lease, "holder": &fence.holder, "version": fence.version as i64 };
        if !super::exists(&self.collection(LEASES), held).await? {
            return Err(StoreError::Fenced(fence.lease.clone()));
        }
        let docs = events.iter().map(to_doc).collect::<StoreResult<Vec<_>>>()?;
        let total = docs.len();
        match coll.insert_many(docs).ordered(true).await {
            Ok(result) => Ok(result.inserted_ids.len()),
            // A replay: some (ordered: a prefix) are there already. Insert the rest one
            // by one so order holds and each duplicate is skipped.
            Err(error) if is_duplicate_key(&error) => {
                let mut added = 0;
                for event in events {
                    match coll.insert_one(to_doc(event)?).await {
                        Ok(_) => added += 1,
                        Err(error) if is_duplicate_key(&error) => {}
                        Err(error) => return Err(db_error(error)),
                    }
                }
                debug_assert!(added <= total);
                Ok(added)
            }
            Err(error) => Err(db_error(error)),
        }
    }

    /// A capped collection cannot record a gap: logged, and readers are not reset.
    async fn mark_lost(&self, fence: &Fence) -> StoreResult<()> {
        self.events_coll()?;
        tracing::error!(lease = %fence.lease, "event log: a gap from lost change history cannot be marked on MongoDB");
        Ok(())
    }

    async fn events_after(&self, after: Option<EventId>, limit: usize) -> StoreResult<Vec<Event>> {
        let coll = self.events_coll()?;
        // Ids are stored as i64: nothing follows a position above them all.
        let Ok(from) = after.map(|a| i64::try_from(a.0)).transpose() else {
            return Ok(Vec::new());
        };
        check_kept(&coll, after).await?;
        let filter = from.map_or_else(Document::new, |from| doc! { "_id": { "$gt": from } });
        let docs: Vec<Document> = coll
            .find(filter)
            .sort(doc! { "_id": 1 })
            .limit(limit as i64)
            .await
            .map_err(|e| map_error(e, after))?
            .try_collect()
            .await
            .map_err(|e| map_error(e, after))?;
        docs.iter().map(from_doc).collect()
    }

    async fn newest_event(&self) -> StoreResult<Option<EventId>> {
        let newest = self
            .events_coll()?
            .find_one(doc! {})
            .sort(doc! { "_id": -1 })
            .projection(doc! { "_id": 1 })
            .await
            .map_err(db_error)?;
        Ok(newest.map(|d| EventId(int(&d, "_id") as u64)))
    }

    async fn post_created_event(&self, post: PostId) -> StoreResult<Option<Event>> {
        let found = self
            .events_coll()?
            .find_one(doc! { "post": oid(post), "type": EventType::PostCreated.as_str() })
            .await
            .map_err(db_error)?;
        found.as_ref().map(from_doc).transpose()
    }

    fn tail(
        &self,
        after: Option<EventId>,
        poll: Duration,
    ) -> BoxStream<'static, StoreResult<Vec<Event>>> {
        let coll = match self.events_coll() {
            Ok(coll) => coll,
            Err(error) => return stream::once(async move { Err(error) }).boxed(),
        };
        tail(coll, after, poll)
    }
}

/// One tailable awaitData cursor at a time, each event yielded as it arrives; reopened
/// from the last event seen when it dies.
fn tail(
    coll: Collection<Document>,
    after: Option<EventId>,
    poll: Duration,
) -> BoxStream<'static, StoreResult<Vec<Event>>> {
    struct State {
        coll: Collection<Document>,
        position: Option<EventId>,
        cursor: Option<mongodb::Cursor<Document>>,
        ended: bool,
    }
    let start = State {
        coll,
        position: after,
        cursor: None,
        ended: false,
    };
    stream::unfold(start, move |mut state| async move {
        if state.ended {
            return None;
        }
        loop {
            if state.cursor.is_none() {
                if let Err(error) = check_kept(&state.coll, state.position).await {
                    state.ended = true;
                    return Some((Err(error), state));
                }
                let filter = state
                    .position
                    .map_or_else(Document::new, |a| doc! { "_id": { "$gt": a.0 as i64 } });
                match state
                    .coll
                    .find(filter)
                    .cursor_type(CursorType::TailableAwait)
                    .max_await_time(MAX_AWAIT)
                    .await
                {
                    Ok(cursor) => state.cursor = Some(cursor),
                    Err(error) => {
                        state.ended = true;
                        return Some((Err(map_error(error, state.position)), state));
                    }
                }
            }
            let cursor = state.cursor.as_mut().expect("opened above");
            match cursor.try_next().await {
                Ok(Some(doc)) => {
                    let event = match from_doc(&doc) {
                        Ok(event) => event,
                        Err(error) => {
                            state.ended = true;
                            return Some((Err(error), state));
                        }
                    };
                    // Natural order is id order for one holder; never step backwards.
                    if state.position.is_some_and(|p| event.id <= p) {
                        continue;
                    }
                    state.position = Some(event.id);
                    return Some((Ok(vec![event]), state));
                }
                // A dead cursor (id 0), e.g. opened on an empty collection: reopen from
                // the last event seen after a short pause.
                Ok(None) => {
                    state.cursor = None;
                    tokio::time::sleep(poll).await;
                }
                Err(error) => {
                    state.ended = true;
                    let error = map_error(error, state.position);
                    return Some((Err(error), state));
                }
            }
        }
    })
    .boxed()
}
