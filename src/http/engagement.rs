//! Who liked and who reposted a post: `/v1/posts/{post_id}/likes` and `/reposts`.

use axum::extract::{Path, State};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use super::auth::Viewer;
use super::error::{ApiError, ApiResult, Json, Problem, Query};
use super::{AppState, known_post_id, parse_before, parse_limit};
use crate::domain::format_time_ms;
use crate::service::{liker_cursor, parse_liker_cursor};

#[derive(Debug, Deserialize, IntoParams)]
pub struct LikersQuery {
    /// 1–100, default 20.
    #[param(value_type = Option<u32>, minimum = 1, maximum = 100)]
    pub limit: Option<String>,
    /// The `next_cursor` of the previous page.
    pub cursor: Option<String>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct LikerBody {
    #[schema(example = "bob")]
    pub user: String,
    #[schema(example = "2026-11-22T14:05:00.000Z")]
    pub liked_at: String,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct LikerPage {
    pub items: Vec<LikerBody>,
    /// Null on the last page.
    pub next_cursor: Option<String>,
}

#[derive(Debug, Deserialize, IntoParams)]
pub struct RepostersQuery {
    /// 1–100, default 20.
    #[param(value_type = Option<u32>, minimum = 1, maximum = 100)]
    pub limit: Option<String>,
    /// Exclusive: only reposts older than this repost id (the previous page's
    /// `next_cursor`).
    #[param(value_type = Option<String>, pattern = "^[0-9a-f]{24}$")]
    pub before: Option<String>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct ReposterBody {
    /// The repost's id.
    #[schema(example = "6740a1b2000c000000000009")]
    pub id: String,
    #[schema(example = "carol")]
    pub reposted_by: String,
    #[schema(example = "2026-11-22T14:05:00.000Z")]
    pub created_at: String,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct ReposterPage {
    pub items: Vec<ReposterBody>,
    /// Pass as `before` for the next page; null on the last page.
    pub next_cursor: Option<String>,
}

/// Who likes a post, newest like first. Users in a block with the caller (either way)
/// are left out, so a page may be shorter than `limit` though more follow.
#[utoipa::path(
    get, path = "/v1/posts/{post_id}/likes", tag = "posts",
    params(("post_id" = String, Path, description = "Post id"), LikersQuery),
    responses(
        (status = 200, description = "A page of likers", body = LikerPage),
        (status = 401, description = "Invalid credentials (they are optional)", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "Unknown or deleted post, or one whose author blocks the caller", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "Bad limit or cursor", body = Problem, content_type = "application/problem+json"),
    )
)]
pub async fn list_likers(
    State(state): State<AppState>,
    Viewer(viewer): Viewer,
    Path(post_id): Path<String>,
    Query(query): Query<LikersQuery>,
) -> ApiResult<Json<LikerPage>> {
    let post = known_post_id(&post_id)?;
    let limit = parse_limit(query.limit.as_deref())?;
    let before =
        match query.cursor.as_deref() {
            None | Some("") => None,
            Some(raw) => Some(parse_liker_cursor(raw).ok_or_else(|| {
                ApiError::invalid(format!("cursor {raw:?} is not a valid cursor"))
            })?),
        };
    let page = state
        .social
        .likers(post, viewer.as_deref(), before, limit)
        .await?;
    Ok(Json(LikerPage {
        next_cursor: page.next.as_ref().map(liker_cursor),
        items: page
            .items
            .into_iter()
            .map(|l| LikerBody {
                liked_at: format_time_ms(l.at_ms),
                user: l.user,
            })
            .collect(),
    }))
}

/// Who reposted a post, newest repost first. Users in a block with the caller (either
/// way) are left out, so a page may be shorter than `limit` though more follow.
#[utoipa::path(
    get, path = "/v1/posts/{post_id}/reposts", tag = "posts",
    params(("post_id" = String, Path, description = "Post id"), RepostersQuery),
    responses(
        (status = 200, description = "A page of reposts", body = ReposterPage),
        (status = 401, description = "Invalid credentials (they are optional)", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "Unknown or deleted post, or one whose author blocks the caller", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "Bad limit or cursor", body = Problem, content_type = "application/problem+json"),
    )
)]
pub async fn list_reposters(
    State(state): State<AppState>,
    Viewer(viewer): Viewer,
    Path(post_id): Path<String>,
    Query(query): Query<RepostersQuery>,
) -> ApiResult<Json<ReposterPage>> {
    let post = known_post_id(&post_id)?;
    let limit = parse_limit(query.limit.as_deref())?;
    let before = parse_before(query.before.as_deref())?;
    let page = state
        .social
        .reposters(post, viewer.as_deref(), before, limit)
        .await?;
    Ok(Json(ReposterPage {
        next_cursor: page.next.map(|id| id.to_string()),
        items: page
            .items
            .into_iter()
            .map(|r| ReposterBody {
                id: r.id.to_string(),
                created_at: format_time_ms(r.created_at_ms()),
                reposted_by: r.user,
            })
            .collect(),
    }))
}
