//! The event log port: an append-only, size-bounded log of domain events, read in id
//! order by any number of readers, each at its own position.
//!
//! - Ids are the `seq` of the change each event was derived from, so an append is
//!   idempotent: appending an id already stored changes nothing.
//! - The log is bounded (embedded: `events.max_count` rows, trimmed in the append's own
//!   transaction; MongoDB: a capped collection of `events.max_bytes`), oldest first out.
//! - A reader whose position was trimmed away gets `PositionLost`, never a silent skip;
//!   so does one on an id a restore retired (embedded: `event_gaps`, see
//!   `embedded/restore/ids.rs`), issued by events the restore undid.
//!   So does a client whose position is past the newest event, an id this log never
//!   issued ([`EventStore::events_after_issued`]); the workers' own positions (a rebuild's
//!   watermark is a change `seq`, which may be ahead of the log) read with
//!   `events_after`, to which such a position is simply the end of the log.

use std::time::Duration;

use async_trait::async_trait;
use futures::stream::BoxStream;

use super::{StoreError, StoreResult};
use crate::domain::{Event, EventId, Fence, PostId};

/// What the log is allowed to hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LogBounds {
    /// Embedded: events kept.
    pub max_count: u64,
    /// MongoDB: the capped collection's size.
    pub max_bytes: u64,
}

#[async_trait]
pub trait EventStore: Send + Sync + 'static {
    /// Creates the log when needed. `Err` with the reason when this server cannot keep
    /// one (a MongoDB without capped collections): the event log, the stream and the
    /// aggregates are then off in this process, which says so at start-up.
    async fn prepare_log(&self, bounds: LogBounds) -> StoreResult<()>;
    /// Appends `events` (in id order) unless already there, then trims the oldest past
    /// the bounds; only while `fence` still holds (embedded: checked in the same
    /// transaction; MongoDB: checked just before, and ids make a late duplicate inert).
    /// Returns how many were new.
    async fn append(
        &self,
        fence: &Fence,
        events: &[Event],
        bounds: LogBounds,
    ) -> StoreResult<usize>;
    /// Declares every event up to the newest change recorded so far lost (the change
    /// feed lost history before the events worker read it): a reader positioned below
    /// gets `PositionLost` instead of silently crossing the gap. Fenced.
    async fn mark_lost(&self, fence: &Fence) -> StoreResult<()>;
    /// Up to `limit` events after `after` (from the oldest kept when `None`), in id
    /// order. `PositionLost` when events after `after` were trimmed. An `after` above
    /// `i64::MAX`, past any id the log can hold, reads nothing.
    async fn events_after(&self, after: Option<EventId>, limit: usize) -> StoreResult<Vec<Event>>;
    /// As `events_after`, for a position a client was handed: `PositionLost` also when
    /// `after` is past the newest event, an id this log never issued (another
    /// deployment's, or one from before a restore), which would otherwise read as
    /// "nothing new yet" until the log's ids pass it. `0`, before every id, is always
    /// valid. One more read, only when the page is empty.
    async fn events_after_issued(
        &self,
        after: Option<EventId>,
        limit: usize,
    ) -> StoreResult<Vec<Event>> {
        let events = self.events_after(after, limit).await?;
        let Some(after) = after.filter(|_| events.is_empty()) else {
            return Ok(events);
        };
        let newest = self.newest_event().await?;
        if after <= newest.unwrap_or(EventId(0)) {
            return Ok(events);
        }
        Err(StoreError::PositionLost(match newest {
            Some(newest) => format!("event {after} was never issued: the newest is {newest}"),
            None => format!("event {after} was never issued: the log is empty"),
        }))
    }
    /// The newest event's id, `None` while the log is empty.
    async fn newest_event(&self) -> StoreResult<Option<EventId>>;
    /// The `post.created` event of `post`, if the log still holds it.
    async fn post_created_event(&self, post: PostId) -> StoreResult<Option<Event>>;
    /// Follows the log from `after`: yields each batch of events as it is appended,
    /// blocking while the log is idle (MongoDB: a tailable awaitData cursor, reopened
    /// from the last event seen when it dies; embedded: an in-process notification plus
    /// a poll every `poll` for other processes' appends). Ends after yielding an error.
    fn tail(
        &self,
        after: Option<EventId>,
        poll: Duration,
    ) -> BoxStream<'static, StoreResult<Vec<Event>>>;
}
