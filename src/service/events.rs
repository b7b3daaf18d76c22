//! The event log's operations: a JSON page of the log, live timeline streams, and the
//! hashtag counts. When this process has no event log (a MongoDB without capped
//! collections) every operation but the counts fails as a storage fault.

use std::sync::Arc;
use std::time::Duration;

use crate::domain::{Event, EventId, now_ms};
use crate::events::TimelineStream;
use crate::events::hub::Hub;
use crate::events::stream::OpenError;
use crate::store::trends::{HOUR_MS, HOURS_KEPT, TagCounts};
use crate::store::{Store, StoreError, StoreResult};

/// A page of the event log.
#[derive(Debug, Clone, PartialEq)]
pub struct EventPage {
    pub events: Vec<Event>,
    /// Pass as `after` for the next page: the last event's id, or `after` itself when
    /// the page is empty.
    pub next: Option<EventId>,
}

/// A trends window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Window {
    Hour,
    Day,
}

impl Window {
    pub fn parse(text: &str) -> Option<Window> {
        match text {
            "1h" => Some(Window::Hour),
            "24h" => Some(Window::Day),
            _ => None,
        }
    }

    fn duration(self) -> Duration {
        match self {
            Window::Hour => Duration::from_secs(3600),
            Window::Day => Duration::from_secs(86_400),
        }
    }
}

pub struct EventsService {
    store: Store,
    /// `None` when this process has no event log.
    hub: Option<Arc<Hub>>,
}

fn log_off() -> StoreError {
    StoreError::Backend(anyhow::anyhow!(
        "the event log is off in this process (see the start-up log)"
    ))
}

impl EventsService {
    pub fn new(store: Store, hub: Option<Arc<Hub>>) -> Self {
        EventsService { store, hub }
    }

    pub fn hub(&self) -> Option<&Arc<Hub>> {
        self.hub.as_ref()
    }

    /// Up to `limit` events after `after`; `PositionLost` when `after` was trimmed, or
    /// is past the newest event (an id this log never issued).
    pub async fn page(&self, after: Option<EventId>, limit: usize) -> StoreResult<EventPage> {
        if self.hub.is_none() {
            return Err(log_off());
        }
        let events = self.store.events.events_after_issued(after, limit).await?;
        let next = events.last().map(|e| e.id).or(after);
        Ok(EventPage { events, next })
    }

    pub async fn open_stream(
        &self,
        user: &str,
        last_event_id: Option<EventId>,
    ) -> Result<TimelineStream, OpenError> {
        let hub = self.hub.as_ref().ok_or_else(log_off)?;
        hub.open_stream(user, last_event_id).await
    }

    /// `user`'s live stream of what `interest` asks for at each event (its sender,
    /// kept by the caller, changes it while the stream runs).
    pub async fn open_stream_for(
        &self,
        user: &str,
        interest: tokio::sync::watch::Receiver<crate::events::Interest>,
    ) -> Result<TimelineStream, OpenError> {
        let hub = self.hub.as_ref().ok_or_else(log_off)?;
        hub.open_stream_for(user, None, interest).await
    }

    /// Posts per hour over the last seven days, and the live total.
    pub async fn tag(&self, tag: &str) -> StoreResult<TagCounts> {
        let from_hour = now_ms().div_euclid(HOUR_MS) - (HOURS_KEPT - 1);
        self.store.trends.tag_counts(tag, from_hour).await
    }

    /// The top tags by posts created in the window (whole hours: the hour the window
    /// starts in counts in full), ties by tag.
    pub async fn trends(&self, window: Window, limit: usize) -> StoreResult<Vec<(String, u64)>> {
        let start = now_ms() - window.duration().as_millis() as i64;
        self.store
            .trends
            .top_tags(start.div_euclid(HOUR_MS), limit)
            .await
    }
}
