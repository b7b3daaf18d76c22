//! The merge, apart from the streams: what each lane has fetched and not delivered,
//! where it stands, and how far it is known to be complete.
//!
//! Events are delivered in cluster-time order across lanes, never past the watermark:
//! the lowest time up to which every lane is complete (its high-water mark). A lane is
//! complete up to its last fetched event (a stream is ordered), and, once it drains
//! empty, up to how far the server says it scanned (the post-batch token's time) or,
//! on a server without post-batch tokens, up to the newest oplog entry read before the
//! drain. A single lane (the database mode) is ordered by the server: no watermark.

use std::collections::VecDeque;

use mongodb::bson::{Document, Timestamp};
use mongodb::change_stream::event::{ChangeStreamEvent, OperationType, ResumeToken};

use super::position::{self, Mark, Mode, successor, token_time};
use super::{WATCHED, history_lost, to_change};
use crate::domain::{Change, ChangePosition};
use crate::store::{StoreError, StoreResult};

pub(super) type Event = ChangeStreamEvent<Document>;

pub(super) struct Lane {
    /// The lane's collection and its name in the feed; `None` for the database stream,
    /// whose events name their collection.
    collection: Option<(&'static str, &'static str)>,
    pending: VecDeque<Pending>,
    /// Where this lane stands as of what was delivered.
    mark: Mark,
    /// Every event of this lane up to this time is pending or delivered.
    high: Option<Timestamp>,
    /// The stream's cursor closed: the server ends a change stream only after an
    /// invalidate.
    closed: bool,
}

struct Pending {
    time: Timestamp,
    event: Event,
    /// The lane's mark once this event is delivered, when it says more than the event's
    /// own token (the lane drained right after it).
    then: Option<Mark>,
}

/// Whether history no longer adds up after this event of a lane watching `watched`
/// (`None`: the database stream, filtered to the watched collections). The stand-in
/// shows every drop in the database to every collection's stream, without saying
/// which collection: one naming another collection is not this lane's.
fn ends_history(event: &Event, watched: Option<&str>) -> bool {
    match event.operation_type {
        OperationType::Invalidate | OperationType::DropDatabase => true,
        OperationType::Drop | OperationType::Rename => {
            let named = event.ns.as_ref().and_then(|ns| ns.coll.as_deref());
            !matches!((watched, named), (Some(mine), Some(coll)) if mine != coll)
        }
        _ => false,
    }
}

/// The feed's name for the collection an event of the database stream names.
fn feed_name(event: &Event) -> Option<&'static str> {
    let coll = event.ns.as_ref()?.coll.as_deref()?;
    WATCHED
        .iter()
        .find(|(name, _)| *name == coll)
        .map(|(_, feed)| *feed)
}

impl Lane {
    pub(super) fn new(collection: Option<(&'static str, &'static str)>, mark: Mark) -> Lane {
        Lane {
            collection,
            pending: VecDeque::new(),
            mark,
            high: None,
            closed: false,
        }
    }

    /// Whether to fetch more: fewer than `limit` pending and the stream still open.
    pub(super) fn wants(&self, limit: usize) -> bool {
        self.pending.len() < limit && !self.closed
    }

    pub(super) fn push(&mut self, event: Event) -> StoreResult<()> {
        let time = event.cluster_time.ok_or_else(|| {
            StoreError::Backend(anyhow::anyhow!("a change event without a cluster time"))
        })?;
        self.high = self.high.max(Some(time));
        self.pending.push_back(Pending {
            time,
            event,
            then: None,
        });
        Ok(())
    }

