//! Listings of posts across authors: `/v1/timelines/public`, `/v1/tags/{tag}/posts`.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use serde::Serialize;
use utoipa::ToSchema;

use super::auth::Viewer;
use super::error::{ApiError, ApiResult, Json, Problem, Query};
use super::posts::PostBody;
use super::timeline::TimelineQuery;
use super::{AppState, parse_before, parse_limit};
use crate::domain::{Post, PostId, is_tag};
use crate::service::Page;
use crate::store::PostRange;

#[derive(Debug, Serialize, ToSchema)]
pub struct PostListBody {
    /// Newest first by id.
    pub items: Vec<PostBody>,
    /// The next page in this page's direction: pass as `before` (as `after` for a page
    /// read with `after`); null when nothing more lies that way.
    pub next_cursor: Option<String>,
}

impl From<Page<Post, PostId>> for PostListBody {
    fn from(page: Page<Post, PostId>) -> Self {
        PostListBody {
            items: page.items.into_iter().map(PostBody::from).collect(),
            next_cursor: page.next.map(|id| id.to_string()),
        }
    }
}

/// The range `before` or `after` asks for; both at once is a 400.
pub(crate) fn parse_range(query: &TimelineQuery) -> ApiResult<PostRange> {
    let before = parse_before(query.before.as_deref())?;
    let Some(raw) = query.after.as_deref() else {
        return Ok(PostRange::Older(before));
    };
    let after: PostId = raw
        .parse()
        .map_err(|_| ApiError::invalid(format!("after must be a 24-hex post id, got {raw:?}")))?;
    match before {
        Some(_) => Err(ApiError::new(
            StatusCode::BAD_REQUEST,
            "bad-request",
            "before and after cannot be given together",
        )),
        None => Ok(PostRange::Newer(after)),
    }
}

/// The public timeline: every post, replies included (not reposts), newest first.
/// With credentials, the posts of authors the caller blocks, is blocked by, or mutes
/// are left out. `after` reads the page just newer than an id (still newest first).
#[utoipa::path(
    get, path = "/v1/timelines/public", tag = "timeline",
    params(TimelineQuery),
    security((), ("bearer" = [])),
    responses(
        (status = 200, description = "A page of posts", body = PostListBody),
        (status = 400, description = "Both before and after", body = Problem, content_type = "application/problem+json"),
        (status = 401, description = "Invalid credentials (they are optional)", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "Bad limit, before or after", body = Problem, content_type = "application/problem+json"),
    )
)]
pub async fn public_timeline(
    State(state): State<AppState>,
    Viewer(viewer): Viewer,
    Query(query): Query<TimelineQuery>,
) -> ApiResult<Json<PostListBody>> {
    let limit = parse_limit(query.limit.as_deref())?;
    let range = parse_range(&query)?;
    let page = state
        .social
        .public_posts(viewer.as_deref(), range, limit)
        .await?;
    Ok(Json(page.into()))
}

/// The posts carrying a hashtag (as the trends count them: lower case, without `#`),
/// replies included, newest first; hidden authors left out as on the public timeline.
#[utoipa::path(
    get, path = "/v1/tags/{tag}/posts", tag = "trends",
    params(
        ("tag" = String, Path, description = "Without `#`: 1-64 lower-case letters, digits or `_`"),
        TimelineQuery,
    ),
    security((), ("bearer" = [])),
    responses(
        (status = 200, description = "A page of posts", body = PostListBody),
        (status = 400, description = "Both before and after", body = Problem, content_type = "application/problem+json"),
        (status = 401, description = "Invalid credentials (they are optional)", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "Not a tag (upper case, punctuation, over 64 characters)", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "Bad limit, before or after", body = Problem, content_type = "application/problem+json"),
    )
)]
pub async fn tag_posts(
    State(state): State<AppState>,
    Viewer(viewer): Viewer,
    Path(tag): Path<String>,
    Query(query): Query<TimelineQuery>,
) -> ApiResult<Json<PostListBody>> {
    if !is_tag(&tag) {
        return Err(ApiError::not_found(format!(
            "{tag:?} is not a tag: tags are 1-64 lower-case letters, digits or _"
        )));
    }
    let limit = parse_limit(query.limit.as_deref())?;
    let range = parse_range(&query)?;
    let page = state
        .social
        .tagged_posts(viewer.as_deref(), &tag, range, limit)
        .await?;
    Ok(Json(page.into()))
}
