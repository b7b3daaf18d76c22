//! Reposts: `/v1/users/{id}/reposts/{post_id}`.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use serde::Serialize;
use utoipa::ToSchema;

use super::auth::Owner;
use super::error::{ApiResult, Json, Problem};
use super::posts::PostBody;
use super::{AppState, known_post_id, known_user_id};
use crate::domain::{Post, Repost, format_time_ms};

/// A repost: who passed which post on, and when.
#[derive(Debug, Serialize, ToSchema)]
pub struct RepostBody {
    /// The repost's own id, minted like a post id when it was made (the same id space
    /// and order as posts).
    #[schema(example = "6740a1b2000c000000000009")]
    pub id: String,
    /// The reposter.
    #[schema(example = "carol")]
    pub reposted_by: String,
    #[schema(example = "2026-11-22T14:05:00.000Z")]
    pub created_at: String,
    /// The original post.
    pub post: PostBody,
}

impl RepostBody {
    pub fn new(repost: Repost, original: Post) -> Self {
        RepostBody {
            id: repost.id.to_string(),
            created_at: format_time_ms(repost.created_at_ms()),
            reposted_by: repost.user,
            post: original.into(),
        }
    }
}

/// An item of a user's post list: a post, or a repost (marked by `reposted_by`).
#[derive(Debug, Serialize, ToSchema)]
#[serde(untagged)]
pub enum ListedBody {
    Post(PostBody),
    Repost(RepostBody),
}

/// Repost a post to one's followers. Idempotent: a repost that stands already is
/// answered as it is (200); a new one is 201. Reposting one's own post is allowed.
#[utoipa::path(
    put, path = "/v1/users/{id}/reposts/{post_id}", tag = "posts",
    params(("id" = String, Path, description = "Reposter"), ("post_id" = String, Path, description = "The post to repost")),
    security(("bearer" = [])),
    responses(
        (status = 201, description = "Reposted", body = RepostBody),
        (status = 200, description = "The repost stood already", body = RepostBody),
        (status = 404, description = "Unknown user, unknown or deleted post, or a post whose author blocks the caller", body = Problem, content_type = "application/problem+json"),
    )
)]
pub async fn repost(
    State(state): State<AppState>,
    Owner(id): Owner,
    Path((_owner, post_id)): Path<(String, String)>,
) -> ApiResult<(StatusCode, Json<RepostBody>)> {
    known_user_id(&id)?;
    let post = known_post_id(&post_id)?;
    let (reposted, original) = state.social.repost(&id, post).await?;
    let status = match reposted.created {
        true => StatusCode::CREATED,
        false => StatusCode::OK,
    };
    Ok((status, Json(RepostBody::new(reposted.repost, original))))
}

/// Undo a repost. Idempotent, like an unlike: 204 whether or not a repost stood.
#[utoipa::path(
    delete, path = "/v1/users/{id}/reposts/{post_id}", tag = "posts",
    params(("id" = String, Path, description = "Reposter"), ("post_id" = String, Path, description = "The reposted post")),
    security(("bearer" = [])),
    responses(
        (status = 204, description = "Not reposted"),
        (status = 404, description = "Unknown user or malformed post id", body = Problem, content_type = "application/problem+json"),
    )
)]
pub async fn unrepost(
    State(state): State<AppState>,
    Owner(id): Owner,
    Path((_owner, post_id)): Path<(String, String)>,
) -> ApiResult<StatusCode> {
    known_user_id(&id)?;
    let post = known_post_id(&post_id)?;
    state.social.unrepost(&id, post).await?;
    Ok(StatusCode::NO_CONTENT)
}
