//! Posts: `/v1/users/{id}/posts` and `/v1/posts/{post_id}`.

use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use super::auth::{Caller, Owner, Viewer};
use super::error::{ApiError, ApiResult, Json, Problem, Query};
use super::reposts::{ListedBody, RepostBody};
use super::{AppState, known_post_id, known_user_id, parse_before, parse_limit};
use crate::domain::{Post, format_time_ms, validate_post_text};
use crate::service::Listed;

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreatePost {
    /// 1–500 characters, not all whitespace.
    #[schema(
        example = "hello, world",
        min_length = 1,
        max_length = 500,
        pattern = "[^\\t\\n\\u000b\\f\\r \\u0085\\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000]"
    )]
    pub text: String,
    /// The post this one answers: a 24-hex post id. Unknown: 404; malformed: 422.
    #[schema(example = "6740a1b2000c000000000001", pattern = "^[0-9a-f]{24}$")]
    #[serde(default)]
    pub in_reply_to: Option<String>,
}

/// The post a reply answers, and its author, as named when the reply was created; it
/// stays when that post is deleted.
#[derive(Debug, Serialize, ToSchema)]
pub struct ReplyToBody {
    #[schema(example = "6740a1b2000c000000000001")]
    pub post: String,
    #[schema(example = "bob")]
    pub author: String,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct PostBody {
    /// A 24-hex ObjectId; ids increase in creation order.
    #[schema(example = "6740a1b2000c000000000001")]
    pub id: String,
    #[schema(example = "alice")]
    pub author: String,
    pub text: String,
    #[schema(example = "2026-11-22T14:00:00.012Z")]
    pub created_at: String,
    /// Present on replies only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reply_to: Option<ReplyToBody>,
    /// How many existing posts answer this one.
    pub replies_count: u64,
    /// How many standing reposts of this one exist.
    pub reposts_count: u64,
}

impl From<Post> for PostBody {
    fn from(post: Post) -> Self {
        PostBody {
            id: post.id.to_string(),
            created_at: format_time_ms(post.created_at_ms()),
            author: post.author,
            text: post.text,
            reply_to: post.reply_to.map(|r| ReplyToBody {
                post: r.post.to_string(),
                author: r.author,
            }),
            replies_count: post.replies_count,
            reposts_count: post.reposts_count,
        }
    }
}

#[derive(Debug, Serialize, ToSchema)]
pub struct PostPage {
    /// The user's posts and reposts, newest first by id; a repost is marked by
    /// `reposted_by` and carries the original as `post`.
    pub items: Vec<ListedBody>,
    /// Pass as `before` for the next page; null when nothing older exists.
    pub next_cursor: Option<String>,
}

/// `limit` and `before`, shared by every newest-first listing.
#[derive(Debug, Deserialize, IntoParams)]
pub struct PageQuery {
    /// 1–100, default 20.
    #[param(value_type = Option<u32>, minimum = 1, maximum = 100)]
    pub limit: Option<String>,
    /// Exclusive: only posts older than this post id.
    #[param(value_type = Option<String>, pattern = "^[0-9a-f]{24}$")]
    pub before: Option<String>,
}

/// Publish a post. It is in its author's timeline when this answers, and in every
/// follower's when the author has at most `feed.inline_fanout_max` followers (larger
/// audiences: once the timelines worker has caught up; `hybrid` celebrities: at once,
/// merged at read time).
#[utoipa::path(
    post, path = "/v1/users/{id}/posts", tag = "posts",
    params(
        ("id" = String, Path, description = "Author"),
        ("Idempotency-Key" = Option<String>, Header, description = "1–256 bytes. The same author and key within an hour answer the first post (200) and create nothing, whatever the body"),
    ),
    request_body = CreatePost,
    security(("bearer" = [])),
    responses(
        (status = 201, description = "Created", body = PostBody),
        (status = 200, description = "The post created earlier under the same `Idempotency-Key`", body = PostBody),
        (status = 404, description = "Unknown user, `in_reply_to` names no existing post, or the post of this `Idempotency-Key` was deleted", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "Invalid text, a malformed `in_reply_to`, or an `Idempotency-Key` that is empty, over 256 bytes or not visible ASCII", body = Problem, content_type = "application/problem+json"),
    )
)]
pub async fn create_post(
    State(state): State<AppState>,
    Owner(id): Owner,
    headers: HeaderMap,
    Json(body): Json<CreatePost>,
) -> ApiResult<(StatusCode, Json<PostBody>)> {
    known_user_id(&id)?;
    validate_post_text(&body.text).map_err(ApiError::invalid)?;
    let in_reply_to = match body.in_reply_to.as_deref() {
        Some(raw) => Some(raw.parse().map_err(|_| {
            ApiError::invalid(format!("in_reply_to must be a 24-hex post id, got {raw:?}"))
        })?),
        None => None,
    };
    if let Some(key) = headers.get("idempotency-key") {
        let key = key
            .to_str()
            .map_err(|_| ApiError::invalid("Idempotency-Key must be visible ASCII"))?;
        let keyed = state
            .social
            .post_once(&id, &body.text, in_reply_to, key)
            .await?;
        let status = match keyed.created {
            true => StatusCode::CREATED,
            false => StatusCode::OK,
        };
        return Ok((status, Json(keyed.post.into())));
    }
    let post = state
        .social
        .post_reply(&id, &body.text, in_reply_to)
        .await?;
    Ok((StatusCode::CREATED, Json(post.into())))
}

