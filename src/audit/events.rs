//! The event log's order, and one event per change: the log walked in id order beside
//! the change feed in `seq` order, a page of each at a time.

use std::collections::VecDeque;

use super::{Finding, Fix, Kind, Settings, Tally, Unit};
use crate::domain::{ChangePosition, Event, EventId};
use crate::store::{Store, StoreResult};

const PAGE: usize = 1000;

fn event_finding(detail: String) -> Finding {
    Finding {
        kind: Kind::Events,
        unit: Unit::Events,
        detail,
        fix: Fix::None,
    }
}

/// The event log: ids strictly increasing; and, where the change feed still holds the
/// changes and positions are sequence numbers (the embedded store), one event per change
/// that makes one, up to the events worker's position, and none for any other.
pub(super) async fn events(
    store: &Store,
    settings: &Settings,
    tally: &mut Tally,
) -> StoreResult<()> {
    let leases = store.leases.leases().await?;
    let through: Option<u64> = leases
        .iter()
        .find(|l| l.name == "events")
        .and_then(|l| l.position.as_ref())
        .and_then(|p| p.0.parse().ok());
    let mut feed = ChangeCursor::new(store, through);
    let mut after: Option<EventId> = None;
    let mut pending: VecDeque<Event> = VecDeque::new();
    let mut first = true;
    loop {
        let page = match store.events.events_after(after, PAGE).await {
            Ok(page) => page,
            Err(crate::store::StoreError::PositionLost(_)) if after.is_some() => {
                tally.found(
                    event_finding("the log was trimmed while it was read".into()),
                    settings.keep,
                );
                return Ok(());
            }
            Err(error) => return Err(error),
        };
        tally.checked(Kind::Events, page.len() as u64);
        let full = page.len() == PAGE;
        for event in page.iter() {
            if let Some(previous) = after.filter(|a| event.id <= *a) {
                let detail = format!("event {} follows event {previous}", event.id);
                tally.found(event_finding(detail), settings.keep);
            }
            after = Some(event.id);
        }
        if first {
            if let Some(oldest) = page.first() {
                feed.start(oldest.id.0).await?;
            }
            first = false;
        }
        pending.extend(page);
        feed.consume(&mut pending, settings, tally).await?;
        if !full {
            break;
        }
    }
    feed.finish(&mut pending, settings, tally).await
}

/// The change feed walked beside the event log, in `seq` order, up to `through`.
struct ChangeCursor<'a> {
    store: &'a Store,
    through: Option<u64>,
    position: Option<ChangePosition>,
    buffer: VecDeque<crate::domain::Change>,
    done: bool,
    low: u64,
}

impl<'a> ChangeCursor<'a> {
    fn new(store: &'a Store, through: Option<u64>) -> Self {
        ChangeCursor {
            store,
            done: through.is_none(),
            through,
            position: None,
            buffer: VecDeque::new(),
            low: u64::MAX,
        }
    }

    /// Starts at the oldest change the feed holds, comparing from the later of it and
    /// the oldest event.
    async fn start(&mut self, oldest_event: u64) -> StoreResult<()> {
        if self.done {
            return Ok(());
        }
        self.fill().await?;
        let oldest_change = self.buffer.front().map_or(u64::MAX, |c| c.seq);
        self.low = oldest_event.max(oldest_change);
        Ok(())
    }

    async fn fill(&mut self) -> StoreResult<()> {
        if self.done || !self.buffer.is_empty() {
            return Ok(());
        }
        let page = match self
            .store
            .change_feed
            .changes(self.position.as_ref(), PAGE)
            .await
        {
            Ok(page) => page,
            // The feed moved past us while we read: compare no further.
            Err(crate::store::StoreError::HistoryLost(_)) => Vec::new(),
            Err(error) => return Err(error),
        };
        self.done = page.len() < PAGE;
        self.position = page.last().map(|c| c.position.clone());
        let through = self.through.unwrap_or(0);
        self.done |= page.last().is_some_and(|c| c.seq > through);
        self.buffer
            .extend(page.into_iter().filter(|c| c.seq <= through));
        Ok(())
    }

