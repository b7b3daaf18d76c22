//! Threads: `/v1/posts/{post_id}/context`.

use axum::extract::{Path, State};
use serde::Serialize;
use utoipa::ToSchema;

use super::error::{ApiResult, Json, Problem};
use super::posts::{PostBody, ReplyToBody};
use super::{AppState, known_post_id};
use crate::service::Context;

/// A post's thread, bounded: at most 40 ancestors and 200 descendants.
#[derive(Debug, Serialize, ToSchema)]
pub struct ContextBody {
    /// The posts the post answers, root first; the nearest 40 when cut.
    pub ancestors: Vec<PostBody>,
    /// More ancestors exist above the first one given.
    pub ancestors_truncated: bool,
    /// Set when the chain of ancestors reaches a deleted post: the post the first
    /// ancestor given (or the post itself) answers. The chain stops there, since the
    /// deleted post held its own parent's id.
    pub missing_ancestor: Option<ReplyToBody>,
    /// The replies, their replies and so on, in thread order: depth first, each post's
    /// replies oldest first. At most 200, the nearest levels first.
    pub descendants: Vec<PostBody>,
    /// More descendants exist than were given.
    pub descendants_truncated: bool,
}

impl From<Context> for ContextBody {
    fn from(context: Context) -> Self {
        ContextBody {
            ancestors: context.ancestors.into_iter().map(PostBody::from).collect(),
            ancestors_truncated: context.ancestors_truncated,
            missing_ancestor: context.missing_ancestor.map(|r| ReplyToBody {
                post: r.post.to_string(),
                author: r.author,
            }),
            descendants: context
                .descendants
                .into_iter()
                .map(PostBody::from)
                .collect(),
            descendants_truncated: context.descendants_truncated,
        }
    }
}

/// A post's thread: what it answers, root first, and what answers it, in thread order.
#[utoipa::path(
    get, path = "/v1/posts/{post_id}/context", tag = "posts",
    params(("post_id" = String, Path, description = "Post id")),
    responses(
        (status = 200, description = "The thread around the post", body = ContextBody),
        (status = 404, description = "Unknown or deleted post", body = Problem, content_type = "application/problem+json"),
    )
)]
pub async fn context(
    State(state): State<AppState>,
    Path(post_id): Path<String>,
) -> ApiResult<Json<ContextBody>> {
    let id = known_post_id(&post_id)?;
    Ok(Json(state.social.context(id).await?.into()))
}