/// Get a post.
#[utoipa::path(
    get, path = "/v1/posts/{post_id}", tag = "posts",
    params(("post_id" = String, Path, description = "Post id")),
    responses(
        (status = 200, description = "The post", body = PostBody),
        (status = 401, description = "Invalid credentials (they are optional)", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "Unknown or deleted post, or one whose author blocks the caller", body = Problem, content_type = "application/problem+json"),
    )
)]
pub async fn get_post(
    State(state): State<AppState>,
    Viewer(viewer): Viewer,
    Path(post_id): Path<String>,
) -> ApiResult<Json<PostBody>> {
    let id = known_post_id(&post_id)?;
    Ok(Json(
        state
            .social
            .get_post_as(id, viewer.as_deref())
            .await?
            .into(),
    ))
}

/// Delete a post everywhere; only its author may.
#[utoipa::path(
    delete, path = "/v1/posts/{post_id}", tag = "posts",
    params(("post_id" = String, Path, description = "Post id")),
    security(("bearer" = [])),
    responses(
        (status = 204, description = "Deleted"),
        (status = 404, description = "Unknown or already deleted post", body = Problem, content_type = "application/problem+json"),
    )
)]
pub async fn delete_post(
    State(state): State<AppState>,
    Caller(caller): Caller,
    Path(post_id): Path<String>,
) -> ApiResult<StatusCode> {
    let id = known_post_id(&post_id)?;
    match state.social.delete_post_as(id, caller.as_deref()).await? {
        Some(_) => Ok(StatusCode::NO_CONTENT),
        None => Err(ApiError::not_found(format!("post {post_id} not found"))),
    }
}

/// A user's own posts and reposts, newest first.
#[utoipa::path(
    get, path = "/v1/users/{id}/posts", tag = "posts",
    params(("id" = String, Path, description = "Author"), PageQuery),
    responses(
        (status = 200, description = "A page of posts and reposts; empty when the author blocks the caller", body = PostPage),
        (status = 401, description = "Invalid credentials (they are optional)", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "Unknown user", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "Bad limit or before", body = Problem, content_type = "application/problem+json"),
    )
)]
pub async fn list_posts(
    State(state): State<AppState>,
    Viewer(viewer): Viewer,
    Path(id): Path<String>,
    Query(query): Query<PageQuery>,
) -> ApiResult<Json<PostPage>> {
    known_user_id(&id)?;
    let limit = parse_limit(query.limit.as_deref())?;
    let before = parse_before(query.before.as_deref())?;
    let page = state
        .social
        .post_list(&id, viewer.as_deref(), before, limit)
        .await?;
    Ok(Json(PostPage {
        items: page
            .items
            .into_iter()
            .map(|item| match item {
                Listed::Post(post) => ListedBody::Post(post.into()),
                Listed::Repost(repost, original) => {
                    ListedBody::Repost(RepostBody::new(repost, original))
                }
            })
            .collect(),
        next_cursor: page.next.map(|id| id.to_string()),
    }))
}
