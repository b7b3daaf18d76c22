//! Mastodon's streaming API over a WebSocket: subscriptions by `stream` (and `tag`),
//! `{"type":"subscribe"|"unsubscribe",...}` from the client, and
//! `{"stream":[...],"event":...,"payload":"<JSON as a string>"}` from the server.

use axum::extract::State;
use axum::extract::ws::rejection::WebSocketUpgradeRejection;
use axum::extract::ws::{Message, WebSocket, WebSocketUpgrade};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use serde::Deserialize;
use tokio::sync::watch;
use utoipa::IntoParams;

use super::{
    Channel, HEARTBEAT, Live, MAX_SUBSCRIPTIONS, Outgoing, allowed, interest, open, signed_in,
    token,
};
use crate::events::{Interest, TimelineStream};
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
/// `delete`, `notification`), `user:notification` (`notification`), `public` and
/// `public:local` (`update`, `delete`: every post) and `hashtag` and `hashtag:local`
/// with `tag` (`update`, `delete`: the posts carrying it); blocks and mutes hold on
/// every one. `public:remote` and the `:media` streams are accepted and stay quiet.
/// At most 32 subscriptions per connection. Errors after the upgrade come as
/// `{"error": ..., "status": ...}` messages.
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
    let live = Live {
        origin: Origin::of(&state.mastodon, &headers),
        state,
        user: grant.user.clone().unwrap_or_default(),
    };
    let mut connection = Connection {
        live,
        grant,
        channels: first.into_iter().collect(),
        engine: None,
    };
    // A first subscription's stream opens before the upgrade, so that a refusal is a
    // status (503).
    connection.follow().await?;
    let upgrade = match protocol {
        Some(protocol) => upgrade.protocols([protocol.to_owned()]),
        None => upgrade,
    };
    Ok(upgrade.on_upgrade(move |socket| connection.run(socket)))
}

struct Connection {
    live: Live,
    grant: Grant,
    channels: Vec<Channel>,
    /// The engine's stream, and the sender of its interest, while a channel needs it.
    engine: Option<(TimelineStream, watch::Sender<Interest>)>,
}

/// The next message of the engine's stream; never, without one.
async fn next(
    engine: &mut Option<(TimelineStream, watch::Sender<Interest>)>,
) -> Option<crate::events::StreamMessage> {
    match engine {
        Some((receiver, _)) => receiver.recv().await,
        None => std::future::pending().await,
    }
}

fn error_message(error: &MastoError, why: &str) -> Message {
    let body = serde_json::json!({"error": why, "status": error.status().as_u16()});
    Message::Text(body.to_string().into())
}

impl Connection {
    /// Brings the engine's stream in line with the channels: its interest changed,
    /// opened when a channel first needs it, closed when none does any more.
    async fn follow(&mut self) -> Result<(), MastoError> {
        match (interest(&self.channels), &self.engine) {
            (None, _) => self.engine = None,
            (Some(wanted), Some((_, sender))) => {
                sender.send_replace(wanted);
            }
            (Some(wanted), None) => {
                let (sender, receiver) = watch::channel(wanted);
                let stream = open(&self.live.state, &self.live.user, receiver).await?;
                self.engine = Some((stream, sender));
            }
        }
        Ok(())
    }

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
        let channel = match Channel::refusal(&command.stream, command.tag.as_deref()) {
            Ok(channel) => channel,
            Err(why) => {
                let error = MastoError::new(StatusCode::BAD_REQUEST, why);
                return Some(error_message(&error, why));
            }
        };
        match command.kind.as_str() {
            "subscribe" => {
                if let Err(error) = allowed(&self.grant, &channel) {
                    return Some(error_message(
                        &error,
                        "Access token does not have the required scopes",
                    ));
                }
                if self.channels.contains(&channel) {
                    return None;
                }
                if self.channels.len() >= MAX_SUBSCRIPTIONS {
                    let error = MastoError::new(StatusCode::BAD_REQUEST, "");
                    let why = format!(
                        "Too many subscriptions: a connection holds at most {MAX_SUBSCRIPTIONS}"
                    );
                    return Some(error_message(&error, &why));
                }
                self.channels.push(channel);
                if let Err(error) = self.follow().await {
                    self.channels.pop();
                    return Some(error_message(&error, "The stream could not be opened"));
                }
                None
            }
            "unsubscribe" => {
                self.channels.retain(|c| *c != channel);
                // Closing the engine's stream when no channel needs it frees its slot of
                // `events.max_streams`; it does not fail.
                let _ = self.follow().await;
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
