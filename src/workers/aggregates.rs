//! The aggregates worker: hashtag counts kept from the event log.
//!
//! - **Watermark**: the last event applied, kept as the position of the `aggregates`
//!   lease: the same document as its lock. Embedded, a batch and its watermark commit in
//!   one transaction; on MongoDB each tag also records the last event applied to it.
//! - **Batches**: each batch of events becomes one update per touched tag (its net
//!   change in total and per hour), not one per post.
//! - **Rebuild**: [`rebuild`] takes the same lock as type `rebuild` (the holder is
//!   `rebuild/<name>`), recomputes every tag from the posts in one snapshot and sets the
//!   watermark to the newest change at that snapshot. While it holds the lock the
//!   incremental worker only stands by; afterwards it continues from the rebuild's
//!   watermark. A crashed holder of either type is replaced once its lease expires.
//! - With no watermark yet (first start) the worker starts with a rebuild; when the log
//!   trimmed past its watermark (`PositionLost`) it rebuilds too, logged as an error and
//!   counted as history lost, which a first start is not. So does a deletion whose tags
//!   the log no longer held (see [`tag_changes`]).

use std::sync::Arc;

use async_trait::async_trait;

use super::runtime::{Clock, Worker};
use crate::domain::{Change, ChangePosition, Event, EventId, EventType, Fence, PostId};
use crate::store::trends::{HOUR_MS, HOURS_KEPT, TagChange};
use crate::store::{ChangeFeed, EventStore, StoreError, StoreResult, TrendStore};

pub const NAME: &str = "aggregates";
/// Holders of the aggregates lock of type `rebuild` are named with this prefix.
pub const REBUILD_PREFIX: &str = "rebuild/";

/// The lock type a holder name stands for.
pub fn lock_type(holder: &str) -> &'static str {
    if holder.starts_with(REBUILD_PREFIX) {
        "rebuild"
    } else {
        "incremental"
    }
}

pub struct AggregatesWorker {
    trends: Arc<dyn TrendStore>,
    clock: Arc<dyn Clock>,
}

impl AggregatesWorker {
    pub fn new(trends: Arc<dyn TrendStore>, clock: Arc<dyn Clock>) -> Self {
        AggregatesWorker { trends, clock }
    }

    /// The first hour whose per-hour counts are kept.
    fn first_hour(&self) -> i64 {
        self.clock.now_ms().div_euclid(HOUR_MS) - (HOURS_KEPT - 1)
    }
}

/// What one event does to the counts. A deletion whose tags are unknown (the post's
/// creation had left the event log when the deletion was logged) is history lost: the
/// counts cannot be kept from the log past it, so it is `HistoryLost`, and the runtime
/// rebuilds them from the posts (logged and counted), never skipping it silently.
pub fn tag_changes(event: &Event) -> StoreResult<Vec<TagChange>> {
    let delta = match event.kind {
        EventType::PostCreated => 1,
        EventType::PostDeleted => -1,
        _ => return Ok(Vec::new()),
    };
    let Some(post) = event.field("post").and_then(|p| p.parse::<PostId>().ok()) else {
        return Ok(Vec::new());
    };
    let Some(tags) = event.tags() else {
        metrics::counter!("socialite_aggregates_unknown_deletes_total").increment(1);
        return Err(StoreError::HistoryLost(format!(
            "event {}: the tags of deleted post {post} are unknown (its creation left the event log)",
            event.id
        )));
    };
    let hour = post.timestamp_ms().div_euclid(HOUR_MS);
    Ok(tags
        .into_iter()
        .map(|tag| TagChange {
            event: event.id,
            tag,
            hour,
            delta,
        })
        .collect())
}

fn event_of(change: &Change) -> StoreResult<Event> {
    let doc = change.document.clone().unwrap_or_default();
    serde_json::from_value(doc)
        .map_err(|e| StoreError::Poison(format!("event {}: {e}", change.position.0)))
}

#[async_trait]
impl Worker for AggregatesWorker {
    fn name(&self) -> &'static str {
        NAME
    }

    async fn apply(&self, changes: &[Change], fence: &Fence) -> StoreResult<()> {
        let Some(last) = changes.last() else {
            return Ok(());
        };
        let mut tags = Vec::new();
        for change in changes {
            tags.extend(tag_changes(&event_of(change)?)?);
        }
        self.trends
            .apply_tags(fence, EventId(last.seq), &tags, self.first_hour())
            .await
    }

    async fn rebuild(&self, fence: &Fence) -> StoreResult<()> {
        self.trends
            .rebuild_tags(fence, self.first_hour())
            .await
            .map(|_| ())
    }

    /// The watermark is the rebuild's snapshot, not the log's head.
    async fn rebuild_to(
        &self,
        fence: &Fence,
        _head: Option<ChangePosition>,
    ) -> StoreResult<Option<ChangePosition>> {
        let watermark = self.trends.rebuild_tags(fence, self.first_hour()).await?;
        Ok(Some(ChangePosition(watermark.to_string())))
    }
}

/// The event log offered to the worker runtime as its feed: positions are event ids.
/// No position yet is `NoPosition` (a first start) and one the log trimmed away is
/// `HistoryLost`: both make the runtime rebuild, but only the second is a loss.
pub struct EventFeed {
    events: Arc<dyn EventStore>,
}

impl EventFeed {
    pub fn new(events: Arc<dyn EventStore>) -> Self {
        EventFeed { events }
    }
}

#[async_trait]
impl ChangeFeed for EventFeed {
    async fn changes(
        &self,
        after: Option<&ChangePosition>,
        limit: usize,
    ) -> StoreResult<Vec<Change>> {
        let Some(after) = after else {
            return Err(StoreError::NoPosition(
                "no watermark yet: counting from the posts".to_owned(),
            ));
        };
        let from: EventId = after
            .0
            .parse()
            .map_err(|_| StoreError::InvalidPosition(after.0.clone()))?;
        let events = match self.events.events_after(Some(from), limit).await {
            Err(StoreError::PositionLost(why)) => return Err(StoreError::HistoryLost(why)),
            other => other?,
        };
        events
            .into_iter()
            .map(|event| {
                Ok(Change {
                    position: ChangePosition(event.id.to_string()),
                    seq: event.id.0,
                    at_ms: event.at_ms,
                    collection: "events".to_owned(),
                    op: crate::domain::ChangeOp::Insert,
                    key: event.kind.as_str().to_owned(),
                    document: Some(
                        serde_json::to_value(&event).map_err(|e| StoreError::Backend(e.into()))?,
                    ),
                })
            })
            .collect()
    }

    async fn head(&self) -> StoreResult<Option<ChangePosition>> {
        Ok(self
            .events
            .newest_event()
            .await?
            .map(|id| ChangePosition(id.to_string())))
    }

    async fn trim_changes(&self, _older_than_ms: i64, _hard_cutoff_ms: i64) -> StoreResult<u64> {
        Ok(0)
    }
}
