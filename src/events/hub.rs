//! The hub: one shared tail of the event log per process, prepared once per event and
//! fanned out to every open timeline stream through a bounded broadcast channel.
//! No connection opens a cursor of its own; a resuming one reads its catch-up from the
//! log in pages, then joins the broadcast.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use tokio::sync::{Semaphore, broadcast};
use tokio::task::JoinHandle;

use super::reader::EventReader;
use crate::domain::clock::Clock;
use crate::domain::{Event, EventId, EventType, PostId, hashtags};
use crate::feed::{Original, TimelineItem};
use crate::store::{Store, StoreError, StoreResult};

/// Posts of an unfollowed author named in the stream's `delete` event.
pub const UNFOLLOW_REMOVED_MAX: usize = 100;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HubSettings {
    pub batch_max: usize,
    /// Embedded: how often the tail looks for other processes' appends; MongoDB: how
    /// often an empty log is polled.
    pub poll: Duration,
    /// Open streams allowed in this process; more are refused (503).
    pub max_streams: usize,
    /// Messages buffered per stream; a stream that falls this far behind is closed.
    pub stream_buffer: usize,
}

/// An event with what every stream needs to route and send it, looked up once.
#[derive(Debug)]
pub struct Prepared {
    pub event: Event,
    /// `post.created`: the item as the timeline shows it.
    pub item: Option<TimelineItem>,
    /// `post.created`, `post.deleted` (when known), `post.liked` (while the post
    /// exists): the post's author.
    pub author: Option<String>,
    /// `user.unfollowed`: the unfollowed author's newest post ids.
    pub removed: Vec<PostId>,
    /// `post.created` and `post.deleted`: the post's hashtags (`domain::hashtags`);
    /// `None` for a deletion whose post's creation left the log.
    pub tags: Option<Vec<String>>,
}

/// What the broadcast carries.
#[derive(Debug, Clone)]
pub enum Delivery {
    Event(Arc<Prepared>),
    /// The shared tail lost its position: every stream tells its client to reload.
    Reset(Option<EventId>),
}

pub struct Hub {
    pub(super) store: Store,
    pub(super) settings: HubSettings,
    pub(super) sender: broadcast::Sender<Delivery>,
    pub(super) slots: Arc<Semaphore>,
    pub(super) slow_disconnects: AtomicU64,
    /// Set on shutdown: every stream ends, so the server's drain can finish.
    pub(super) closing: tokio::sync::watch::Sender<bool>,
    /// Moved by every block and mute change made in this process (see
    /// [`Hub::relations_changed`]): a stream reads what its user hides again before
    /// its next item once it sees it moved.
    pub(super) relations_epoch: AtomicU64,
    /// The server's clock: timed mutes expire by it.
    clock: Arc<dyn Clock>,
    task: std::sync::Mutex<Option<JoinHandle<()>>>,
}

impl Hub {
    /// Starts the shared tail at the log's current head; `clock` is the server's, which
    /// timed mutes expire by.
    pub fn start(store: Store, settings: HubSettings, clock: Arc<dyn Clock>) -> Arc<Hub> {
        // Big enough for a burst of a few batches; a stream further behind is slow.
        let (sender, _) = broadcast::channel((settings.batch_max * 4).max(1024));
        let hub = Arc::new(Hub {
            store,
            settings,
            sender,
            slots: Arc::new(Semaphore::new(settings.max_streams)),
            slow_disconnects: AtomicU64::new(0),
            closing: tokio::sync::watch::channel(false).0,
            relations_epoch: AtomicU64::new(0),
            clock,
            task: std::sync::Mutex::new(None),
        });
        let task = tokio::spawn(follow(Arc::downgrade(&hub)));
        *hub.task.lock().unwrap_or_else(|p| p.into_inner()) = Some(task);
        hub
    }

    /// Ends every open stream and refuses new ones (on shutdown: an open stream would
    /// otherwise keep the server's graceful drain waiting for ever).
    pub fn close(&self) {
        self.closing.send_replace(true);
        self.slots.close();
    }

