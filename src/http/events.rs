//! `/v1/events`: the event log as JSON pages; `/v1/users/{id}/timeline/stream`: the
//! live timeline as Server-Sent Events.

use std::convert::Infallible;
use std::time::Duration;

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures::stream::{self, Stream};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use super::auth::{Admin, Owner};
use super::error::{ApiError, ApiResult, Json, Problem, Query};
use super::timeline::TimelineItemBody;
use super::{AppState, known_user_id};
use crate::domain::{Event, EventId, format_time_ms};
use crate::events::stream::OpenError;
use crate::events::{StreamMessage, TimelineStream};

/// A comment is sent on an idle stream this often.
pub const KEEP_ALIVE: Duration = Duration::from_secs(15);

#[derive(Debug, Deserialize, IntoParams)]
pub struct EventsQuery {
    /// Exclusive: only events after this id. Omitted: from the oldest kept event. An id
    /// the log no longer holds (trimmed) or never issued (past its newest event) is 410.
    #[param(value_type = Option<String>, pattern = "^[0-9]{1,20}$")]
    pub after: Option<String>,
    /// 1–1000, default 100.
    #[param(value_type = Option<u32>, minimum = 1, maximum = 1000)]
    pub limit: Option<String>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct EventBody {
    /// Strictly increasing; a decimal string, since ids can pass 2^53.
    #[schema(example = "1042")]
    pub id: String,
    /// `post.created`, `post.deleted`, `user.followed`, `user.unfollowed`, `post.liked`
    /// or `user.renamed`.
    #[serde(rename = "type")]
    #[schema(example = "post.created")]
    pub kind: String,
    #[schema(example = "2026-11-22T14:00:00.012Z")]
    pub time: String,
    /// Fields by type, as docs/api-events.md lists them.
    #[schema(value_type = Object)]
    pub payload: serde_json::Value,
}

impl From<Event> for EventBody {
    fn from(event: Event) -> Self {
        EventBody {
            id: event.id.to_string(),
            kind: event.kind.as_str().to_owned(),
            time: format_time_ms(event.at_ms),
            payload: event.payload,
        }
    }
}

#[derive(Debug, Serialize, ToSchema)]
pub struct EventPageBody {
    pub events: Vec<EventBody>,
    /// Pass as `after` for the next page (the last event's id; `after` itself, or null,
    /// when nothing newer exists yet).
    pub next: Option<String>,
}

fn parse_event_id(what: &str, raw: &str) -> ApiResult<EventId> {
    raw.trim()
        .parse()
        .map_err(|_| ApiError::invalid(format!("{what} must be a decimal event id, got {raw:?}")))
}

/// A page of the event log, oldest first. The log holds every user's likes, which are
/// otherwise private, so with `auth.admin_token` set it needs that token, as the other
/// endpoints for operators and integrations do.
#[utoipa::path(
    get, path = "/v1/events", tag = "events",
    params(EventsQuery),
    security((), ("admin" = [])),
    responses(
        (status = 200, description = "A page of the event log", body = EventPageBody),
        (status = 401, description = "`auth.admin_token` is set and was not sent", body = Problem, content_type = "application/problem+json"),
        (status = 410, description = "`after` is not in the log: trimmed, or never issued (past the newest event, e.g. from another deployment or before a restore); start again without it", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "Bad after or limit", body = Problem, content_type = "application/problem+json"),
    )
)]
pub async fn list_events(
    State(state): State<AppState>,
    _admin: Admin,
    Query(query): Query<EventsQuery>,
) -> ApiResult<Json<EventPageBody>> {
    let after = query
        .after
        .as_deref()
        .map(|a| parse_event_id("after", a))
        .transpose()?;
    let limit = match query.limit.as_deref() {
        None => 100,
        Some(raw) => match raw.parse::<usize>() {
            Ok(limit) if (1..=1000).contains(&limit) => limit,
            _ => {
                return Err(ApiError::invalid(format!(
                    "limit must be an integer from 1 to 1000, got {raw:?}"
                )));
            }
        },
    };
    let page = state.events.page(after, limit).await?;
    Ok(Json(EventPageBody {
        events: page.events.into_iter().map(EventBody::from).collect(),
        next: page.next.map(|id| id.to_string()),
    }))
}

#[derive(Debug, Serialize, ToSchema)]
pub struct DeleteBody {
    /// Ids of the items to remove.
    pub ids: Vec<String>,
    /// For an unfollow: the author whose items all go (`ids` names the newest 100).
    pub author: Option<String>,
}

/// The name of a timeline stream event.
#[derive(ToSchema)]
#[schema(rename_all = "lowercase")]
#[allow(dead_code)] // documents the `event:` field; `sse` writes the names
pub enum StreamEventName {
    Item,
    Delete,
    Notification,
    Reset,
}

