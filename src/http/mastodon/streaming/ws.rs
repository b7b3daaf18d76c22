//! Mastodon's streaming API over a WebSocket: subscriptions by `stream` (and `tag`),
//! `{"type":"subscribe"|"unsubscribe",...}` from the client, and
//! `{"stream":[...],"event":...,"payload":"<JSON as a string>"}` from the server.

use axum::extract::State;
use axum::extract::ws::rejection::WebSocketUpgradeRejection;
use axum::extract::ws::{Message, WebSocket, WebSocketUpgrade};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use serde::Deserialize;
use utoipa::IntoParams;

use super::{Channel, HEARTBEAT, Live, Outgoing, allowed, open, signed_in, token};
use crate::events::TimelineStream;
use crate::http::AppState;
use crate::http::error::Query;
use crate::http::mastodon::Origin;
use crate::http::mastodon::auth::Grant;
use crate::http::mastodon::error::{MastoError, MastoErrorBody};

#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct SocketParams {
    /// The token, when not sent as `Sec-WebSocket-Protocol` or `Authorization`.
    pub access_token: Option<String>,
    /// A first subscription: `user`, `user:notification`, `public`, `hashtag`.
    pub stream: Option<String>,
    /// The tag of a first `hashtag` subscription.
    pub tag: Option<String>,
}

/// A client's message.
#[derive(Debug, Deserialize)]
struct Command {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    stream: String,
    tag: Option<String>,
}

/// Upgrades to a WebSocket carrying Mastodon's streaming messages. The token comes
/// from `Sec-WebSocket-Protocol` (echoed back as the protocol), `access_token` or
/// `Authorization`; a bad one is refused before the upgrade. Streams: `user` (`update`,
/// `delete`, `notification`), `user:notification`, and `public` and `hashtag`, which
/// are accepted but carry no events (the engine's streams route by reader only).
/// Errors after the upgrade come as `{"error": ..., "status": ...}` messages.
#[utoipa::path(get, path = "/api/v1/streaming", tag = "mastodon",
    params(
        SocketParams,
        ("Sec-WebSocket-Protocol" = Option<String>, Header, description = "The access token; echoed back"),
    ),
    security(("bearer" = [])),
    responses(
        (status = 101, description = "Switched to a WebSocket: text messages `{\"stream\":[\"user\"],\"event\":\"update\",\"payload\":\"<Status JSON as a string>\"}`; `delete`'s payload is the bare id"),
        (status = 400, description = "Not a WebSocket upgrade, or an unknown first `stream`", body = MastoErrorBody),
        (status = 401, description = "No valid user token", body = MastoErrorBody),
        (status = 403, description = "The token may not read the first `stream`", body = MastoErrorBody),
        (status = 503, description = "Too many open streams, or the event log is off", body = MastoErrorBody),
    ))]
pub async fn socket(
    State(state): State<AppState>,
    headers: HeaderMap,
    Query(params): Query<SocketParams>,
    upgrade: Result<WebSocketUpgrade, WebSocketUpgradeRejection>,
) -> Result<Response, MastoError> {
    let protocol = headers
        .get("sec-websocket-protocol")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(',').next())
        .map(str::trim);
    let grant = signed_in(
        &state,
        token(&headers, params.access_token.as_deref(), protocol),
    )
    .await?;
    let first = match params.stream.as_deref() {
        Some(stream) => {
            let channel = Channel::parse(stream, params.tag.as_deref())?;
            allowed(&grant, &channel)?;
            Some(channel)
        }
        None => None,
    };
    let upgrade = upgrade.map_err(|e| MastoError::new(StatusCode::BAD_REQUEST, e.body_text()))?;
    let user = grant.user.clone().unwrap_or_default();
    let engine = match first.as_ref().is_some_and(Channel::needs_engine) {
        true => Some(open(&state, &user).await?),
        false => None,
    };
    let live = Live {
        origin: Origin::of(&state.mastodon, &headers),
        state,
        user,
    };
    let upgrade = match protocol {
        Some(protocol) => upgrade.protocols([protocol.to_owned()]),
        None => upgrade,
    };
    let connection = Connection {
        live,
        grant,
        channels: first.into_iter().collect(),
        engine,
    };
    Ok(upgrade.on_upgrade(move |socket| connection.run(socket)))
}

