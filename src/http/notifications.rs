//! A user's notifications: `GET /v1/users/{id}/notifications`, plain or grouped; one by
//! id, its dismissal, and clearing them all.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use super::auth::Owner;
use super::error::{ApiError, ApiResult, Json, Problem, Query};
use super::{AppState, known_user_id, parse_before, parse_limit};
use crate::domain::{NotificationFilter, NotificationType, format_time_ms};
use crate::service::notifications::{Actor, GroupView, NotificationView};

#[derive(Debug, Deserialize, IntoParams)]
pub struct NotificationsQuery {
    /// 1–100, default 20 (notifications, or groups with `grouped=true`).
    #[param(value_type = Option<u32>, minimum = 1, maximum = 100)]
    pub limit: Option<String>,
    /// Exclusive: only notifications older than this `id` (grouped: groups whose
    /// `latest_id` is older); pass the previous page's `next_cursor`.
    #[param(value_type = Option<String>, pattern = "^[0-9a-f]{24}$")]
    pub before: Option<String>,
    /// Only these types, comma-separated: `follow`, `like`, `repost`, `reply`, `mention`.
    #[param(value_type = Option<String>, example = "like,follow")]
    pub types: Option<String>,
    /// None of these types, comma-separated (applied after `types`).
    #[param(value_type = Option<String>, example = "mention")]
    pub exclude_types: Option<String>,
    /// `true`: one group per type and post (follows: per type), newest first by each
    /// group's latest notification. Default `false`.
    #[param(value_type = Option<bool>)]
    pub grouped: Option<String>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct ActorBody {
    #[schema(example = "alice")]
    pub id: String,
    /// Null only if the user is unknown.
    #[schema(example = "Alice")]
    pub display_name: Option<String>,
}

impl From<Actor> for ActorBody {
    fn from(actor: Actor) -> Self {
        ActorBody {
            id: actor.id,
            display_name: actor.display_name,
        }
    }
}

#[derive(Debug, Serialize, ToSchema)]
pub struct NotificationBody {
    /// Sorts in creation order; the cursor for `before`.
    #[schema(example = "6740a1b2000c000000000001")]
    pub id: String,
    /// `follow`, `like`, `repost`, `reply` or `mention`.
    #[serde(rename = "type")]
    #[schema(example = "like")]
    pub kind: &'static str,
    pub actor: ActorBody,
    /// The liked post, the reply, the post that mentions; absent for follows.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(example = "6740a1b2000c000000000001")]
    pub post_id: Option<String>,
    #[schema(example = "2026-11-22T14:00:00.012Z")]
    pub created_at: String,
}

impl From<NotificationView> for NotificationBody {
    fn from(n: NotificationView) -> Self {
        NotificationBody {
            id: n.id.to_string(),
            kind: n.kind.as_str(),
            actor: n.actor.into(),
            post_id: n.post.map(|p| p.to_string()),
            created_at: format_time_ms(n.at_ms),
        }
    }
}

#[derive(Debug, Serialize, ToSchema)]
pub struct NotificationGroupBody {
    #[serde(rename = "type")]
    #[schema(example = "like")]
    pub kind: &'static str,
    /// Absent for follows.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(example = "6740a1b2000c000000000001")]
    pub post_id: Option<String>,
    /// Notifications in the group ("alice and 41 others": 42).
    #[schema(example = 42)]
    pub count: u64,
    /// The latest actors, newest first, at most 3.
    pub actors: Vec<ActorBody>,
    /// The id of the group's latest notification; the cursor for `before`.
    #[schema(example = "6740a1b2000c000000000001")]
    pub latest_id: String,
    #[schema(example = "2026-11-22T14:00:00.012Z")]
    pub latest_at: String,
}

impl From<GroupView> for NotificationGroupBody {
    fn from(g: GroupView) -> Self {
        NotificationGroupBody {
            kind: g.kind.as_str(),
            post_id: g.post.map(|p| p.to_string()),
            count: g.count,
            actors: g.actors.into_iter().map(ActorBody::from).collect(),
            latest_id: g.latest_id.to_string(),
            latest_at: format_time_ms(g.latest_at_ms),
        }
    }
}

#[derive(Debug, Serialize, ToSchema)]
pub struct NotificationPageBody {
    /// Newest first (plain view).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub items: Option<Vec<NotificationBody>>,
    /// Newest first by latest notification (`grouped=true`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub groups: Option<Vec<NotificationGroupBody>>,
    /// Pass as `before` for the next page; null when nothing older exists.
    pub next_cursor: Option<String>,
}

fn parse_types(raw: Option<&str>, param: &str) -> ApiResult<Option<Vec<NotificationType>>> {
    let Some(raw) = raw else { return Ok(None) };
    raw.split(',')
        .map(|t| {
            NotificationType::parse(t.trim()).ok_or_else(|| {
                ApiError::invalid(format!(
                    "{param} must list follow, like, repost, reply or mention, got {t:?}"
                ))
            })
        })
        .collect::<ApiResult<Vec<_>>>()
        .map(Some)
}

/// The types to serve: `types` (default every type) less `exclude_types`; empty means
/// every type to the store, so no type left is refused.
fn filter(query: &NotificationsQuery) -> ApiResult<NotificationFilter> {
    let only = parse_types(query.types.as_deref(), "types")?;
    let except = parse_types(query.exclude_types.as_deref(), "exclude_types")?.unwrap_or_default();
    if only.is_none() && except.is_empty() {
        return Ok(NotificationFilter::default());
    }
    let types: Vec<NotificationType> = only
        .unwrap_or_else(|| NotificationType::ALL.to_vec())
        .into_iter()
        .filter(|t| !except.contains(t))
        .collect();
    if types.is_empty() {
        return Err(ApiError::invalid("types and exclude_types leave no type"));
    }
    Ok(NotificationFilter {
        types,
        hidden: Vec::new(),
    })
}

fn parse_grouped(raw: Option<&str>) -> ApiResult<bool> {
    match raw {
        None | Some("false") => Ok(false),
        Some("true") => Ok(true),
        Some(other) => Err(ApiError::invalid(format!(
            "grouped must be true or false, got {other:?}"
        ))),
    }
}

/// The user's notifications, newest first: follows, likes and reposts of their posts,
/// replies to them and mentions of them, each while its cause stands. Written by the
/// notifications worker, so a new one appears within the worker's lag (milliseconds;
/// see `/v1/workers`). With `grouped=true`, one group per type and post.
#[utoipa::path(
    get, path = "/v1/users/{id}/notifications", tag = "notifications",
    params(("id" = String, Path, description = "The notified user"), NotificationsQuery),
    security(("bearer" = [])),
    responses(
        (status = 200, description = "A page of notifications (`items`) or groups (`groups`)", body = NotificationPageBody),
        (status = 404, description = "Unknown user", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "Bad limit, before, types, exclude_types or grouped", body = Problem, content_type = "application/problem+json"),
    )
)]
pub async fn list_notifications(
    State(state): State<AppState>,
    Owner(id): Owner,
    Query(query): Query<NotificationsQuery>,
) -> ApiResult<Json<NotificationPageBody>> {
    known_user_id(&id)?;
    let limit = parse_limit(query.limit.as_deref())?;
    let before = parse_before(query.before.as_deref())?;
    let filter = filter(&query)?;
    let service = state.social.notifications();
    if parse_grouped(query.grouped.as_deref())? {
        let page = service.groups(&id, &filter, before, limit).await?;
        Ok(Json(NotificationPageBody {
            items: None,
            groups: Some(page.items.into_iter().map(Into::into).collect()),
            next_cursor: page.next.map(|id| id.to_string()),
        }))
    } else {
        let page = service.page(&id, &filter, before, limit).await?;
        Ok(Json(NotificationPageBody {
            items: Some(page.items.into_iter().map(Into::into).collect()),
            groups: None,
            next_cursor: page.next.map(|id| id.to_string()),
        }))
    }
}

