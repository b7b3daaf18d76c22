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
        pending.extend(page.iter().cloned());
        feed.consume(&mut pending, settings, tally).await?;
        if page.len() < PAGE {
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

    /// Matches the changes against `events` as far as both go.
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

    /// Past the last event: the changes left up to `through` that make one have none.
    async fn finish(
        &mut self,
        events: &mut VecDeque<Event>,
        settings: &Settings,
        tally: &mut Tally,
    ) -> StoreResult<()> {
        if self.through.is_none() || self.low == u64::MAX {
            return Ok(());
        }
        let through = self.through.unwrap_or(0);
        for event in events
            .drain(..)
            .filter(|e| e.id.0 >= self.low && e.id.0 <= through)
        {
            let detail = format!("event {} stands for no change", event.id);
            tally.found(event_finding(detail), settings.keep);
        }
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