    /// The stream answered an empty batch: record how far this lane is now known to be
    /// complete, and the mark that holds once what is pending has been delivered.
    /// `token`: the driver's token after the empty batch, which is the post-batch token
    /// if the server sent one. `newest`: the newest oplog entry read before the drain,
    /// on a server without post-batch tokens. `merged`: more than one lane.
    pub(super) fn drained(
        &mut self,
        token: Option<ResumeToken>,
        alive: bool,
        newest: Option<Timestamp>,
        merged: bool,
    ) -> StoreResult<()> {
        self.closed = !alive;
        let (high, mark) = match (token, newest) {
            (Some(token), _) => {
                let high = token_time(&token);
                if high.is_none() && merged {
                    return Err(StoreError::Backend(anyhow::anyhow!(
                        "cannot read the cluster time of a post-batch resume token, \
                         so cannot merge the collections' change streams in order"
                    )));
                }
                (high, Mark::After(token))
            }
            // Correct on the stand-in, which writes its oplog in timestamp order under a
            // lock and returns only what is written: every entry up to `newest` was
            // there before this drain began. Not used where the server sends post-batch
            // tokens (real MongoDB), where an oplog entry read from `local` may be neither
            // majority-committed nor past every hole yet, and so not in the stream yet.
            (None, Some(newest)) => {
                let high = self.high.max(Some(newest)).unwrap_or(newest);
                (Some(high), Mark::From(successor(high)))
            }
            (None, None) => return Ok(()),
        };
        self.high = self.high.max(high);
        match self.pending.back_mut() {
            Some(last) => last.then = Some(mark),
            None => self.mark = mark,
        }
        Ok(())
    }
}

/// The lane whose next event comes first, if that event is under the watermark.
fn next_lane(lanes: &[Lane]) -> Option<usize> {
    let (time, index) = lanes
        .iter()
        .enumerate()
        .filter_map(|(index, lane)| lane.pending.front().map(|p| (p.time, index)))
        .min()?;
    if lanes.len() == 1 {
        return Some(index);
    }
    // `None` (a lane not known complete up to any time) sorts first: nothing passes.
    let watermark = lanes.iter().map(|lane| lane.high).min().flatten()?;
    (time <= watermark).then_some(index)
}

fn position_of(mode: Mode, lanes: &[Lane]) -> StoreResult<ChangePosition> {
    let marks: Vec<Mark> = lanes.iter().map(|lane| lane.mark.clone()).collect();
    position::encode(mode, &marks)
}

/// Up to `limit` changes in cluster-time order, each with the position just after it.
/// `HistoryLost` when the next event ends a watched collection's history, or a stream
/// closed, and there is nothing before it to deliver.
pub(super) fn deliver(
    mode: Mode,
    lanes: &mut [Lane],
    limit: usize,
    after: Option<&ChangePosition>,
) -> StoreResult<Vec<Change>> {
    let mut changes = Vec::new();
    while changes.len() < limit {
        let Some(index) = next_lane(lanes) else {
            break;
        };
        let lane = &mut lanes[index];
        let Some(item) = lane.pending.pop_front() else {
            break;
        };
        if ends_history(&item.event, lane.collection.map(|(name, _)| name)) {
            let what = format!("{:?} event", item.event.operation_type);
            // Deliver what came before; the next read fails at this event.
            lane.pending.push_front(item);
            if changes.is_empty() {
                return Err(history_lost(after, &what));
            }
            break;
        }
        lane.mark = item
            .then
            .unwrap_or_else(|| Mark::After(item.event.id.clone()));
        let named = lane.collection.map(|(_, feed)| feed);
        let Some(collection) = named.or_else(|| feed_name(&item.event)) else {
            continue;
        };
        if let Some((collection, op, key, document)) = to_change(collection, &item.event)? {
            let event = &item.event;
            changes.push(Change {
                position: position_of(mode, lanes)?,
                seq: event
                    .cluster_time
                    .map(|t| (u64::from(t.time) << 32) | u64::from(t.increment))
                    .unwrap_or_default(),
                at_ms: event
                    .wall_time
                    .map(|t| t.timestamp_millis())
                    .or(event.cluster_time.map(|t| i64::from(t.time) * 1000))
                    .unwrap_or_default(),
                collection: collection.to_owned(),
                op,
                key,
                document,
            });
        }
    }
    let closed = lanes.iter().any(|l| l.closed && l.pending.is_empty());
    if closed && changes.is_empty() {
        return Err(history_lost(after, "a change stream closed"));
    }
    Ok(changes)
}

