//! `/v1/users/{id}/blocks` and `/mutes`: blocks and mutes, private to their owner.

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use super::auth::Owner;
use super::error::{ApiError, ApiResult, Json, Problem, Query};
use super::{AppState, known_user_id, parse_limit};
use crate::domain::relations::{MAX_MUTE_MS, Relation};
use crate::domain::{format_time_ms, validate_user_id};
use crate::service::MuteRequest;

#[derive(Debug, Deserialize, IntoParams)]
pub struct RelationQuery {
    /// 1–100, default 20.
    #[param(value_type = Option<u32>, minimum = 1, maximum = 100)]
    pub limit: Option<String>,
    /// The `next_cursor` of the previous page.
    pub cursor: Option<String>,
}

/// The optional body of a mute.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct MuteBody {
    /// Whether the muted user's notifications are hidden too; default true.
    pub notifications: Option<bool>,
    /// How long the mute lasts, e.g. `30m`, `1h`, `7days` (1 ms to 10 years); unset:
    /// for ever.
    #[schema(example = "1h")]
    pub duration: Option<String>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct RelationBody {
    /// The blocked or muted user.
    #[schema(example = "bob")]
    pub id: String,
    #[schema(example = "2026-11-22T14:00:00.012Z")]
    pub created_at: String,
    /// Mutes only: whether their notifications are hidden too.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub notifications: Option<bool>,
    /// Mutes only: when the mute ends (RFC 3339), null for ever.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<Option<String>>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct RelationPage {
    pub items: Vec<RelationBody>,
    /// Pass as `cursor` for the next page; null on the last page.
    pub next_cursor: Option<String>,
}

fn body(relation: Relation) -> RelationBody {
    RelationBody {
        id: relation.other,
        created_at: format_time_ms(relation.created_ms),
        notifications: relation.mute.map(|m| m.notifications),
        expires_at: relation.mute.map(|m| m.until_ms.map(format_time_ms)),
    }
}

fn bad_request(detail: impl Into<String>) -> ApiError {
    ApiError::new(StatusCode::BAD_REQUEST, "bad-request", detail)
}

/// A cursor is `<created ms>.<user id>`, as the previous page's `next_cursor` gave it.
fn parse_cursor(raw: Option<&str>) -> ApiResult<Option<(i64, String)>> {
    let Some(raw) = raw.filter(|r| !r.is_empty()) else {
        return Ok(None);
    };
    let bad = || ApiError::invalid(format!("cursor {raw:?} is not a valid cursor"));
    let (ms, id) = raw.split_once('.').ok_or_else(bad)?;
    let ms: i64 = ms.parse().map_err(|_| bad())?;
    validate_user_id(id).map_err(|_| bad())?;
    Ok(Some((ms, id.to_owned())))
}

/// Parses a mute's optional body: empty, or the JSON object [`MuteBody`].
fn parse_mute(raw: &[u8]) -> ApiResult<MuteRequest> {
    let body: MuteBody = match raw.iter().all(u8::is_ascii_whitespace) {
        true => MuteBody::default(),
        false => serde_json::from_slice(raw)
            .map_err(|e| bad_request(format!("the mute's body is not valid: {e}")))?,
    };
    let duration_ms = match body.duration.as_deref() {
        None => None,
        Some(text) => {
            let parsed = humantime::parse_duration(text)
                .map_err(|e| bad_request(format!("duration {text:?} is not a duration: {e}")))?;
            let ms = i64::try_from(parsed.as_millis()).unwrap_or(i64::MAX);
            if !(1..=MAX_MUTE_MS).contains(&ms) {
                return Err(bad_request(format!(
                    "duration {text:?} must be from 1ms to {} days",
                    MAX_MUTE_MS / 86_400_000
                )));
            }
            Some(ms)
        }
    };
    Ok(MuteRequest {
        notifications: body.notifications.unwrap_or(true),
        duration_ms,
    })
}

