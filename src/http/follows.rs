//! `/v1/users/{id}/following` and `/followers`: the follow graph.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use super::auth::Owner;
use super::error::{ApiError, ApiResult, Json, Problem, Query};
use super::{AppState, known_user_id, parse_limit};
use crate::domain::validate_user_id;
use crate::service::Direction;

#[derive(Debug, Deserialize, IntoParams)]
pub struct ListQuery {
    /// 1–100, default 20.
    #[param(value_type = Option<u32>, minimum = 1, maximum = 100)]
    pub limit: Option<String>,
    /// The `next_cursor` of the previous page.
    pub cursor: Option<String>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct UserRef {
    #[schema(example = "bob")]
    pub id: String,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct UserRefPage {
    pub items: Vec<UserRef>,
    /// Null on the last page.
    pub next_cursor: Option<String>,
}

/// Follow a user. Idempotent.
#[utoipa::path(
    put, path = "/v1/users/{id}/following/{target}", tag = "graph",
    params(("id" = String, Path, description = "Follower"), ("target" = String, Path, description = "User to follow")),
    security(("bearer" = [])),
    responses(
        (status = 204, description = "Following"),
        (status = 404, description = "Unknown user", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "Self-follow", body = Problem, content_type = "application/problem+json"),
    )
)]
pub async fn follow(
    State(state): State<AppState>,
    Owner(id): Owner,
    Path((_owner, target)): Path<(String, String)>,
) -> ApiResult<StatusCode> {
    known_user_id(&id)?;
    known_user_id(&target)?;
    state.social.follow(&id, &target).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Stop following a user. Idempotent.
#[utoipa::path(
    delete, path = "/v1/users/{id}/following/{target}", tag = "graph",
    params(("id" = String, Path, description = "Follower"), ("target" = String, Path, description = "User to unfollow")),
    security(("bearer" = [])),
    responses(
        (status = 204, description = "Not following"),
        (status = 404, description = "Unknown user", body = Problem, content_type = "application/problem+json"),
    )
)]
pub async fn unfollow(
    State(state): State<AppState>,
    Owner(id): Owner,
    Path((_owner, target)): Path<(String, String)>,
) -> ApiResult<StatusCode> {
    known_user_id(&id)?;
    known_user_id(&target)?;
    state.social.unfollow(&id, &target).await?;
    Ok(StatusCode::NO_CONTENT)
}

fn parse_cursor(cursor: Option<&str>) -> ApiResult<Option<&str>> {
    match cursor {
        None | Some("") => Ok(None),
        Some(cursor) => {
            validate_user_id(cursor).map_err(|_| {
                ApiError::invalid(format!("cursor {cursor:?} is not a valid cursor"))
            })?;
            Ok(Some(cursor))
        }
    }
}

async fn page(
    state: &AppState,
    id: &str,
    query: &ListQuery,
    direction: Direction,
) -> ApiResult<Json<UserRefPage>> {
    known_user_id(id)?;
    let limit = parse_limit(query.limit.as_deref())?;
    let cursor = parse_cursor(query.cursor.as_deref())?;
    let page = state
        .social
        .follow_list(id, direction, cursor, limit)
        .await?;
    Ok(Json(UserRefPage {
        items: page.items.into_iter().map(|id| UserRef { id }).collect(),
        next_cursor: page.next,
    }))
}

/// Who a user follows, by id ascending.
#[utoipa::path(
    get, path = "/v1/users/{id}/following", tag = "graph",
    params(("id" = String, Path, description = "User id"), ListQuery),
    responses(
        (status = 200, description = "A page of followees", body = UserRefPage),
        (status = 404, description = "Unknown user", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "Bad limit or cursor", body = Problem, content_type = "application/problem+json"),
    )
)]
pub async fn list_following(
    State(state): State<AppState>,
    Path(id): Path<String>,
    Query(query): Query<ListQuery>,
) -> ApiResult<Json<UserRefPage>> {
    page(&state, &id, &query, Direction::Following).await
}

/// Who follows a user, by id ascending.
#[utoipa::path(
    get, path = "/v1/users/{id}/followers", tag = "graph",
    params(("id" = String, Path, description = "User id"), ListQuery),
    responses(
        (status = 200, description = "A page of followers", body = UserRefPage),
        (status = 404, description = "Unknown user", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "Bad limit or cursor", body = Problem, content_type = "application/problem+json"),
    )
)]
pub async fn list_followers(
    State(state): State<AppState>,
    Path(id): Path<String>,
    Query(query): Query<ListQuery>,
) -> ApiResult<Json<UserRefPage>> {
    page(&state, &id, &query, Direction::Followers).await
}
