//! Mastodon's streaming API over Server-Sent Events: `event: update`, `delete` and
//! `notification` with Mastodon's payloads, and a `:thump` comment when idle.

use std::convert::Infallible;

use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures::stream::{self, Stream};
use serde::Deserialize;
use tokio::sync::watch;
use utoipa::IntoParams;

use super::{Channel, HEARTBEAT, Live, allowed, interest, open, signed_in, token};
use crate::events::TimelineStream;
use crate::http::AppState;
use crate::http::error::Query;
use crate::http::mastodon::Origin;
use crate::http::mastodon::error::{MastoError, MastoErrorBody};

#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct StreamParams {
    /// The token, for clients that cannot send `Authorization` (EventSource).
    pub access_token: Option<String>,
    /// The hashtag streams' tag, without `#`.
    pub tag: Option<String>,
}

/// Always `OK`: the streaming API is served by this process.
#[utoipa::path(get, path = "/api/v1/streaming/health", tag = "mastodon",
    responses((status = 200, description = "`OK`", body = String, content_type = "text/plain")))]
pub async fn health() -> &'static str {
    "OK"
}

/// The events of one SSE stream, and the engine's stream that feeds it (when it needs one).
fn events(
    live: Live,
    engine: Option<TimelineStream>,
    channel: Channel,
) -> impl Stream<Item = Result<SseEvent, Infallible>> {
    stream::unfold(
        (live, engine, channel, Vec::<SseEvent>::new()),
        |(live, mut engine, channel, mut queued)| async move {
            loop {
                if !queued.is_empty() {
                    let event = queued.remove(0);
                    return Some((Ok(event), (live, engine, channel, queued)));
                }
                let Some(receiver) = engine.as_mut() else {
                    // No events on this channel: heartbeats until the client leaves.
                    std::future::pending::<()>().await;
                    return None;
                };
                let message = receiver.recv().await?;
                let channels = std::slice::from_ref(&channel);
                queued = live
                    .render(message, channels)
                    .await
                    .into_iter()
                    .map(|o| SseEvent::default().event(o.event).data(sse_data(o)))
                    .collect();
            }
        },
    )
}

async fn serve(
    state: AppState,
    headers: HeaderMap,
    params: StreamParams,
    channel: Result<Channel, MastoError>,
) -> Result<Response, MastoError> {
    let grant = signed_in(
        &state,
        token(&headers, params.access_token.as_deref(), None),
    )
    .await?;
    let channel = channel?;
    allowed(&grant, &channel)?;
    let user = grant.user.unwrap_or_default();
    let engine = match interest(std::slice::from_ref(&channel)) {
        // The stream's interest never changes: the sender can go.
        Some(wanted) => Some(open(&state, &user, watch::channel(wanted).1).await?),
        None => None,
    };
    let live = Live {
        origin: Origin::of(&state.mastodon, &headers),
        state,
        user,
    };
    Ok(Sse::new(events(live, engine, channel))
        .keep_alive(KeepAlive::new().interval(HEARTBEAT).text("thump"))
        .into_response())
}

/// The caller's home timeline, live: `update` (a Status) for each new item, `delete`
/// (the bare id) for each deleted post, and `notification` (a Notification) for each
/// new notification, with blocks and mutes applied as on the home timeline.
#[utoipa::path(get, path = "/api/v1/streaming/user", tag = "mastodon",
    params(StreamParams),
    security(("bearer" = [])),
    responses(
        (status = 200, description = "`event: update|delete|notification` and `data:` lines; `:thump` when idle", body = String, content_type = "text/event-stream"),
        (status = 401, description = "No valid user token", body = MastoErrorBody),
        (status = 403, description = "The token lacks read:statuses", body = MastoErrorBody),
        (status = 503, description = "Too many open streams, or the event log is off", body = MastoErrorBody),
    ))]
pub async fn user(
    State(state): State<AppState>,
    headers: HeaderMap,
    Query(params): Query<StreamParams>,
) -> Result<Response, MastoError> {
    serve(state, headers, params, Ok(Channel::User)).await
}

/// The caller's new notifications, live: `notification` events only.
#[utoipa::path(get, path = "/api/v1/streaming/user/notification", tag = "mastodon",
    params(StreamParams),
    security(("bearer" = [])),
    responses(
        (status = 200, description = "`event: notification` and `data:` lines; `:thump` when idle", body = String, content_type = "text/event-stream"),
        (status = 401, description = "No valid user token", body = MastoErrorBody),
        (status = 403, description = "The token lacks read:notifications", body = MastoErrorBody),
        (status = 503, description = "Too many open streams, or the event log is off", body = MastoErrorBody),
    ))]
pub async fn user_notification(
    State(state): State<AppState>,
    headers: HeaderMap,
    Query(params): Query<StreamParams>,
) -> Result<Response, MastoError> {
    serve(state, headers, params, Ok(Channel::UserNotification)).await
}

