//! One live timeline stream: the user's new timeline items and removals, in event-log
//! order, each tagged with its event id.
//!
//! Opening subscribes to the hub's broadcast first, then loads the following set, then
//! (when resuming) reads what was missed from the log: anything appended after the
//! subscription is in the broadcast, anything before it in the log, and broadcast
//! events at or below the last one sent are skipped, so nothing is lost or repeated.
//! A connection task routes events into a per-stream buffer of `stream_buffer`
//! messages; a client that lets it fill, or falls behind the broadcast, is disconnected.

use std::collections::HashSet;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use tokio::sync::{OwnedSemaphorePermit, broadcast, mpsc, watch};

use super::hub::{Delivery, Hub, Prepared};
use crate::domain::relations::Hidden;
use crate::domain::{
    EventId, EventType, NotificationType, PostId, notification_id, notifies, post_notifies,
    reply_visible,
};
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
    /// The log does not hold the position asked for (trimmed, or never issued: past its
    /// newest event): reload the timeline, then continue from `id`, the head.
    Reset { id: Option<EventId> },
}

#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    #[error("too many open streams")]
    TooMany,
    #[error(transparent)]
    Store(#[from] StoreError),
}

pub type TimelineStream = mpsc::Receiver<StreamMessage>;

/// In other processes than the one that made a block or mute, a stream reads what its
/// user hides again at most this long after its last read, before its next item.
pub const RELATIONS_RECHECK: Duration = Duration::from_secs(1);

/// What a stream needs to route events to its user.
struct Router {
    user: String,
    following: HashSet<String>,
    /// What the user's blocks and mutes hide (see [`Router::admit`]).
    hidden: Hidden,
    /// The hub's relations epoch, and when, `hidden` was read.
    hidden_epoch: u64,
    hidden_at: Instant,
}

impl Router {
    /// Whether `message` may go to the user: an item whose author is hidden from them
    /// does not. What is hidden is read again first when this process changed a block
    /// or mute since the last read (so from the change's 2xx on), when a timed mute in
    /// it expired, or when the last read is older than [`RELATIONS_RECHECK`] (changes
    /// made in other processes).
    async fn admit(&mut self, hub: &Hub, message: &StreamMessage) -> StoreResult<bool> {
        // A repost is hidden with its original's author as with its reposter.
        let original = match message {
            StreamMessage::Item { item, .. } => item.repost_of.as_ref().map(|o| &o.author),
            _ => None,
        };
        let (other, notification) = match message {
            StreamMessage::Item { item, .. } => (&item.author, false),
            StreamMessage::Notification { actor, .. } => (actor, true),
            _ => return Ok(true),
        };
        if *other == self.user && original.is_none_or(|o| *o == self.user) {
            return Ok(true);
        }
        let epoch = hub.relations_epoch.load(Ordering::SeqCst);
        let now = crate::domain::now_ms();
        let stale = epoch != self.hidden_epoch
            || self.hidden.expires_ms().is_some_and(|e| now >= e)
            || self.hidden_at.elapsed() >= RELATIONS_RECHECK;
        if stale {
            self.hidden = hub.store.relations.hidden(&self.user, now).await?;
            self.hidden_epoch = epoch;
            self.hidden_at = Instant::now();
        }
        Ok(match notification {
            true => !self.hidden.hides_notifications_of(other),
            false => !self.hidden.hides(other) && original.is_none_or(|o| !self.hidden.hides(o)),
        })
    }
}

impl Router {
    /// Every message `prepared` makes for this stream, in order: at most a timeline
    /// message and a notification.
    fn route(&mut self, prepared: &Prepared) -> Vec<StreamMessage> {
        let mut out: Vec<StreamMessage> = self.timeline(prepared).into_iter().collect();
        out.extend(self.notification(prepared));
        out
    }

