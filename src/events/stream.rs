//! One live stream: the user's new timeline items and removals, notifications, and
//! the public and tag listings' new and deleted posts, as its [`Interest`] asks
//! (routing and filtering in `router.rs`), in event-log order, each tagged with its
//! event id.
//!
//! Opening subscribes to the hub's broadcast first, then loads the following set, then
//! (when resuming) reads what was missed from the log: anything appended after the
//! subscription is in the broadcast, anything before it in the log, and broadcast
//! events at or below the last one sent are skipped, so nothing is lost or repeated.
//! A connection task routes events into a per-stream buffer of `stream_buffer`
//! messages; a client that lets it fill, or falls behind the broadcast, is disconnected,
//! and no other stream waits for it.

use std::collections::HashSet;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Instant;

use tokio::sync::{OwnedSemaphorePermit, broadcast, mpsc, watch};

use super::hub::{Delivery, Hub, Prepared};
use super::router::Router;
use crate::domain::{EventId, NotificationType, PostId};
use crate::feed::TimelineItem;
use crate::store::{StoreError, StoreResult};

/// Following lists are read in pages of this many.
const FOLLOWING_PAGE: usize = 1000;
/// Catch-up reads from the log take this many events at a time.
const CATCH_UP_PAGE: usize = 500;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StreamMessage {
    /// A new item in the timeline.
    Item { id: EventId, item: TimelineItem },
    /// Items to remove: a deleted post, or an unfollowed author's posts.
    Delete {
        id: EventId,
        posts: Vec<PostId>,
        author: Option<String>,
    },
    /// A new notification of the stream's user (`domain::notifications`' rules, as the
    /// notifications worker applies them): `notification` is the id the list will give
    /// it (`notification_id` of the event's time and id).
    Notification {
        id: EventId,
        notification: PostId,
        kind: NotificationType,
        actor: String,
        post: Option<PostId>,
        at_ms: i64,
    },
    /// A new post of the listings the stream follows ([`Interest::public`] and
    /// [`Interest::tags`]).
    Listed {
        id: EventId,
        item: TimelineItem,
        listings: Listings,
    },
    /// A deleted post of the listings the stream follows.
    Unlisted {
        id: EventId,
        post: PostId,
        listings: Listings,
    },
    /// The log does not hold the position asked for (trimmed, or never issued: past its
    /// newest event): reload the timeline, then continue from `id`, the head.
    Reset { id: Option<EventId> },
}

/// The listings a post belongs to, among those a stream follows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listings {
    /// The public listing (when the stream follows it: every post is on it).
    pub public: bool,
    /// The followed tags the post carries (every followed tag for a deletion whose
    /// tags the log no longer knows).
    pub tags: Vec<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    #[error("too many open streams")]
    TooMany,
    #[error(transparent)]
    Store(#[from] StoreError),
}

pub type TimelineStream = mpsc::Receiver<StreamMessage>;

pub use super::router::{Interest, RELATIONS_RECHECK};

impl Hub {
    /// Opens `user`'s stream of their home timeline and notifications
    /// ([`Interest::home`]), resuming after `last_event_id` when given (a `reset` first
    /// when the log no longer holds it). `NotFound` for an unknown user; `TooMany` past
    /// `events.max_streams`.
    pub async fn open_stream(
        self: &Arc<Self>,
        user: &str,
        last_event_id: Option<EventId>,
    ) -> Result<TimelineStream, OpenError> {
        let (_, interest) = watch::channel(Interest::home());
        self.open_stream_for(user, last_event_id, interest).await
    }

    /// As [`Hub::open_stream`], carrying what `interest` asks for at each event: the
    /// opener keeps its sender to change it while the stream runs (one stream, one slot
    /// of `events.max_streams` and one buffer, however many listings it follows).
    pub async fn open_stream_for(
        self: &Arc<Self>,
        user: &str,
        last_event_id: Option<EventId>,
        interest: watch::Receiver<Interest>,
    ) -> Result<TimelineStream, OpenError> {
        let permit = self
            .slots
            .clone()
            .try_acquire_owned()
            .map_err(|_| OpenError::TooMany)?;
        let closing = self.closing.subscribe();
        if self.store.users.user(user).await?.is_none() {
            return Err(StoreError::NotFound(format!("user {user}")).into());
        }
        let live = self.sender.subscribe();
        let mut following = HashSet::new();
        let mut after: Option<String> = None;
        loop {
            let page = self
                .store
                .graph
                .following(user, after.as_deref(), FOLLOWING_PAGE)
                .await?;
            let done = page.len() < FOLLOWING_PAGE;
            after = page.last().cloned();
            following.extend(page);
            if done {
                break;
            }
        }
        let hidden_epoch = self.relations_epoch.load(Ordering::SeqCst);
        let hidden = self.store.relations.hidden(user, self.now_ms()).await?;
        let router = Router {
            user: user.to_owned(),
            following,
            hidden,
            hidden_epoch,
            hidden_at: Instant::now(),
            seen: Default::default(),
        };
        let (sender, receiver) = mpsc::channel(self.settings.stream_buffer.max(1));
        metrics::gauge!("socialite_streams_open").increment(1.0);
        let task = Task {
            hub: self.clone(),
            router,
            interest,
            live,
            sender,
        };
        tokio::spawn(task.run(last_event_id, (permit, closing)));
        Ok(receiver)
    }
}