/// One event of a timeline stream, by its fields (`event:`, `data:`, `id:`); comments
/// (the keep-alive) are no events. For `text/event-stream`, OpenAPI before 3.2 reads a
/// response's `schema` as describing each event, as schemathesis does.
#[derive(ToSchema)]
#[allow(dead_code)] // documentation only: `sse` writes the events
pub struct StreamEvent {
    pub event: StreamEventName,
    /// JSON: for `item` a timeline item (as `GET /v1/users/{id}/timeline` lists it),
    /// for `delete` `{ids, author}`, for `notification` a notification of the user
    /// (`{id, type, actor: {id}, post_id?, created_at}`, as
    /// `GET /v1/users/{id}/notifications` will list it), for `reset` `{reason}`.
    #[schema(example = r#"{"ids":["6560a1b2c3d4e5f6a7b8c9d0"],"author":null}"#)]
    pub data: String,
    /// The event-log id, a decimal string, to resume with `Last-Event-ID`; only a
    /// `reset` may lack it (when the log holds no event to continue from).
    #[schema(example = "1042", pattern = "^[0-9]+$", nullable = false)]
    pub id: Option<String>,
}

fn sse(message: StreamMessage) -> Option<SseEvent> {
    let (name, id, data) = match message {
        StreamMessage::Item { id, item } => (
            "item",
            Some(id),
            serde_json::to_string(&TimelineItemBody::from(item)),
        ),
        StreamMessage::Delete { id, posts, author } => (
            "delete",
            Some(id),
            serde_json::to_string(&DeleteBody {
                ids: posts.iter().map(ToString::to_string).collect(),
                author,
            }),
        ),
        StreamMessage::Notification {
            id,
            notification,
            kind,
            actor,
            post,
            at_ms,
        } => {
            let mut body = serde_json::json!({
                "id": notification.to_string(), "type": kind.as_str(),
                "actor": { "id": actor }, "created_at": format_time_ms(at_ms),
            });
            if let Some(post) = post {
                body["post_id"] = post.to_string().into();
            }
            ("notification", Some(id), serde_json::to_string(&body))
        }
        StreamMessage::Reset { id } => (
            "reset",
            id,
            Ok(r#"{"reason":"the position asked for is not in the event log (trimmed, or never issued): reload the timeline"}"#.to_owned()),
        ),
        // The listings' messages: this stream follows none (`Interest::home`).
        StreamMessage::Listed { .. } | StreamMessage::Unlisted { .. } => return None,
    };
    let event = SseEvent::default()
        .event(name)
        .data(data.unwrap_or_else(|_| "{}".to_owned()));
    Some(match id {
        Some(id) => event.id(id.to_string()),
        None => event,
    })
}

fn events(stream: TimelineStream) -> impl Stream<Item = Result<SseEvent, Infallible>> {
    stream::unfold(stream, |mut stream| async move {
        loop {
            if let Some(event) = sse(stream.recv().await?) {
                return Some((Ok(event), stream));
            }
        }
    })
}

/// The user's home timeline, live: an `item` event per new timeline item (the
/// timeline's item JSON), a `delete` event (`{ids, author}`) for items removed by a
/// deletion or an unfollow, and a `notification` event per new notification of the user
/// (follows, likes of their posts, replies, mentions; after the `item` of the same
/// event, if any), each with its event-log `id`. Reconnecting with
/// `Last-Event-ID` sends everything after it, or a `reset` event (reload the timeline)
/// when the log does not hold it: trimmed, or never issued (past the newest event). A comment is
/// sent at least every 15 s. A client that falls `events.stream_buffer` messages behind is
/// disconnected.
#[utoipa::path(
    get, path = "/v1/users/{id}/timeline/stream", tag = "timeline",
    params(
        ("id" = String, Path, description = "Reader"),
        ("Last-Event-ID" = Option<String>, Header, description = "Resume after this event id (decimal); one the log does not hold (trimmed, or never issued: past its newest event) gives a `reset` first"),
    ),
    security(("bearer" = [])),
    responses(
        (status = 200, description = "A stream of `item`, `delete` and `reset` events; the schema is one event's", body = StreamEvent, content_type = "text/event-stream"),
        (status = 404, description = "Unknown user", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "Bad Last-Event-ID", body = Problem, content_type = "application/problem+json"),
        (status = 503, description = "Too many open streams (`events.max_streams`), or storage unavailable", body = Problem, content_type = "application/problem+json"),
    )
)]
pub async fn timeline_stream(
    State(state): State<AppState>,
    Owner(id): Owner,
    headers: HeaderMap,
) -> ApiResult<Response> {
    known_user_id(&id)?;
    let last = match headers.get("last-event-id") {
        None => None,
        Some(value) => {
            let text = value
                .to_str()
                .map_err(|_| ApiError::invalid("Last-Event-ID must be a decimal event id"))?;
            Some(parse_event_id("Last-Event-ID", text)?)
        }
    };
    let stream = match state.events.open_stream(&id, last).await {
        Ok(stream) => stream,
        Err(OpenError::TooMany) => {
            return Err(ApiError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "too-many-streams",
                "this server has as many open streams as it allows; try again later",
            ));
        }
        Err(OpenError::Store(error)) => return Err(error.into()),
    };
    Ok(Sse::new(events(stream))
        .keep_alive(KeepAlive::new().interval(KEEP_ALIVE))
        .into_response())
}