    /// The server's time.
    pub(super) fn now_ms(&self) -> i64 {
        self.clock.now_ms()
    }

    /// Called by every block, unblock, mute and unmute of this process before it
    /// answers, with the users whose streams it concerns: every stream reads what its
    /// user hides again before sending its next item. One counter for all users, as
    /// such changes are rare beside posts: a stream of someone else pays one read.
    pub fn relations_changed(&self, users: &[&str]) {
        tracing::debug!(?users, "blocks or mutes changed");
        self.relations_epoch.fetch_add(1, Ordering::SeqCst);
    }

    /// Streams open now.
    pub fn open_streams(&self) -> usize {
        self.settings.max_streams - self.slots.available_permits()
    }

    /// Streams closed so far because their client did not keep up.
    pub fn slow_disconnects(&self) -> u64 {
        self.slow_disconnects.load(Ordering::SeqCst)
    }

    /// Looks up, in a few batched reads, what streams need about `events`.
    pub(super) async fn prepare(&self, events: Vec<Event>) -> StoreResult<Vec<Prepared>> {
        let authors: Vec<String> = events
            .iter()
            .filter(|e| e.kind == EventType::PostCreated)
            .filter_map(|e| e.field("author").map(str::to_owned))
            .chain(
                events
                    .iter()
                    .filter(|e| e.kind == EventType::PostReposted)
                    .flat_map(|e| [e.field("user"), e.field("author")])
                    .flatten()
                    .map(str::to_owned),
            )
            .collect();
        let names: HashMap<String, String> = if authors.is_empty() {
            HashMap::new()
        } else {
            self.store
                .users
                .authors("", &authors)
                .await?
                .into_iter()
                .map(|a| (a.id, a.display_name))
                .collect()
        };
        let mut prepared = Vec::with_capacity(events.len());
        for event in events {
            let mut author = event.field("author").map(str::to_owned);
            let mut item = None;
            let mut removed = Vec::new();
            let tags = tags_of(&event);
            match event.kind {
                EventType::PostCreated => {
                    let id = event.field("post").and_then(|p| p.parse::<PostId>().ok());
                    if let (Some(id), Some(author)) = (id, &author) {
                        item = Some(TimelineItem {
                            id,
                            author: author.clone(),
                            author_display_name: names
                                .get(author)
                                .cloned()
                                .unwrap_or_else(|| author.clone()),
                            text: event.field("text").unwrap_or_default().to_owned(),
                            reply_to_author: event.reply_to_author().map(str::to_owned),
                            repost_of: None,
                        });
                    }
                }
                // A repost is an item of the reposter's carrying its original, looked
                // up once for every stream (none once the original is gone).
                EventType::PostReposted => {
                    let id = event.field("repost").and_then(|p| p.parse::<PostId>().ok());
                    let post = event.field("post").and_then(|p| p.parse::<PostId>().ok());
                    let original = match post {
                        Some(post) => self.store.content.post(post).await?,
                        None => None,
                    };
                    let name = |user: &str| names.get(user).cloned().unwrap_or(user.to_owned());
                    if let (Some(id), Some(user), Some(original)) =
                        (id, event.field("user"), original)
                    {
                        item = Some(TimelineItem {
                            id,
                            author: user.to_owned(),
                            author_display_name: name(user),
                            text: original.text.clone(),
                            reply_to_author: None,
                            repost_of: Some(Original {
                                id: original.id,
                                author_display_name: name(&original.author),
                                reply_to_author: original.reply_to.map(|r| r.author),
                                author: original.author,
                            }),
                        });
                    }
                }
                // A like notifies the liked post's author: looked up once, for every
                // stream (`None` once the post is gone).
                EventType::PostLiked => {
                    if let Some(post) = event.field("post").and_then(|p| p.parse::<PostId>().ok()) {
                        author = self.store.content.post(post).await?.map(|p| p.author);
                    }
                }
                EventType::UserUnfollowed => {
                    if let Some(followee) = event.field("followee") {
                        removed = self
                            .store
                            .content
                            .posts_by_author(followee, None, UNFOLLOW_REMOVED_MAX)
                            .await?
                            .into_iter()
                            .map(|p| p.id)
                            .collect();
                    }
                }
                _ => {}
            }
            prepared.push(Prepared {
                event,
                item,
                author,
                removed,
                tags,
            });
        }
        Ok(prepared)
    }
}

