//! Mastodon's streaming API as a view over the engine's live timeline streams
//! (`events::stream`, one shared tail fanned out per process): SSE under
//! `/api/v1/streaming/*` (`sse.rs`) and the WebSocket `/api/v1/streaming` (`ws.rs`).
//! A connection opens at most one engine stream for its user, whatever it subscribes
//! to: its subscriptions become the stream's `Interest` (home timeline, notifications,
//! the public listing, tags), which the engine routes by and filters with the reader's
//! blocks and mutes; each message is rendered here with the service's batched status
//! and notification reads. A WebSocket holds at most [`MAX_SUBSCRIPTIONS`]; a client
//! that lets the engine stream's buffer (`events.stream_buffer`) fill is disconnected.

pub mod sse;
pub mod ws;

use axum::http::HeaderMap;
use tokio::sync::watch;

use super::Origin;
use super::auth::{Grant, bearer_value};
use super::entities::Status;
use super::entities::notification::Notification;
use super::error::MastoError;
use super::ids;
use crate::domain::is_tag;
use crate::events::stream::OpenError;
use crate::events::{Interest, Listings, StreamMessage, TimelineStream};
use crate::feed::TimelineItem;
use crate::http::AppState;
use crate::service::AuthError;

/// Subscriptions one WebSocket may hold at once; one more is refused with an error
/// message.
pub const MAX_SUBSCRIPTIONS: usize = 32;

/// The comment sent on an idle SSE stream, and how often a WebSocket is pinged.
pub const HEARTBEAT: std::time::Duration = std::time::Duration::from_secs(15);

/// A stream a client can subscribe to.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Channel {
    /// Home timeline updates and deletions, and notifications.
    User,
    /// Notifications only.
    UserNotification,
    /// Every new post and deletion: `public`, or `public:local` (`local`; the same
    /// posts, as every account is local).
    Public { local: bool },
    /// New posts carrying the tag, and their deletions: `hashtag`, or `hashtag:local`.
    Hashtag { tag: String, local: bool },
    /// A stream of what this server never has (remote posts, media attachments),
    /// named as subscribed: accepted, never an event.
    Empty(&'static str),
}

impl Channel {
    /// `stream` (and `tag` for the hashtag streams), as Mastodon names them; 400 with
    /// [`Channel::refusal`]'s reason otherwise.
    pub fn parse(stream: &str, tag: Option<&str>) -> Result<Channel, MastoError> {
        Channel::refusal(stream, tag)
            .map_err(|why| MastoError::new(axum::http::StatusCode::BAD_REQUEST, why))
    }

    /// As [`Channel::parse`], refusing with the reason alone.
    pub fn refusal(stream: &str, tag: Option<&str>) -> Result<Channel, &'static str> {
        match stream {
            "user" => Ok(Channel::User),
            "user:notification" => Ok(Channel::UserNotification),
            "public" => Ok(Channel::Public { local: false }),
            "public:local" => Ok(Channel::Public { local: true }),
            "public:remote" => Ok(Channel::Empty("public:remote")),
            "public:media" => Ok(Channel::Empty("public:media")),
            "public:local:media" => Ok(Channel::Empty("public:local:media")),
            "public:remote:media" => Ok(Channel::Empty("public:remote:media")),
            "hashtag" | "hashtag:local" => match tag.map(|t| t.trim().trim_start_matches('#')) {
                Some(tag) if !tag.is_empty() => {
                    let tag = tag.to_lowercase();
                    if !is_tag(&tag) {
                        return Err("Invalid tag name: letters, digits or _, at most 64");
                    }
                    let local = stream == "hashtag:local";
                    Ok(Channel::Hashtag { tag, local })
                }
                _ => Err("Missing tag name parameter"),
            },
            "" => Err("Missing stream name"),
            _ => Err("Unknown stream type"),
        }
    }

    /// The scopes that let a client read this stream: any one of them.
    pub fn scopes(&self) -> &'static [&'static str] {
        match self {
            Channel::UserNotification => &["read:notifications"],
            _ => &["read:statuses"],
        }
    }

    /// The `stream` array of a WebSocket message.
    pub fn names(&self) -> Vec<String> {
        match self {
            Channel::User => vec!["user".to_owned()],
            Channel::UserNotification => vec!["user:notification".to_owned()],
            Channel::Public { local: false } => vec!["public".to_owned()],
            Channel::Public { local: true } => vec!["public:local".to_owned()],
            Channel::Hashtag { tag, local } => {
                let name = if *local { "hashtag:local" } else { "hashtag" };
                vec![name.to_owned(), tag.clone()]
            }
            Channel::Empty(name) => vec![(*name).to_owned()],
        }
    }
}

/// What the engine's stream must carry for `channels`; `None` when none needs it.
pub fn interest(channels: &[Channel]) -> Option<Interest> {
    let mut interest = Interest::default();
    for channel in channels {
        match channel {
            Channel::User => {
                interest.home = true;
                interest.notifications = true;
            }
            Channel::UserNotification => interest.notifications = true,
            Channel::Public { .. } => interest.public = true,
            Channel::Hashtag { tag, .. } => {
                interest.tags.insert(tag.clone());
            }
            Channel::Empty(_) => {}
        }
    }
    (interest != Interest::default()).then_some(interest)
}

/// The credential of a streaming request: `Authorization: Bearer`, else the
/// `access_token` query parameter, else (WebSocket) `Sec-WebSocket-Protocol`.
pub fn token<'a>(
    headers: &'a HeaderMap,
    access_token: Option<&'a str>,
    protocol: Option<&'a str>,
) -> Option<&'a str> {
    bearer_value(headers)
        .or(access_token.filter(|t| !t.is_empty()))
        .or(protocol.filter(|t| !t.is_empty()))
}

