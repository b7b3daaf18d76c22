//! Likes and the activity log: `/v1/users/{id}/likes/{post_id}`, `/v1/users/{id}/activity`.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use super::auth::Owner;
use super::error::{ApiError, ApiResult, Json, Problem, Query};
use super::{AppState, known_post_id, known_user_id, parse_limit};
use crate::domain::{Activity, format_time_ms};

/// The deepest `skip` accepted.
const MAX_SKIP: u64 = 10_000_000;

#[derive(Debug, Deserialize, IntoParams)]
pub struct ActivityQuery {
    /// Entries to skip from the newest, 0–10,000,000; default 0.
    #[param(value_type = Option<u64>, minimum = 0, maximum = 10000000)]
    pub skip: Option<String>,
    /// 1–100, default 20.
    #[param(value_type = Option<u32>, minimum = 1, maximum = 100)]
    pub limit: Option<String>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct ActivityBody {
    /// `post`, `like` or `follow`.
    #[serde(rename = "type")]
    #[schema(example = "post")]
    pub kind: &'static str,
    #[schema(example = "2026-11-22T14:00:00.012Z")]
    pub ts: String,
    /// The post id for posts and likes, the followed user for follows.
    #[serde(rename = "ref")]
    #[schema(example = "6740a1b2000c000000000001")]
    pub reference: String,
    /// The entry's position in the user's log, from 0.
    pub seq: u64,
}

impl From<Activity> for ActivityBody {
    fn from(activity: Activity) -> Self {
        ActivityBody {
            kind: activity.kind.as_str(),
            ts: format_time_ms(activity.ts_ms),
            reference: activity.reference,
            seq: activity.seq,
        }
    }
}

#[derive(Debug, Serialize, ToSchema)]
pub struct ActivityPageBody {
    /// Newest first.
    pub items: Vec<ActivityBody>,
    /// Entries in the whole log.
    pub total: u64,
}

/// Like a post. Idempotent; a new like is recorded in the activity log.
#[utoipa::path(
    put, path = "/v1/users/{id}/likes/{post_id}", tag = "activity",
    params(("id" = String, Path, description = "User"), ("post_id" = String, Path, description = "Post")),
    security(("bearer" = [])),
    responses(
        (status = 204, description = "Liked"),
        (status = 404, description = "Unknown user or post", body = Problem, content_type = "application/problem+json"),
    )
)]
pub async fn like(
    State(state): State<AppState>,
    Owner(id): Owner,
    Path((_owner, post_id)): Path<(String, String)>,
) -> ApiResult<StatusCode> {
    known_user_id(&id)?;
    let post = known_post_id(&post_id)?;
    state.social.activity().like(&id, post).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Remove a like. Idempotent; the activity log keeps its history.
#[utoipa::path(
    delete, path = "/v1/users/{id}/likes/{post_id}", tag = "activity",
    params(("id" = String, Path, description = "User"), ("post_id" = String, Path, description = "Post")),
    security(("bearer" = [])),
    responses(
        (status = 204, description = "Not liked"),
        (status = 404, description = "Unknown user or malformed post id", body = Problem, content_type = "application/problem+json"),
    )
)]
pub async fn unlike(
    State(state): State<AppState>,
    Owner(id): Owner,
    Path((_owner, post_id)): Path<(String, String)>,
) -> ApiResult<StatusCode> {
    known_user_id(&id)?;
    let post = known_post_id(&post_id)?;
    state.social.activity().unlike(&id, post).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// A user's activity log, newest first.
#[utoipa::path(
    get, path = "/v1/users/{id}/activity", tag = "activity",
    params(("id" = String, Path, description = "User"), ActivityQuery),
    security(("bearer" = [])),
    responses(
        (status = 200, description = "A page of the log", body = ActivityPageBody),
        (status = 404, description = "Unknown user", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "Bad skip or limit", body = Problem, content_type = "application/problem+json"),
    )
)]
pub async fn list_activity(
    State(state): State<AppState>,
    Owner(id): Owner,
    Query(query): Query<ActivityQuery>,
) -> ApiResult<Json<ActivityPageBody>> {
    known_user_id(&id)?;
    let limit = parse_limit(query.limit.as_deref())? as u64;
    let skip = match query.skip.as_deref() {
        None => 0,
        Some(raw) => match raw.parse::<u64>() {
            Ok(skip) if skip <= MAX_SKIP => skip,
            _ => {
                return Err(ApiError::invalid(format!(
                    "skip must be an integer from 0 to {MAX_SKIP}, got {raw:?}"
                )));
            }
        },
    };
    let page = state.social.activity().page(&id, skip, limit).await?;
    Ok(Json(ActivityPageBody {
        items: page.items.into_iter().map(ActivityBody::from).collect(),
        total: page.total,
    }))
}