/// Block a user: the follows between the two go both ways, and neither may follow
/// the other while it stands. Idempotent.
#[utoipa::path(
    put, path = "/v1/users/{id}/blocks/{other}", tag = "relations",
    params(("id" = String, Path, description = "Blocker"), ("other" = String, Path, description = "User to block")),
    security(("bearer" = [])),
    responses(
        (status = 204, description = "Blocked"),
        (status = 401, description = "No valid credentials", body = Problem, content_type = "application/problem+json"),
        (status = 403, description = "Credentials of another user", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "Unknown user", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "Self-block", body = Problem, content_type = "application/problem+json"),
    )
)]
pub async fn block(
    State(state): State<AppState>,
    Owner(id): Owner,
    Path((_owner, other)): Path<(String, String)>,
) -> ApiResult<StatusCode> {
    known_user_id(&id)?;
    known_user_id(&other)?;
    state.social.block(&id, &other).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Unblock a user; restores no follow. Idempotent.
#[utoipa::path(
    delete, path = "/v1/users/{id}/blocks/{other}", tag = "relations",
    params(("id" = String, Path, description = "Blocker"), ("other" = String, Path, description = "User to unblock")),
    security(("bearer" = [])),
    responses(
        (status = 204, description = "Not blocked"),
        (status = 401, description = "No valid credentials", body = Problem, content_type = "application/problem+json"),
        (status = 403, description = "Credentials of another user", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "Unknown user", body = Problem, content_type = "application/problem+json"),
    )
)]
pub async fn unblock(
    State(state): State<AppState>,
    Owner(id): Owner,
    Path((_owner, other)): Path<(String, String)>,
) -> ApiResult<StatusCode> {
    known_user_id(&id)?;
    known_user_id(&other)?;
    state.social.unblock(&id, &other).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Mute a user: their posts leave the muter's home timeline and live stream. A second
/// mute replaces the settings of the first.
#[utoipa::path(
    put, path = "/v1/users/{id}/mutes/{other}", tag = "relations",
    params(("id" = String, Path, description = "Muter"), ("other" = String, Path, description = "User to mute")),
    request_body(content = Option<MuteBody>, description = "Optional; empty means notifications muted too, for ever", content_type = "application/json"),
    security(("bearer" = [])),
    responses(
        (status = 204, description = "Muted"),
        (status = 400, description = "Malformed body, or a bad, zero or over-long duration", body = Problem, content_type = "application/problem+json"),
        (status = 401, description = "No valid credentials", body = Problem, content_type = "application/problem+json"),
        (status = 403, description = "Credentials of another user", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "Unknown user", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "Self-mute", body = Problem, content_type = "application/problem+json"),
    )
)]
pub async fn mute(
    State(state): State<AppState>,
    Owner(id): Owner,
    Path((_owner, other)): Path<(String, String)>,
    raw: Bytes,
) -> ApiResult<StatusCode> {
    known_user_id(&id)?;
    known_user_id(&other)?;
    let request = parse_mute(&raw)?;
    state.social.mute(&id, &other, request).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Unmute a user. Idempotent.
#[utoipa::path(
    delete, path = "/v1/users/{id}/mutes/{other}", tag = "relations",
    params(("id" = String, Path, description = "Muter"), ("other" = String, Path, description = "User to unmute")),
    security(("bearer" = [])),
    responses(
        (status = 204, description = "Not muted"),
        (status = 401, description = "No valid credentials", body = Problem, content_type = "application/problem+json"),
        (status = 403, description = "Credentials of another user", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "Unknown user", body = Problem, content_type = "application/problem+json"),
    )
)]
pub async fn unmute(
    State(state): State<AppState>,
    Owner(id): Owner,
    Path((_owner, other)): Path<(String, String)>,
) -> ApiResult<StatusCode> {
    known_user_id(&id)?;
    known_user_id(&other)?;
    state.social.unmute(&id, &other).await?;
    Ok(StatusCode::NO_CONTENT)
}

async fn list(
    state: &AppState,
    id: &str,
    query: &RelationQuery,
    mutes: bool,
) -> ApiResult<Json<RelationPage>> {
    known_user_id(id)?;
    let limit = parse_limit(query.limit.as_deref())?;
    let cursor = parse_cursor(query.cursor.as_deref())?;
    let page = state.social.relation_list(id, mutes, cursor, limit).await?;
    Ok(Json(RelationPage {
        items: page.items.into_iter().map(body).collect(),
        next_cursor: page.next.map(|(ms, other)| format!("{ms}.{other}")),
    }))
}

/// A user's blocks, newest first. Private to the user.
#[utoipa::path(
    get, path = "/v1/users/{id}/blocks", tag = "relations",
    params(("id" = String, Path, description = "User id"), RelationQuery),
    security(("bearer" = [])),
    responses(
        (status = 200, description = "A page of blocks", body = RelationPage),
        (status = 401, description = "No valid credentials", body = Problem, content_type = "application/problem+json"),
        (status = 403, description = "Credentials of another user", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "Unknown user", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "Bad limit or cursor", body = Problem, content_type = "application/problem+json"),
    )
)]
pub async fn list_blocks(
    State(state): State<AppState>,
    Owner(id): Owner,
    Query(query): Query<RelationQuery>,
) -> ApiResult<Json<RelationPage>> {
    list(&state, &id, &query, false).await
}

/// A user's standing mutes, newest first (expired ones are not listed). Private to
/// the user.
#[utoipa::path(
    get, path = "/v1/users/{id}/mutes", tag = "relations",
    params(("id" = String, Path, description = "User id"), RelationQuery),
    security(("bearer" = [])),
    responses(
        (status = 200, description = "A page of mutes", body = RelationPage),
        (status = 401, description = "No valid credentials", body = Problem, content_type = "application/problem+json"),
        (status = 403, description = "Credentials of another user", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "Unknown user", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "Bad limit or cursor", body = Problem, content_type = "application/problem+json"),
    )
)]
pub async fn list_mutes(
    State(state): State<AppState>,
    Owner(id): Owner,
    Query(query): Query<RelationQuery>,
) -> ApiResult<Json<RelationPage>> {
    list(&state, &id, &query, true).await
}