/// The user a token acts for: 401 for a missing or unknown token or an app's own
/// (a stream is a user's).
pub async fn signed_in(state: &AppState, token: Option<&str>) -> Result<Grant, MastoError> {
    match state.social.grant(token).await {
        Ok(grant) if grant.user.is_some() => Ok(grant),
        Ok(_) | Err(AuthError::Missing | AuthError::Invalid) => Err(MastoError::unauthorized()),
        Err(AuthError::Store(error)) => Err(error.into()),
    }
}

/// 403 unless `grant` may read `channel`.
pub fn allowed(grant: &Grant, channel: &Channel) -> Result<(), MastoError> {
    if grant.scopes.satisfies_any(channel.scopes()) {
        Ok(())
    } else {
        Err(MastoError::outside_scopes())
    }
}

/// Opens the engine's live stream of `user`, carrying what `interest` asks for at each
/// event (503 past `events.max_streams`).
pub async fn open(
    state: &AppState,
    user: &str,
    interest: watch::Receiver<Interest>,
) -> Result<TimelineStream, MastoError> {
    match state.events.open_stream_for(user, interest).await {
        Ok(stream) => Ok(stream),
        Err(OpenError::TooMany) => Err(MastoError::new(
            axum::http::StatusCode::SERVICE_UNAVAILABLE,
            "This server has as many open streams as it allows; try again later",
        )),
        Err(OpenError::Store(error)) => Err(error.into()),
    }
}

/// One event to send: the channel it belongs to, its name and its payload (JSON, or
/// the bare id for `delete`).
#[derive(Debug, Clone)]
pub struct Outgoing {
    pub channel: Channel,
    pub event: &'static str,
    pub payload: String,
}

impl Outgoing {
    fn new(channel: Channel, event: &'static str, payload: String) -> Outgoing {
        Outgoing {
            channel,
            event,
            payload,
        }
    }
}

/// What renders the engine's messages for one connection.
pub struct Live {
    pub state: AppState,
    pub origin: Origin,
    pub user: String,
}

impl Live {
    /// The events `message` makes for the subscribed `channels`: `update` and `delete`
    /// (a deleted post; the engine's removals on unfollow are not deletions) on `user`,
    /// on the public channels and on the hashtag channels of the post's tags;
    /// `notification` on `user` and `user:notification`. A post or actor gone before
    /// the render makes nothing; a storage fault is logged and makes nothing.
    pub async fn render(&self, message: StreamMessage, channels: &[Channel]) -> Vec<Outgoing> {
        let user_on = channels.contains(&Channel::User);
        let notifications_on = user_on || channels.contains(&Channel::UserNotification);
        let social = &self.state.social;
        let mut out = Vec::new();
        match message {
            StreamMessage::Item { item, .. } if user_on => {
                if let Some(payload) = self.status(item).await {
                    out.push(Outgoing::new(Channel::User, "update", payload));
                }
            }
            StreamMessage::Delete {
                posts,
                author: None,
                ..
            } if user_on => out.extend(
                posts
                    .iter()
                    .map(|post| Outgoing::new(Channel::User, "delete", ids::render(*post))),
            ),
            StreamMessage::Listed { item, listings, .. } => {
                let listed = listed(channels, &listings);
                if !listed.is_empty()
                    && let Some(payload) = self.status(item).await
                {
                    out.extend(
                        listed
                            .into_iter()
                            .map(|c| Outgoing::new(c, "update", payload.clone())),
                    );
                }
            }
            StreamMessage::Unlisted { post, listings, .. } => out.extend(
                listed(channels, &listings)
                    .into_iter()
                    .map(|c| Outgoing::new(c, "delete", ids::render(post))),
            ),
            StreamMessage::Notification {
                notification,
                kind,
                actor,
                post,
                at_ms,
                ..
            } if notifications_on => {
                let rendered = social
                    .live_notification(&self.user, notification, kind, &actor, post, at_ms)
                    .await;
                match rendered {
                    Ok(Some(item)) => {
                        let payload = json(&Notification::new(&self.origin, &item));
                        for channel in [Channel::User, Channel::UserNotification] {
                            if channels.contains(&channel) {
                                out.push(Outgoing::new(channel, "notification", payload.clone()));
                            }
                        }
                    }
                    Ok(None) => {}
                    Err(error) => {
                        tracing::warn!(%error, "streaming: a notification was not rendered");
                    }
                }
            }
            _ => {}
        }
        out
    }

    /// `item` as a Status's JSON, as the reader sees it.
    async fn status(&self, item: TimelineItem) -> Option<String> {
        match self.state.social.live_status(&self.user, item).await {
            Ok(view) => view.map(|view| json(&Status::new(&self.origin, &view))),
            Err(error) => {
                tracing::warn!(%error, "streaming: a status was not rendered");
                None
            }
        }
    }
}

/// The subscribed public and hashtag channels that `listings` names.
fn listed(channels: &[Channel], listings: &Listings) -> Vec<Channel> {
    channels
        .iter()
        .filter(|channel| match channel {
            Channel::Public { .. } => listings.public,
            Channel::Hashtag { tag, .. } => listings.tags.contains(tag),
            _ => false,
        })
        .cloned()
        .collect()
}

fn json<T: serde::Serialize>(value: &T) -> String {
    serde_json::to_string(value).unwrap_or_else(|_| "{}".to_owned())
}