    /// Matches the changes against `events` as far as both go. Once the feed has no
    /// more, every event is judged at once, so `events` never holds more than a page
    /// or two, whatever the log's length.
    async fn consume(
        &mut self,
        events: &mut VecDeque<Event>,
        settings: &Settings,
        tally: &mut Tally,
    ) -> StoreResult<()> {
        if self.through.is_none() {
            events.clear();
            return Ok(());
        }
        loop {
            self.fill().await?;
            if self.done && self.buffer.is_empty() {
                self.unmatched(events, settings, tally);
                return Ok(());
            }
            let (Some(change), Some(event)) = (self.buffer.front(), events.front()) else {
                return Ok(());
            };
            if change.seq < self.low {
                self.buffer.pop_front();
                continue;
            }
            if event.id.0 < self.low {
                events.pop_front();
                continue;
            }
            let wants = crate::workers::events::event_of(change)
                .ok()
                .flatten()
                .is_some();
            if event.id.0 < change.seq {
                let detail = format!("event {} stands for no change", event.id);
                tally.found(event_finding(detail), settings.keep);
                events.pop_front();
            } else if event.id.0 == change.seq {
                if !wants {
                    let detail = format!("event {} stands for a change that makes none", event.id);
                    tally.found(event_finding(detail), settings.keep);
                }
                events.pop_front();
                self.buffer.pop_front();
            } else {
                if wants {
                    let detail = format!("change {} has no event", change.seq);
                    tally.found(event_finding(detail), settings.keep);
                }
                self.buffer.pop_front();
            }
        }
    }

    /// Events the feed has no change left for: each one from the compared range up to
    /// `through` stands for no change. With no change to compare from (`low` unset), none
    /// can be judged.
    fn unmatched(&self, events: &mut VecDeque<Event>, settings: &Settings, tally: &mut Tally) {
        let through = self.through.unwrap_or(0);
        for event in events.drain(..) {
            if self.low != u64::MAX && event.id.0 >= self.low && event.id.0 <= through {
                let detail = format!("event {} stands for no change", event.id);
                tally.found(event_finding(detail), settings.keep);
            }
        }
    }

    /// Past the last event: the changes left up to `through` that make one have none.
    async fn finish(
        &mut self,
        events: &mut VecDeque<Event>,
        settings: &Settings,
        tally: &mut Tally,
    ) -> StoreResult<()> {
        if self.through.is_none() || self.low == u64::MAX {
            events.clear();
            return Ok(());
        }
        self.unmatched(events, settings, tally);
        loop {
            self.fill().await?;
            let Some(change) = self.buffer.pop_front() else {
                return Ok(());
            };
            if change.seq >= self.low
                && crate::workers::events::event_of(&change)
                    .ok()
                    .flatten()
                    .is_some()
            {
                let detail = format!("change {} has no event", change.seq);
                tally.found(event_finding(detail), settings.keep);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::domain::{EventType, FeedStrategy};
    use crate::store::embedded::{EmbeddedStore, Synchronous};

    fn event(id: u64) -> Event {
        Event {
            id: EventId(id),
            kind: EventType::PostCreated,
            at_ms: 0,
            payload: serde_json::json!({}),
        }
    }

    /// A log far longer than what the feed still holds is judged as it is read, not
    /// kept until the end (at 1,000,000 events that was 800 MB of heap).
    #[tokio::test]
    async fn events_past_the_feed_are_judged_as_read_not_kept() {
        let dir = tempfile::tempdir().unwrap();
        let adapter = EmbeddedStore::open(&dir.path().join("s.db"), Synchronous::Normal);
        let store = Store::new(Arc::new(adapter.unwrap()));
        let settings = Settings::new(FeedStrategy::Cache, 0);
        let mut tally = Tally::default();
        let mut feed = ChangeCursor::new(&store, Some(10));
        feed.start(1).await.unwrap();
        let mut pending: VecDeque<Event> = (1..=PAGE as u64).map(event).collect();
        feed.consume(&mut pending, &settings, &mut tally)
            .await
            .unwrap();
        assert!(pending.is_empty(), "{} events kept", pending.len());
        // The feed holds no change, so nothing could be compared: nothing is reported.
        assert!(tally.found.is_empty(), "{:?}", tally.found);
    }
}
