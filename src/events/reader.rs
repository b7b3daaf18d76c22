//! `EventReader`: a reader of the event log in batches.
//!
//! A task follows the log through the store's tail (a tailable cursor, or the embedded
//! notification) and feeds a bounded queue; the consumer takes one chunk, blocking while
//! the log is idle, then drains whatever else is queued into one batch of at most
//! `batch_max` events. A burst therefore arrives as few large batches and a quiet log as
//! small ones, and a slow consumer holds back the cursor task instead of growing memory.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use crate::domain::{Event, EventId};
use crate::store::{EventStore, StoreError, StoreResult};

/// Chunks (each one store read) queued between the cursor task and the consumer.
const QUEUE_CHUNKS: usize = 8;

pub struct EventReader {
    queue: mpsc::Receiver<StoreResult<Vec<Event>>>,
    /// Events taken from the queue that did not fit in the last batch.
    carried: VecDeque<Event>,
    /// An error seen after the carried events; returned once they are delivered.
    failed: Option<StoreError>,
    batch_max: usize,
    task: JoinHandle<()>,
}

impl EventReader {
    /// Follows the log from after `after` (from the oldest kept event when `None`).
    pub fn open(
        events: Arc<dyn EventStore>,
        after: Option<EventId>,
        batch_max: usize,
        poll: Duration,
    ) -> EventReader {
        let (sender, queue) = mpsc::channel(QUEUE_CHUNKS);
        let task = tokio::spawn(async move {
            let mut tail = events.tail(after, poll);
            while let Some(chunk) = tail.next().await {
                let failed = chunk.is_err();
                if sender.send(chunk).await.is_err() || failed {
                    return;
                }
            }
        });
        EventReader {
            queue,
            carried: VecDeque::new(),
            failed: None,
            batch_max: batch_max.max(1),
            task,
        }
    }

    /// The next batch: at least one event (waiting for it), at most `batch_max`, in id
    /// order. `PositionLost` when the log trimmed what this reader had not read yet.
    pub async fn next_batch(&mut self) -> StoreResult<Vec<Event>> {
        if self.carried.is_empty() {
            if let Some(error) = self.failed.take() {
                return Err(error);
            }
            match self.queue.recv().await {
                Some(Ok(chunk)) => self.carried.extend(chunk),
                Some(Err(error)) => return Err(error),
                None => {
                    return Err(StoreError::Backend(anyhow::anyhow!(
                        "the event log reader stopped"
                    )));
                }
            }
        }
        while self.carried.len() < self.batch_max && self.failed.is_none() {
            match self.queue.try_recv() {
                Ok(Ok(chunk)) => self.carried.extend(chunk),
                Ok(Err(error)) => self.failed = Some(error),
                Err(_) => break,
            }
        }
        let take = self.carried.len().min(self.batch_max);
        Ok(self.carried.drain(..take).collect())
    }
}

impl Drop for EventReader {
    fn drop(&mut self) {
        self.task.abort();
    }
}