#[cfg(test)]
mod tests {
    use mongodb::bson::{Bson, doc};

    use super::*;

    const MODE: Mode = Mode::Collections {
        post_batch_tokens: false,
    };

    fn at(time: u32) -> Timestamp {
        Timestamp { time, increment: 0 }
    }

    fn insert(time: u32, key: &str) -> Event {
        let id = format!("{time:08x}");
        mongodb::bson::from_document(doc! {
            "_id": { "_data": id },
            "operationType": "insert",
            "clusterTime": Bson::Timestamp(at(time)),
            "documentKey": { "_id": key },
            "fullDocument": { "_id": key, "from": "a", "to": "b" },
        })
        .unwrap()
    }

    fn lanes() -> Vec<Lane> {
        WATCHED
            .iter()
            .map(|&watched| Lane::new(Some(watched), Mark::From(at(1))))
            .collect()
    }

    fn keys(changes: &[Change]) -> Vec<&str> {
        changes.iter().map(|c| c.key.as_str()).collect()
    }

    #[test]
    fn nothing_passes_a_lane_not_known_complete() {
        let mut lanes = lanes();
        lanes[1].push(insert(5, "f5")).unwrap();
        for lane in &mut lanes[2..] {
            lane.drained(None, true, Some(at(9)), true).unwrap();
        }
        // Lane 0 has not answered yet: it may still hold an event before 5.
        assert!(deliver(MODE, &mut lanes, 10, None).unwrap().is_empty());
        lanes[0].push(insert(3, "u3")).unwrap();
        lanes[0].push(insert(7, "u7")).unwrap();
        // Complete up to 7, 5 and 9: the watermark is 5.
        let changes = deliver(MODE, &mut lanes, 10, None).unwrap();
        assert_eq!(keys(&changes), ["u3", "f5"]);
        lanes[1].drained(None, true, Some(at(9)), true).unwrap();
        lanes[0].drained(None, true, Some(at(9)), true).unwrap();
        let changes = deliver(MODE, &mut lanes, 10, None).unwrap();
        assert_eq!(keys(&changes), ["u7"]);
    }

    #[test]
    fn a_drained_lane_moves_its_mark_once_its_events_are_delivered() {
        let mut lanes = lanes();
        lanes[0].push(insert(3, "u3")).unwrap();
        for lane in lanes.iter_mut() {
            lane.drained(None, true, Some(at(8)), true).unwrap();
        }
        // The quiet lanes stand past 8 at once; lane 0 after its event, at the same.
        assert_eq!(lanes[1].mark, Mark::From(successor(at(8))));
        assert_eq!(lanes[0].mark, Mark::From(at(1)));
        let changes = deliver(MODE, &mut lanes, 10, None).unwrap();
        assert_eq!(keys(&changes), ["u3"]);
        assert!(lanes.iter().all(|l| l.mark == Mark::From(successor(at(8)))));
        let marks = position::decode(&changes[0].position, MODE).unwrap();
        assert!(marks.iter().all(|m| *m == Mark::From(successor(at(8)))));
    }

    #[test]
    fn a_drop_ends_history_after_what_came_before() {
        let mut lanes = lanes();
        lanes[0].push(insert(3, "u3")).unwrap();
        let mut drop = insert(4, "x");
        drop.operation_type = OperationType::Drop;
        lanes[0].push(drop).unwrap();
        for lane in lanes.iter_mut() {
            lane.drained(None, true, Some(at(8)), true).unwrap();
        }
        let changes = deliver(MODE, &mut lanes, 10, None).unwrap();
        assert_eq!(keys(&changes), ["u3"]);
        let next = deliver(MODE, &mut lanes, 10, Some(&changes[0].position));
        assert!(matches!(next, Err(StoreError::HistoryLost(_))), "{next:?}");
    }
}