struct Connection {
    live: Live,
    grant: Grant,
    channels: Vec<Channel>,
    engine: Option<TimelineStream>,
}

/// The next message of the engine's stream; never, without one.
async fn next(engine: &mut Option<TimelineStream>) -> Option<crate::events::StreamMessage> {
    match engine {
        Some(receiver) => receiver.recv().await,
        None => std::future::pending().await,
    }
}

fn error_message(error: &MastoError, why: &str) -> Message {
    let body = serde_json::json!({"error": why, "status": error.status().as_u16()});
    Message::Text(body.to_string().into())
}

impl Connection {
    async fn run(mut self, mut socket: WebSocket) {
        let mut heartbeat = tokio::time::interval(HEARTBEAT);
        heartbeat.tick().await;
        loop {
            let sent = tokio::select! {
                incoming = socket.recv() => match incoming {
                    Some(Ok(Message::Text(text))) => match self.command(text.as_str()).await {
                        Some(reply) => socket.send(reply).await,
                        None => Ok(()),
                    },
                    Some(Ok(Message::Close(_))) | Some(Err(_)) | None => break,
                    Some(Ok(_)) => Ok(()),
                },
                message = next(&mut self.engine) => {
                    // The engine ended the stream (shutdown, or a client too slow).
                    let Some(message) = message else { break };
                    let mut sent = Ok(());
                    for outgoing in self.live.render(message, &self.channels).await {
                        sent = socket.send(frame(outgoing)).await;
                        if sent.is_err() {
                            break;
                        }
                    }
                    sent
                }
                _ = heartbeat.tick() => socket.send(Message::Ping(Default::default())).await,
            };
            if sent.is_err() {
                break;
            }
        }
        let _ = socket.send(Message::Close(None)).await;
    }

    /// Applies a client's message; answers an error message when it is refused.
    async fn command(&mut self, text: &str) -> Option<Message> {
        let command: Command = match serde_json::from_str(text) {
            Ok(command) => command,
            Err(_) => {
                let error = MastoError::new(StatusCode::BAD_REQUEST, "");
                return Some(error_message(&error, "Malformed message"));
            }
        };
        let channel = match Channel::parse(&command.stream, command.tag.as_deref()) {
            Ok(channel) => channel,
            Err(error) => return Some(error_message(&error, "Unknown stream type")),
        };
        match command.kind.as_str() {
            "subscribe" => {
                if let Err(error) = allowed(&self.grant, &channel) {
                    return Some(error_message(
                        &error,
                        "Access token does not have the required scopes",
                    ));
                }
                if channel.needs_engine() && self.engine.is_none() {
                    match open(&self.live.state, &self.live.user).await {
                        Ok(engine) => self.engine = Some(engine),
                        Err(error) => {
                            return Some(error_message(&error, "The stream could not be opened"));
                        }
                    }
                }
                if !self.channels.contains(&channel) {
                    self.channels.push(channel);
                }
                None
            }
            "unsubscribe" => {
                self.channels.retain(|c| *c != channel);
                if !self.channels.iter().any(Channel::needs_engine) {
                    // Frees its slot of `events.max_streams`.
                    self.engine = None;
                }
                None
            }
            _ => {
                let error = MastoError::new(StatusCode::BAD_REQUEST, "");
                Some(error_message(&error, "Unknown message type"))
            }
        }
    }
}

fn frame(outgoing: Outgoing) -> Message {
    let body = serde_json::json!({
        "stream": outgoing.channel.names(),
        "event": outgoing.event,
        "payload": outgoing.payload,
    });
    Message::Text(body.to_string().into())
}