/// Every new post, live: `update` (a Status) for each, and `delete` (the bare id) for
/// each deleted post, leaving out the posts of authors the caller blocks, is blocked by
/// or mutes (as the public timeline does). Reposts are not posts, so none comes.
#[utoipa::path(get, path = "/api/v1/streaming/public", tag = "mastodon",
    params(StreamParams),
    security(("bearer" = [])),
    responses(
        (status = 200, description = "`event: update|delete` and `data:` lines; `:thump` when idle", body = String, content_type = "text/event-stream"),
        (status = 401, description = "No valid user token", body = MastoErrorBody),
        (status = 403, description = "The token lacks read:statuses", body = MastoErrorBody),
        (status = 503, description = "Too many open streams, or the event log is off", body = MastoErrorBody),
    ))]
pub async fn public(
    State(state): State<AppState>,
    headers: HeaderMap,
    Query(params): Query<StreamParams>,
) -> Result<Response, MastoError> {
    serve(state, headers, params, Ok(Channel::Public { local: false })).await
}

/// The same stream as `/api/v1/streaming/public` (every account is local).
#[utoipa::path(get, path = "/api/v1/streaming/public/local", tag = "mastodon",
    params(StreamParams),
    security(("bearer" = [])),
    responses(
        (status = 200, description = "`event: update|delete` and `data:` lines; `:thump` when idle", body = String, content_type = "text/event-stream"),
        (status = 401, description = "No valid user token", body = MastoErrorBody),
        (status = 403, description = "The token lacks read:statuses", body = MastoErrorBody),
        (status = 503, description = "Too many open streams, or the event log is off", body = MastoErrorBody),
    ))]
pub async fn public_local(
    State(state): State<AppState>,
    headers: HeaderMap,
    Query(params): Query<StreamParams>,
) -> Result<Response, MastoError> {
    serve(state, headers, params, Ok(Channel::Public { local: true })).await
}

/// The new posts carrying `tag`, live: `update` (a Status) for each and `delete` (the
/// bare id) when one is deleted, leaving out hidden authors as the public stream does.
#[utoipa::path(get, path = "/api/v1/streaming/hashtag", tag = "mastodon",
    params(StreamParams),
    security(("bearer" = [])),
    responses(
        (status = 200, description = "`event: update|delete` and `data:` lines; `:thump` when idle", body = String, content_type = "text/event-stream"),
        (status = 400, description = "No `tag`, or not a tag (letters, digits or `_`, at most 64)", body = MastoErrorBody),
        (status = 401, description = "No valid user token", body = MastoErrorBody),
        (status = 403, description = "The token lacks read:statuses", body = MastoErrorBody),
        (status = 503, description = "Too many open streams, or the event log is off", body = MastoErrorBody),
    ))]
pub async fn hashtag(
    State(state): State<AppState>,
    headers: HeaderMap,
    Query(params): Query<StreamParams>,
) -> Result<Response, MastoError> {
    let channel = Channel::parse("hashtag", params.tag.as_deref());
    serve(state, headers, params, channel).await
}

/// The same stream as `/api/v1/streaming/hashtag` (every account is local).
#[utoipa::path(get, path = "/api/v1/streaming/hashtag/local", tag = "mastodon",
    params(StreamParams),
    security(("bearer" = [])),
    responses(
        (status = 200, description = "`event: update|delete` and `data:` lines; `:thump` when idle", body = String, content_type = "text/event-stream"),
        (status = 400, description = "No `tag`, or not a tag (letters, digits or `_`, at most 64)", body = MastoErrorBody),
        (status = 401, description = "No valid user token", body = MastoErrorBody),
        (status = 403, description = "The token lacks read:statuses", body = MastoErrorBody),
        (status = 503, description = "Too many open streams, or the event log is off", body = MastoErrorBody),
    ))]
pub async fn hashtag_local(
    State(state): State<AppState>,
    headers: HeaderMap,
    Query(params): Query<StreamParams>,
) -> Result<Response, MastoError> {
    let channel = Channel::parse("hashtag:local", params.tag.as_deref());
    serve(state, headers, params, channel).await
}

/// An event's `data`: its JSON payload; a `delete`'s id as a JSON string. Mastodon's
/// ids are numbers, so its bare id is JSON too, and Mastodon.py parses every `data` as
/// JSON; socialite's ids are decimals of 29 digits, which a JSON number would round in
/// any client that reads numbers as doubles, so they go as JSON strings. (The WebSocket
/// sends the bare id, which masto.js takes as it is.)
fn sse_data(outgoing: super::Outgoing) -> String {
    match outgoing.event {
        "delete" => format!("\"{}\"", outgoing.payload),
        _ => outgoing.payload,
    }
}
