//! The events worker: turns every change into its domain event and appends it to the
//! event log, in feed order. An event's id is its change's `seq`, so a replayed change
//! maps to the same id and its append is a no-op: exactly one event per change.
//!
//! Changes with no domain meaning (a user created, a like undone) make no event.
//! A deletion carries the deleted post's author and tags, taken from the post's
//! `post.created` event (in the same batch, or in the log); when the log no longer holds
//! it they are `null`, and the aggregates count that deletion as unknown (a rebuild
//! makes the counts exact again).

use std::collections::HashMap;
use std::sync::Arc;

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::json;

use super::pool::Wakers;
use super::runtime::Worker;
use crate::domain::{
    Change, ChangeOp, Event, EventId, EventType, Fence, Post, PostId, REPOSTS, Repost, User,
    hashtags,
};
use crate::store::{EventStore, LogBounds, StoreError, StoreResult};

pub const NAME: &str = "events";

pub struct EventsWorker {
    events: Arc<dyn EventStore>,
    bounds: LogBounds,
    /// Woken after an append, so the aggregates worker reads it at once.
    wakers: Option<Arc<Wakers>>,
}

impl EventsWorker {
    pub fn new(
        events: Arc<dyn EventStore>,
        bounds: LogBounds,
        wakers: Option<Arc<Wakers>>,
    ) -> Self {
        EventsWorker {
            events,
            bounds,
            wakers,
        }
    }
}

#[derive(Deserialize)]
struct Edge {
    follower: String,
    followee: String,
}

#[derive(Deserialize)]
struct Like {
    user: String,
    post: String,
}

/// A change that can never apply: quarantined by the runner (`StoreError::Poison`).
pub(super) fn poison(change: &Change, why: impl std::fmt::Display) -> StoreError {
    StoreError::Poison(format!(
        "change {} on {}: {why}",
        change.position.0, change.collection
    ))
}

/// The change's document as `T`, or poison.
pub(super) fn document<T: serde::de::DeserializeOwned>(change: &Change) -> StoreResult<T> {
    let doc = change
        .document
        .clone()
        .ok_or_else(|| poison(change, "no document"))?;
    serde_json::from_value(doc).map_err(|e| poison(change, e))
}

/// The event a change stands for, `None` for changes that make none; also what the audit
/// expects of the log. Deletions get their author and tags filled in afterwards.
pub fn event_of(change: &Change) -> StoreResult<Option<Event>> {
    let (kind, payload) = match (change.collection.as_str(), change.op) {
        ("posts", ChangeOp::Insert) => {
            let post: Post = document(change)?;
            let mut payload = json!({
                "post": post.id.to_string(),
                "author": post.author,
                "text": post.text,
                "tags": hashtags(&post.text),
            });
            // A reply's event names what it answers, as the post document does.
            if let Some(parent) = &post.reply_to {
                payload["in_reply_to"] = json!({
                    "post": parent.post.to_string(),
                    "author": parent.author,
                });
            }
            (EventType::PostCreated, payload)
        }
        ("posts", ChangeOp::Delete) => {
            let post: PostId = change
                .key
                .parse()
                .map_err(|_| poison(change, "bad post id"))?;
            let payload = json!({ "post": post.to_string(), "author": null, "tags": null });
            (EventType::PostDeleted, payload)
        }
        ("follows", ChangeOp::Insert) => {
            let edge: Edge = document(change)?;
            let payload = json!({ "follower": edge.follower, "followee": edge.followee });
            (EventType::UserFollowed, payload)
        }
        ("follows", ChangeOp::Delete) => {
            let (follower, followee) = change
                .key
                .split_once('/')
                .ok_or_else(|| poison(change, "bad follow key"))?;
            let payload = json!({ "follower": follower, "followee": followee });
            (EventType::UserUnfollowed, payload)
        }
        ("likes", ChangeOp::Insert) => {
            let like: Like = document(change)?;
            (
                EventType::PostLiked,
                json!({ "user": like.user, "post": like.post }),
            )
        }
        (REPOSTS, op @ (ChangeOp::Insert | ChangeOp::Delete)) => {
            // The delete carries the repost too (embedded: in its entry; MongoDB: from
            // its tombstone), so both events name everything.
            let repost: Repost = document(change)?;
            let kind = match op {
                ChangeOp::Insert => EventType::PostReposted,
                _ => EventType::PostUnreposted,
            };
            let payload = json!({
                "repost": repost.id.to_string(),
                "user": repost.user,
                "post": repost.post.post.to_string(),
                "author": repost.post.author,
            });
            (kind, payload)
        }
        ("users", ChangeOp::Update) => {
            let user: User = document(change)?;
            let payload = json!({ "user": user.id, "display_name": user.display_name });
            (EventType::UserRenamed, payload)
        }
        _ => return Ok(None),
    };
    Ok(Some(Event {
        id: EventId(change.seq),
        kind,
        at_ms: change.at_ms,
        payload,
    }))
}

#[async_trait]
impl Worker for EventsWorker {
    fn name(&self) -> &'static str {
        NAME
    }

    async fn apply(&self, changes: &[Change], fence: &Fence) -> StoreResult<()> {
        let mut events = Vec::with_capacity(changes.len());
        // Creations in this batch, for deletions in the same batch.
        let mut created: HashMap<String, serde_json::Value> = HashMap::new();
        for change in changes {
            let Some(mut event) = event_of(change)? else {
                continue;
            };
            match event.kind {
                EventType::PostCreated => {
                    let post = event.field("post").unwrap_or_default().to_owned();
                    created.insert(post, event.payload.clone());
                }
                EventType::PostDeleted => {
                    let post = event.field("post").unwrap_or_default().to_owned();
                    let source = match created.get(&post) {
                        Some(payload) => Some(payload.clone()),
                        None => {
                            let id: PostId = post.parse().map_err(|_| poison(change, "bad id"))?;
                            self.events.post_created_event(id).await?.map(|e| e.payload)
                        }
                    };
                    if let Some(source) = source {
                        event.payload["author"] = source["author"].clone();
                        event.payload["tags"] = source["tags"].clone();
                    }
                }
                _ => {}
            }
            events.push(event);
        }
        if events.is_empty() {
            return Ok(());
        }
        let added = self.events.append(fence, &events, self.bounds).await?;
        if added > 0
            && let Some(wakers) = &self.wakers
        {
            wakers.wake_all();
        }
        Ok(())
    }

    /// Events are history: they cannot be recomputed from the sources. Continuing from
    /// the head leaves a gap, which readers must not cross silently: the log is marked
    /// lost up to the head, so a reader below it gets `PositionLost`.
    async fn rebuild(&self, fence: &Fence) -> StoreResult<()> {
        tracing::error!(
            "the change feed lost history the event log had not read; readers before the gap will be reset"
        );
        self.events.mark_lost(fence).await
    }
}
