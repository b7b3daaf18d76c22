//! `/v1/users/{id}/timeline`: the home timeline.

use axum::extract::State;
use axum::http::StatusCode;
use axum::http::header;
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use super::auth::Owner;
use super::error::ApiError;
use super::error::{ApiResult, Problem, Query};
use super::{AppState, known_user_id, parse_before, parse_limit};
use crate::domain::{PostId, Rfc3339Ms};
use crate::feed::TimelineItem;
use crate::store::StoreError;

// Serialized straight from the item: the id and the time are written into the body
// as they are formatted, with no `String` per field.
/// A post in a home timeline.
#[derive(Debug, Serialize, ToSchema)]
pub struct TimelinePostBody {
    #[schema(value_type = String, example = "6740a1b2000c000000000001")]
    pub id: PostId,
    #[schema(example = "bob")]
    pub author: String,
    #[schema(example = "Bob")]
    pub author_display_name: String,
    pub text: String,
    #[schema(value_type = String, example = "2026-11-22T14:00:00.012Z")]
    pub created_at: Rfc3339Ms,
    /// Replies only: the author of the post this one answers.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reply_to_author: Option<String>,
}

/// A repost in a home timeline: who passed which post on, and when. Told from a post
/// by `reposted_by`.
#[derive(Debug, Serialize, ToSchema)]
pub struct TimelineRepostBody {
    /// The repost's own id (the same id space and order as posts): the item's place
    /// in the timeline and the cursor a page ends at.
    #[schema(value_type = String, example = "6740a1b2000c000000000009")]
    pub id: PostId,
    /// The reposter.
    #[schema(example = "carol")]
    pub reposted_by: String,
    #[schema(example = "Carol")]
    pub reposted_by_display_name: String,
    /// When the repost was made.
    #[schema(value_type = String, example = "2026-11-22T14:05:00.000Z")]
    pub created_at: Rfc3339Ms,
    /// The original post.
    pub post: TimelinePostBody,
}

/// An item of a home timeline or of its live stream: a post, or a repost (marked by
/// `reposted_by`).
#[derive(Debug, Serialize, ToSchema)]
#[serde(untagged)]
pub enum TimelineItemBody {
    Post(TimelinePostBody),
    Repost(TimelineRepostBody),
}

impl From<TimelineItem> for TimelineItemBody {
    fn from(item: TimelineItem) -> Self {
        let Some(original) = item.repost_of else {
            return TimelineItemBody::Post(TimelinePostBody {
                id: item.id,
                created_at: Rfc3339Ms(item.id.timestamp_ms()),
                author: item.author,
                author_display_name: item.author_display_name,
                text: item.text,
                reply_to_author: item.reply_to_author,
            });
        };
        TimelineItemBody::Repost(TimelineRepostBody {
            id: item.id,
            created_at: Rfc3339Ms(item.id.timestamp_ms()),
            reposted_by: item.author,
            reposted_by_display_name: item.author_display_name,
            post: TimelinePostBody {
                id: original.id,
                created_at: Rfc3339Ms(original.id.timestamp_ms()),
                author: original.author,
                author_display_name: original.author_display_name,
                text: item.text,
                reply_to_author: original.reply_to_author,
            },
        })
    }
}

#[derive(Debug, Serialize, ToSchema)]
pub struct TimelinePageBody {
    pub items: Vec<TimelineItemBody>,
    /// Pass as `before` for the next page; null when nothing older exists. On an
    /// `after` page: the oldest item's id (the `after` given when the page is empty).
    pub next_cursor: Option<String>,
    /// `after` pages only: pass as `after` for the next newer page; null when this page
    /// holds the newest items.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prev_cursor: Option<Option<String>>,
}

/// A page of the home timeline: older than `before`, or newer than `after`.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct TimelineQuery {
    /// 1–100, default 20.
    #[param(value_type = Option<u32>, minimum = 1, maximum = 100)]
    pub limit: Option<String>,
    /// Exclusive: the newest items older than this id.
    #[param(value_type = Option<String>, pattern = "^[0-9a-f]{24}$")]
    pub before: Option<String>,
    /// Exclusive: the items immediately newer than this id (the `limit` oldest above
    /// it), still served newest first. Not with `before`.
    #[param(value_type = Option<String>, pattern = "^[0-9a-f]{24}$")]
    pub after: Option<String>,
}

/// The user's home timeline: their posts and reposts and those of everyone they follow,
/// newest first; each post at most once (see docs/timelines.md, "Reposts"). With
/// `after`, the page just above that id: what a walk with `before` serves there, in the
/// same order.
#[utoipa::path(
    get, path = "/v1/users/{id}/timeline", tag = "timeline",
    params(("id" = String, Path, description = "Reader"), TimelineQuery),
    security(("bearer" = [])),
    responses(
        (status = 200, description = "A page of the timeline", body = TimelinePageBody),
        (status = 400, description = "Both before and after", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "Unknown user", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "Bad limit, before or after", body = Problem, content_type = "application/problem+json"),
    )
)]
pub async fn timeline(
    State(state): State<AppState>,
    Owner(id): Owner,
    Query(query): Query<TimelineQuery>,
) -> ApiResult<Response> {
    known_user_id(&id)?;
    let limit = parse_limit(query.limit.as_deref())?;
    let before = parse_before(query.before.as_deref())?;
    let after = parse_after(query.after.as_deref())?;
    if let Some(after) = after {
        if before.is_some() {
            return Err(ApiError::new(
                StatusCode::BAD_REQUEST,
                "bad-request",
                "before and after cannot be given together",
            ));
        }
        let page = state.social.timeline_after(&id, after, limit).await?;
        let newest = page.items.first().map(|i| i.id.to_string());
        let oldest = page.items.last().map_or(after, |i| i.id);
        let body = TimelinePageBody {
            prev_cursor: Some(newest.filter(|_| page.more_newer)),
            next_cursor: Some(oldest.to_string()),
            items: page.items.into_iter().map(TimelineItemBody::from).collect(),
        };
        let body = serde_json::to_vec(&body).map_err(|e| StoreError::Backend(e.into()))?;
        return Ok(([(header::CONTENT_TYPE, "application/json")], body).into_response());
    }
    let body = state
        .social
        .rendered_timeline(&id, before, limit, |page| {
            let body = TimelinePageBody {
                items: page.items.into_iter().map(TimelineItemBody::from).collect(),
                next_cursor: page.next_cursor.map(|id| id.to_string()),
                prev_cursor: None,
            };
            Ok(serde_json::to_vec(&body)?.into())
        })
        .await?;
    Ok(([(header::CONTENT_TYPE, "application/json")], body).into_response())
}

fn parse_after(raw: Option<&str>) -> ApiResult<Option<PostId>> {
    match raw {
        None => Ok(None),
        Some(raw) => raw
            .parse()
            .map(Some)
            .map_err(|_| ApiError::invalid(format!("after must be a 24-hex post id, got {raw:?}"))),
    }
}