/// A post event's hashtags: as its payload lists them (a deletion's, copied from the
/// creation by the events worker, `null` when that had left the log), else parsed from
/// its text.
fn tags_of(event: &Event) -> Option<Vec<String>> {
    if !matches!(event.kind, EventType::PostCreated | EventType::PostDeleted) {
        return None;
    }
    match event.payload.get("tags").and_then(|t| t.as_array()) {
        Some(tags) => Some(
            tags.iter()
                .filter_map(|t| t.as_str().map(str::to_owned))
                .collect(),
        ),
        None if event.kind == EventType::PostCreated => {
            Some(hashtags(event.field("text").unwrap_or_default()))
        }
        None => None,
    }
}

impl Drop for Hub {
    fn drop(&mut self) {
        if let Some(task) = self.task.lock().unwrap_or_else(|p| p.into_inner()).take() {
            task.abort();
        }
    }
}

/// The shared tail: from the head at start, batch by batch, prepared and broadcast.
/// Position lost (the hub fell behind the trim): every stream gets a reset and the tail
/// restarts at the head. Other failures: retried from the last event broadcast.
async fn follow(hub: std::sync::Weak<Hub>) {
    let mut last: Option<EventId> = None;
    let mut started = false;
    let mut failures: u32 = 0;
    loop {
        let Some(strong) = hub.upgrade() else { return };
        if !started {
            match strong.store.events.newest_event().await {
                Ok(head) => {
                    last = head;
                    started = true;
                }
                Err(error) => {
                    tracing::warn!(error = %error, "live streams: reading the event log head failed");
                    drop(strong);
                    failures = failures.saturating_add(1);
                    tokio::time::sleep(backoff(failures)).await;
                    continue;
                }
            }
        }
        let settings = strong.settings;
        let events = strong.store.events.clone();
        drop(strong);
        let mut reader = EventReader::open(events, last, settings.batch_max, settings.poll);
        loop {
            let batch = reader.next_batch().await;
            let Some(strong) = hub.upgrade() else { return };
            match batch {
                Ok(batch) => {
                    let newest = batch.last().map(|e| e.id);
                    let prepared = loop {
                        match strong.prepare(batch.clone()).await {
                            Ok(prepared) => break prepared,
                            Err(error) => {
                                tracing::warn!(error = %error, "live streams: preparing events failed; retrying");
                                failures = failures.saturating_add(1);
                                tokio::time::sleep(backoff(failures)).await;
                            }
                        }
                    };
                    failures = 0;
                    for prepared in prepared {
                        // No receiver is fine: nobody is listening.
                        let _ = strong.sender.send(Delivery::Event(Arc::new(prepared)));
                    }
                    last = newest.or(last);
                }
                Err(StoreError::PositionLost(why)) => {
                    tracing::error!(%why, "live streams fell behind the event log's trim; every stream is reset");
                    let head = strong.store.events.newest_event().await.unwrap_or(None);
                    let _ = strong.sender.send(Delivery::Reset(head));
                    last = head;
                    break;
                }
                Err(error) => {
                    tracing::warn!(error = %error, "live streams: reading the event log failed; reopening");
                    failures = failures.saturating_add(1);
                    drop(strong);
                    tokio::time::sleep(backoff(failures)).await;
                    break;
                }
            }
        }
    }
}

fn backoff(failures: u32) -> Duration {
    Duration::from_millis(50u64 << failures.min(6))
}