/// A notification id in a path: 24 hex characters, else it names none (404).
fn known_notification_id(raw: &str) -> ApiResult<crate::domain::PostId> {
    raw.parse()
        .map_err(|_| ApiError::not_found(format!("notification {raw} not found")))
}

/// One of the user's notifications, as a page serves it.
#[utoipa::path(
    get, path = "/v1/users/{id}/notifications/{notification_id}", tag = "notifications",
    params(("id" = String, Path, description = "The notified user"), ("notification_id" = String, Path, description = "Notification id")),
    security(("bearer" = [])),
    responses(
        (status = 200, description = "The notification", body = NotificationBody),
        (status = 404, description = "Unknown user, or no such notification of theirs: never made, dismissed, cleared, its cause undone, or its actor hidden from them", body = Problem, content_type = "application/problem+json"),
    )
)]
pub async fn get_notification(
    State(state): State<AppState>,
    Owner(id): Owner,
    Path((_owner, notification)): Path<(String, String)>,
) -> ApiResult<Json<NotificationBody>> {
    known_user_id(&id)?;
    let notification = known_notification_id(&notification)?;
    let view = state.social.notifications().get(&id, notification).await?;
    Ok(Json(view.into()))
}

/// Dismiss one notification for good: neither the worker nor a rebuild brings it back;
/// the same cause done again later (a like undone and given again) notifies again.
#[utoipa::path(
    delete, path = "/v1/users/{id}/notifications/{notification_id}", tag = "notifications",
    params(("id" = String, Path, description = "The notified user"), ("notification_id" = String, Path, description = "Notification id")),
    security(("bearer" = [])),
    responses(
        (status = 204, description = "Dismissed"),
        (status = 404, description = "Unknown user, or no such notification stored for them (never made, or dismissed or cleared already)", body = Problem, content_type = "application/problem+json"),
    )
)]
pub async fn dismiss_notification(
    State(state): State<AppState>,
    Owner(id): Owner,
    Path((_owner, notification)): Path<(String, String)>,
) -> ApiResult<StatusCode> {
    known_user_id(&id)?;
    let notification = known_notification_id(&notification)?;
    state
        .social
        .notifications()
        .dismiss(&id, notification)
        .await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Clear every notification the user has now, for good (as a dismissal of each);
/// causes done later notify as usual.
#[utoipa::path(
    delete, path = "/v1/users/{id}/notifications", tag = "notifications",
    params(("id" = String, Path, description = "The notified user")),
    security(("bearer" = [])),
    responses(
        (status = 204, description = "Cleared"),
        (status = 404, description = "Unknown user", body = Problem, content_type = "application/problem+json"),
    )
)]
pub async fn clear_notifications(
    State(state): State<AppState>,
    Owner(id): Owner,
) -> ApiResult<StatusCode> {
    known_user_id(&id)?;
    state.social.notifications().clear(&id).await?;
    Ok(StatusCode::NO_CONTENT)
}
