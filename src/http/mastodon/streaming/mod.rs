//! Mastodon's streaming API as a view over the engine's live timeline streams
//! (`events::stream`, one shared tail fanned out per process): SSE under
//! `/api/v1/streaming/*` (`sse.rs`) and the WebSocket `/api/v1/streaming` (`ws.rs`).
//! A connection opens at most one engine stream for its user; the engine has already
//! applied the home timeline's rules, blocks and mutes to what it sends, and each
//! message is rendered here with the service's batched status and notification reads.
//!
//! `public` and `hashtag` are accepted, but the engine's streams route by reader only
//! (home timeline and notifications), so they carry heartbeats and no events.

pub mod sse;
pub mod ws;

use axum::http::HeaderMap;

use super::Origin;
use super::auth::{Grant, bearer_value};
use super::entities::Status;
use super::entities::notification::Notification;
use super::error::MastoError;
use crate::events::stream::OpenError;
use crate::events::{StreamMessage, TimelineStream};
use crate::http::AppState;
use crate::service::AuthError;

/// The comment sent on an idle SSE stream, and how often a WebSocket is pinged.
pub const HEARTBEAT: std::time::Duration = std::time::Duration::from_secs(15);

/// A stream a client can subscribe to.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Channel {
    /// Home timeline updates and deletions, and notifications.
    User,
    /// Notifications only.
    UserNotification,
    /// Accepted; carries no events (see the module's documentation).
    Public,
    /// Accepted; carries no events (see the module's documentation).
    Hashtag(String),
}

impl Channel {
    /// `stream` (and `tag` for the hashtag streams), as Mastodon names them; the
    /// `:local` and `:media` variants are the same streams here (every account is local).
    pub fn parse(stream: &str, tag: Option<&str>) -> Result<Channel, MastoError> {
        let bad = |why: &str| MastoError::new(axum::http::StatusCode::BAD_REQUEST, why);
        match stream {
            "user" => Ok(Channel::User),
            "user:notification" => Ok(Channel::UserNotification),
            "public"
            | "public:local"
            | "public:remote"
            | "public:media"
            | "public:local:media"
            | "public:remote:media" => Ok(Channel::Public),
            "hashtag" | "hashtag:local" => match tag.map(|t| t.trim().trim_start_matches('#')) {
                Some(tag) if !tag.is_empty() => Ok(Channel::Hashtag(tag.to_lowercase())),
                _ => Err(bad("Missing tag name parameter")),
            },
            "" => Err(bad("Missing stream name")),
            _ => Err(bad("Unknown stream type")),
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
            Channel::Public => vec!["public".to_owned()],
            Channel::Hashtag(tag) => vec!["hashtag".to_owned(), tag.clone()],
        }
    }

    /// Whether the engine's stream of the reader feeds this channel.
    pub fn needs_engine(&self) -> bool {
        matches!(self, Channel::User | Channel::UserNotification)
    }
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

/// Opens the engine's live stream of `user` (503 past `events.max_streams`).
pub async fn open(state: &AppState, user: &str) -> Result<TimelineStream, MastoError> {
    match state.events.open_stream(user, None).await {
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

/// What renders the engine's messages for one connection.
pub struct Live {
    pub state: AppState,
    pub origin: Origin,
    pub user: String,
}

impl Live {
    /// The events `message` makes for the subscribed `channels`: `update` and `delete`
    /// (a deleted post; the engine's removals on unfollow are not deletions) on
    /// `user`, `notification` on `user` and `user:notification`. A post or actor gone
    /// before the render makes nothing; a storage fault is logged and makes nothing.
    pub async fn render(&self, message: StreamMessage, channels: &[Channel]) -> Vec<Outgoing> {
        let user_on = channels.contains(&Channel::User);
        let notifications_on = user_on || channels.contains(&Channel::UserNotification);
        let social = &self.state.social;
        let mut out = Vec::new();
        match message {
            StreamMessage::Item { item, .. } if user_on => {
                match social.live_status(&self.user, item).await {
                    Ok(Some(view)) => out.push(Outgoing {
                        channel: Channel::User,
                        event: "update",
                        payload: json(&Status::new(&self.origin, &view)),
                    }),
                    Ok(None) => {}
                    Err(error) => tracing::warn!(%error, "streaming: a status was not rendered"),
                }
            }
            StreamMessage::Delete {
                posts,
                author: None,
                ..
            } if user_on => out.extend(posts.iter().map(|post| Outgoing {
                channel: Channel::User,
                event: "delete",
                payload: post.to_string(),
            })),
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
                                out.push(Outgoing {
                                    channel,
                                    event: "notification",
                                    payload: payload.clone(),
                                });
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
}

fn json<T: serde::Serialize>(value: &T) -> String {
    serde_json::to_string(value).unwrap_or_else(|_| "{}".to_owned())
}
