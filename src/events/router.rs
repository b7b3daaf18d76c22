//! How one live stream picks its messages out of the shared tail: the reader's home
//! timeline (the home rules against the stream's following set), their notifications
//! (the notifications worker's rules), and the public and tag listings, as the stream's
//! [`Interest`] asks; then what the reader's blocks and mutes hide, on every kind, and
//! which reposts seen once leaves out (`seen.rs`).

use std::collections::{BTreeSet, HashSet};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use super::hub::{Hub, Prepared};
use super::seen::{Reader, SeenOnce};
use super::stream::{Listings, StreamMessage};
use crate::domain::relations::Hidden;
use crate::domain::reply_visible;
use crate::domain::{EventType, NotificationType, notification_id, notifies, post_notifies};
use crate::store::StoreResult;

/// In other processes than the one that made a block or mute, a stream reads what its
/// user hides again at most this long after its last read, before its next item.
pub const RELATIONS_RECHECK: Duration = Duration::from_secs(1);

/// What a stream carries. Its opener may change it while the stream runs (a
/// WebSocket's subscriptions, through the `watch` channel it opened the stream with);
/// each event is routed by the interest current when the stream reaches it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Interest {
    /// The home timeline's new items and removals.
    pub home: bool,
    /// The reader's new notifications.
    pub notifications: bool,
    /// Every new post (replies included, reposts not: the public timeline's rule) and
    /// every deletion.
    pub public: bool,
    /// New posts carrying any of these tags (lower-case, no `#`), and their deletions.
    pub tags: BTreeSet<String>,
}

impl Interest {
    /// The home timeline and the notifications: the `/v1` stream.
    pub fn home() -> Interest {
        Interest {
            home: true,
            notifications: true,
            ..Interest::default()
        }
    }
}

/// What a stream needs to route events to its user.
pub(super) struct Router {
    pub(super) user: String,
    pub(super) following: HashSet<String>,
    /// What the user's blocks and mutes hide (see [`Router::admit`]).
    pub(super) hidden: Hidden,
    /// The hub's relations epoch, and when, `hidden` was read.
    pub(super) hidden_epoch: u64,
    pub(super) hidden_at: Instant,
    /// The reposts this stream sent, for the seen-once rule.
    pub(super) seen: SeenOnce,
}

impl Router {
    /// Whether `message` may go to the user: an item or a listed post whose author is
    /// hidden from them does not (nor a repost of a hidden author's post), nor a
    /// notification whose actor's notifications are hidden. What is hidden is read again
    /// first when this process changed a block or mute since the last read (so from the
    /// change's 2xx on), when a timed mute in it expired by the server's clock, or when
    /// the last read is older than [`RELATIONS_RECHECK`] (changes made in other
    /// processes). Removals always pass: removing what a client does not hold is harmless.
    /// A repost that passes goes only when it is its original's first repost for the user
    /// (seen once: no older standing repost of it by the user or a followee, see
    /// `seen.rs`; the original itself winning was decided by [`Router::route`]).
    pub(super) async fn admit(&mut self, hub: &Hub, message: &StreamMessage) -> StoreResult<bool> {
        if !self.unhidden(hub, message).await? {
            return Ok(false);
        }
        let StreamMessage::Item { item, .. } = message else {
            return Ok(true);
        };
        let Some(original) = &item.repost_of else {
            return Ok(true);
        };
        let reader = Reader {
            user: &self.user,
            following: &self.following,
            hidden: &self.hidden,
        };
        self.seen
            .first(&hub.store, reader, item.id, &item.author, original.id)
            .await
    }

    /// Whether `message` passes what the user hides (see [`Router::admit`]).
    async fn unhidden(&mut self, hub: &Hub, message: &StreamMessage) -> StoreResult<bool> {
        // A repost is hidden with its original's author as with its reposter.
        let original = match message {
            StreamMessage::Item { item, .. } => item.repost_of.as_ref().map(|o| &o.author),
            _ => None,
        };
        let (other, notification) = match message {
            StreamMessage::Item { item, .. } | StreamMessage::Listed { item, .. } => {
                (&item.author, false)
            }
            StreamMessage::Notification { actor, .. } => (actor, true),
            _ => return Ok(true),
        };
        if *other == self.user && original.is_none_or(|o| *o == self.user) {
            return Ok(true);
        }
        let epoch = hub.relations_epoch.load(Ordering::SeqCst);
        let now = hub.now_ms();
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

    /// Every message `prepared` makes for this stream under `interest`, in order: at
    /// most a timeline message, a listings message and a notification. The following
    /// set follows the user's follows whatever the interest, so that a later interest
    /// in the home timeline finds it current.
    pub(super) fn route(&mut self, prepared: &Prepared, interest: &Interest) -> Vec<StreamMessage> {
        let timeline = self.timeline(prepared);
        let mut out: Vec<StreamMessage> = timeline.filter(|_| interest.home).into_iter().collect();
        out.extend(listing(prepared, interest));
        if interest.notifications {
            out.extend(self.notification(prepared));
        }
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
            // through): the original wins (see docs/timelines.md, "Reposts"). Whether
            // an older repost wins is [`Router::admit`]'s to decide, with a store read.
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
                if let Some(post) = event.field("post").and_then(|p| p.parse().ok()) {
                    self.seen.undone(post, repost);
                }
                mine(self, event.field("user")?).then(|| StreamMessage::Delete {
                    id,
                    posts: vec![repost],
                    author: None,
                })
            }
            EventType::PostDeleted => {
                let post = event.field("post")?.parse().ok()?;
                self.seen.deleted(post);
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

/// The listings message of `prepared` under `interest`: a new post (the public
/// listing's rule: every post, reposts are not posts) or a deleted one, naming the
/// listings it belongs to; none when it belongs to none the stream follows. A deletion
/// whose tags are unknown (its creation left the log) names every followed tag.
fn listing(prepared: &Prepared, interest: &Interest) -> Option<StreamMessage> {
    if !interest.public && interest.tags.is_empty() {
        return None;
    }
    let listings = || {
        let tags = match &prepared.tags {
            Some(tags) => tags
                .iter()
                .filter(|t| interest.tags.contains(*t))
                .cloned()
                .collect(),
            None => interest.tags.iter().cloned().collect(),
        };
        let listings = Listings {
            public: interest.public,
            tags,
        };
        (listings.public || !listings.tags.is_empty()).then_some(listings)
    };
    let event = &prepared.event;
    match event.kind {
        EventType::PostCreated => Some(StreamMessage::Listed {
            id: event.id,
            item: prepared.item.clone()?,
            listings: listings()?,
        }),
        EventType::PostDeleted => Some(StreamMessage::Unlisted {
            id: event.id,
            post: event.field("post")?.parse().ok()?,
            listings: listings()?,
        }),
        _ => None,
    }
}