    /// The notification `prepared` is for this stream's user, if any: the same rules as
    /// the notifications worker (`domain::notifications`).
    fn notification(&self, prepared: &Prepared) -> Option<StreamMessage> {
        let event = &prepared.event;
        let user = self.user.as_str();
        let (kind, actor, post) = match event.kind {
            EventType::UserFollowed if event.field("followee") == Some(user) => {
                (NotificationType::Follow, event.field("follower")?, None)
            }
            EventType::PostLiked if prepared.author.as_deref() == Some(user) => {
                let post = event.field("post")?.parse().ok()?;
                (NotificationType::Like, event.field("user")?, Some(post))
            }
            EventType::PostCreated => {
                let author = event.field("author")?;
                let reply_to = event.reply_to();
                let text = event.field("text").unwrap_or_default();
                let (_, kind) = post_notifies(author, text, reply_to.as_ref())
                    .into_iter()
                    .find(|(to, _)| to == user)?;
                (kind, author, Some(event.field("post")?.parse().ok()?))
            }
            _ => return None,
        };
        notifies(user, actor).then(|| StreamMessage::Notification {
            id: event.id,
            notification: notification_id(event.at_ms, event.id.0),
            kind,
            actor: actor.to_owned(),
            post,
            at_ms: event.at_ms,
        })
    }

    fn timeline(&mut self, prepared: &Prepared) -> Option<StreamMessage> {
        let event = &prepared.event;
        let id = event.id;
        let mine = |r: &Router, author: &str| author == r.user || r.following.contains(author);
        match event.kind {
            EventType::PostCreated => {
                let item = prepared.item.as_ref()?;
                // The home rule for replies, against the stream's following set.
                let parent = item.reply_to_author.as_deref();
                let follows_parent = parent.is_some_and(|p| self.following.contains(p));
                let shown = mine(self, &item.author)
                    && reply_visible(&self.user, &item.author, parent, follows_parent);
                shown.then(|| StreamMessage::Item {
                    id,
                    item: item.clone(),
                })
            }
            // A repost of the reposter's, unless the original itself is in the
            // timeline (its author is the user or followed, and the reply rule lets it
            // through): the original wins (see docs/timelines.md, "Reposts").
            EventType::PostReposted => {
                let item = prepared.item.as_ref()?;
                let original = item.repost_of.as_ref()?;
                let parent = original.reply_to_author.as_deref();
                let follows_parent = parent.is_some_and(|p| self.following.contains(p));
                let original_shown = mine(self, &original.author)
                    && reply_visible(&self.user, &original.author, parent, follows_parent);
                (mine(self, &item.author) && !original_shown).then(|| StreamMessage::Item {
                    id,
                    item: item.clone(),
                })
            }
            EventType::PostUnreposted => {
                let repost = event.field("repost")?.parse().ok()?;
                mine(self, event.field("user")?).then(|| StreamMessage::Delete {
                    id,
                    posts: vec![repost],
                    author: None,
                })
            }
            EventType::PostDeleted => {
                let post = event.field("post")?.parse().ok()?;
                // An unknown author (its creation left the log) goes to every stream:
                // a removal of an item a client does not hold is harmless.
                let relevant = prepared.author.as_deref().is_none_or(|a| mine(self, a));
                relevant.then(|| StreamMessage::Delete {
                    id,
                    posts: vec![post],
                    author: None,
                })
            }
            EventType::UserFollowed if event.field("follower") == Some(self.user.as_str()) => {
                self.following.insert(event.field("followee")?.to_owned());
                None
            }
            EventType::UserUnfollowed if event.field("follower") == Some(self.user.as_str()) => {
                let followee = event.field("followee")?.to_owned();
                self.following.remove(&followee);
                Some(StreamMessage::Delete {
                    id,
                    posts: prepared.removed.clone(),
                    author: Some(followee),
                })
            }
            _ => None,
        }
    }
}

impl Hub {
    /// Opens `user`'s stream, resuming after `last_event_id` when given (a `reset` first
    /// when the log no longer holds it). `NotFound` for an unknown user; `TooMany` past
    /// `events.max_streams`.
    pub async fn open_stream(
        self: &Arc<Self>,
        user: &str,
        last_event_id: Option<EventId>,
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
        let hidden = self
            .store
            .relations
            .hidden(user, crate::domain::now_ms())
            .await?;
        let router = Router {
            user: user.to_owned(),
            following,
            hidden,
            hidden_epoch,
            hidden_at: Instant::now(),
        };
        let (sender, receiver) = mpsc::channel(self.settings.stream_buffer.max(1));
        metrics::gauge!("socialite_streams_open").increment(1.0);
        tokio::spawn(run(
            self.clone(),
            router,
            live,
            last_event_id,
            sender,
            (permit, closing),
        ));
        Ok(receiver)
    }
}