/// How a stream's task ended.
enum End {
    Gone,
    Slow,
    Failed(StoreError),
}

/// A stream's task: routes the shared tail into the stream's buffer.
struct Task {
    hub: Arc<Hub>,
    router: Router,
    interest: watch::Receiver<Interest>,
    live: broadcast::Receiver<Delivery>,
    sender: mpsc::Sender<StreamMessage>,
}

impl Task {
    async fn run(
        mut self,
        resume: Option<EventId>,
        (_permit, mut closing): (OwnedSemaphorePermit, watch::Receiver<bool>),
    ) {
        let end = tokio::select! {
            end = self.stream(resume) => end,
            _ = closing.wait_for(|closed| *closed) => End::Gone,
        };
        let user = &self.router.user;
        match end {
            End::Gone => {}
            End::Slow => {
                self.hub.slow_disconnects.fetch_add(1, Ordering::SeqCst);
                metrics::counter!("socialite_streams_slow_disconnects_total").increment(1);
                tracing::info!(%user, "timeline stream closed: the client did not keep up");
            }
            End::Failed(error) => {
                tracing::warn!(%user, error = %error, "timeline stream closed");
            }
        }
        metrics::gauge!("socialite_streams_open").decrement(1.0);
    }

    /// The messages `prepared` makes for this stream, by its interest now.
    fn route(&mut self, prepared: &Prepared) -> Vec<StreamMessage> {
        let interest = self.interest.borrow();
        self.router.route(prepared, &interest)
    }

    async fn stream(&mut self, resume: Option<EventId>) -> End {
        let mut last = None;
        if let Some(from) = resume {
            match self.catch_up(from).await {
                Ok(Ok(through)) => last = through,
                Ok(Err(end)) => return end,
                Err(error) => return End::Failed(error),
            }
        }
        loop {
            let delivery = tokio::select! {
                delivery = self.live.recv() => delivery,
                () = self.sender.closed() => return End::Gone,
            };
            let result = match delivery {
                Ok(Delivery::Event(prepared)) => {
                    if last.is_some_and(|l| prepared.event.id <= l) {
                        continue;
                    }
                    last = Some(prepared.event.id);
                    let mut sent = Ok(());
                    for message in self.route(&prepared) {
                        sent = match self.router.admit(&self.hub, &message).await {
                            Ok(true) => send(&self.sender, message),
                            Ok(false) => Ok(()),
                            Err(error) => Err(End::Failed(error)),
                        };
                        if sent.is_err() {
                            break;
                        }
                    }
                    sent
                }
                Ok(Delivery::Reset(id)) => {
                    last = id;
                    send(&self.sender, StreamMessage::Reset { id })
                }
                Err(broadcast::error::RecvError::Lagged(_)) => Err(End::Slow),
                Err(broadcast::error::RecvError::Closed) => Err(End::Gone),
            };
            if let Err(end) = result {
                return end;
            }
        }
    }

    /// Sends what the log holds after `from`; returns the last id covered (live events
    /// up to it are skipped). A position the log does not hold, trimmed or never issued
    /// (past its newest event), gives a `reset` at the current head (none while the log
    /// is empty).
    async fn catch_up(&mut self, from: EventId) -> StoreResult<Result<Option<EventId>, End>> {
        let events = self.hub.store.events.clone();
        let mut last = from;
        // Only `from` came from the client; every later position is an id the log holds.
        let mut read = events.events_after_issued(Some(from), CATCH_UP_PAGE).await;
        loop {
            let page = match read {
                Ok(page) => page,
                Err(StoreError::PositionLost(_)) => {
                    let head = events.newest_event().await?;
                    let sent = self.sender.send(StreamMessage::Reset { id: head }).await;
                    return Ok(sent.map(|()| head).map_err(|_| End::Gone));
                }
                Err(error) => return Err(error),
            };
            let Some(newest) = page.last().map(|e| e.id) else {
                return Ok(Ok(Some(last)));
            };
            // Catching up waits for the client (backpressure) rather than calling it slow.
            for prepared in self.hub.prepare(page).await? {
                for message in self.route(&prepared) {
                    if self.router.admit(&self.hub, &message).await?
                        && self.sender.send(message).await.is_err()
                    {
                        return Ok(Err(End::Gone));
                    }
                }
            }
            last = newest;
            read = events.events_after(Some(last), CATCH_UP_PAGE).await;
        }
    }
}

fn send(sender: &mpsc::Sender<StreamMessage>, message: StreamMessage) -> Result<(), End> {
    sender.try_send(message).map_err(|e| match e {
        mpsc::error::TrySendError::Full(_) => End::Slow,
        mpsc::error::TrySendError::Closed(_) => End::Gone,
    })
}