/// How a stream's task ended.
enum End {
    Gone,
    Slow,
    Failed(StoreError),
}

async fn run(
    hub: Arc<Hub>,
    mut router: Router,
    mut live: broadcast::Receiver<Delivery>,
    resume: Option<EventId>,
    sender: mpsc::Sender<StreamMessage>,
    (_permit, mut closing): (OwnedSemaphorePermit, watch::Receiver<bool>),
) {
    let end = tokio::select! {
        end = stream(&hub, &mut router, &mut live, resume, &sender) => end,
        _ = closing.wait_for(|closed| *closed) => End::Gone,
    };
    match end {
        End::Gone => {}
        End::Slow => {
            hub.slow_disconnects.fetch_add(1, Ordering::SeqCst);
            metrics::counter!("socialite_streams_slow_disconnects_total").increment(1);
            tracing::info!(user = %router.user, "timeline stream closed: the client did not keep up");
        }
        End::Failed(error) => {
            tracing::warn!(user = %router.user, error = %error, "timeline stream closed");
        }
    }
    metrics::gauge!("socialite_streams_open").decrement(1.0);
}

fn send(sender: &mpsc::Sender<StreamMessage>, message: StreamMessage) -> Result<(), End> {
    sender.try_send(message).map_err(|e| match e {
        mpsc::error::TrySendError::Full(_) => End::Slow,
        mpsc::error::TrySendError::Closed(_) => End::Gone,
    })
}

async fn stream(
    hub: &Hub,
    router: &mut Router,
    live: &mut broadcast::Receiver<Delivery>,
    resume: Option<EventId>,
    sender: &mpsc::Sender<StreamMessage>,
) -> End {
    let mut last = None;
    if let Some(from) = resume {
        match catch_up(hub, router, from, sender).await {
            Ok(Ok(through)) => last = through,
            Ok(Err(end)) => return end,
            Err(error) => return End::Failed(error),
        }
    }
    loop {
        let delivery = tokio::select! {
            delivery = live.recv() => delivery,
            () = sender.closed() => return End::Gone,
        };
        let result = match delivery {
            Ok(Delivery::Event(prepared)) => {
                if last.is_some_and(|l| prepared.event.id <= l) {
                    continue;
                }
                last = Some(prepared.event.id);
                let mut sent = Ok(());
                for message in router.route(&prepared) {
                    sent = match router.admit(hub, &message).await {
                        Ok(true) => send(sender, message),
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
                send(sender, StreamMessage::Reset { id })
            }
            Err(broadcast::error::RecvError::Lagged(_)) => Err(End::Slow),
            Err(broadcast::error::RecvError::Closed) => Err(End::Gone),
        };
        if let Err(end) = result {
            return end;
        }
    }
}

/// Sends what the log holds after `from`; returns the last id covered (live events up
/// to it are skipped). A position the log does not hold, trimmed or never issued (past
/// its newest event), gives a `reset` at the current head (none while the log is empty).
async fn catch_up(
    hub: &Hub,
    router: &mut Router,
    from: EventId,
    sender: &mpsc::Sender<StreamMessage>,
) -> StoreResult<Result<Option<EventId>, End>> {
    let events = &hub.store.events;
    let mut last = from;
    // Only `from` came from the client; every later position is an id the log holds.
    let mut read = events.events_after_issued(Some(from), CATCH_UP_PAGE).await;
    loop {
        let page = match read {
            Ok(page) => page,
            Err(StoreError::PositionLost(_)) => {
                let head = events.newest_event().await?;
                let sent = sender.send(StreamMessage::Reset { id: head }).await;
                return Ok(sent.map(|()| head).map_err(|_| End::Gone));
            }
            Err(error) => return Err(error),
        };
        let Some(newest) = page.last().map(|e| e.id) else {
            return Ok(Ok(Some(last)));
        };
        // Catching up waits for the client (backpressure) rather than calling it slow.
        for prepared in hub.prepare(page).await? {
            for message in router.route(&prepared) {
                if router.admit(hub, &message).await? && sender.send(message).await.is_err() {
                    return Ok(Err(End::Gone));
                }
            }
        }
        last = newest;
        read = events.events_after(Some(last), CATCH_UP_PAGE).await;
    }
}
