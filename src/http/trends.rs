//! `/v1/tags/{tag}` and `/v1/trends`: hashtag counts, kept incrementally.

use axum::extract::{Path, State};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use super::AppState;
use super::error::{ApiError, ApiResult, Json, Problem, Query};
use crate::domain::{format_time_ms, is_tag};
use crate::service::Window;
use crate::store::trends::HOUR_MS;

#[derive(Debug, Serialize, ToSchema)]
pub struct HourBody {
    /// The hour's start.
    #[schema(example = "2026-11-22T14:00:00.000Z")]
    pub hour: String,
    pub posts: u64,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct TagBody {
    #[schema(example = "rust")]
    pub tag: String,
    /// Live posts carrying the tag.
    pub total: u64,
    /// Posts created per hour over the last 7 days, oldest first; hours without posts
    /// are left out.
    pub hours: Vec<HourBody>,
}

/// A hashtag's counts. Tags are lower case; a tag never seen has zero counts.
#[utoipa::path(
    get, path = "/v1/tags/{tag}", tag = "trends",
    params(("tag" = String, Path, description = "Without `#`: 1-64 lower-case letters, digits or `_`")),
    responses(
        (status = 200, description = "The tag's counts", body = TagBody),
        (status = 404, description = "Not a tag (upper case, punctuation, over 64 characters)", body = Problem, content_type = "application/problem+json"),
    )
)]
pub async fn tag(
    State(state): State<AppState>,
    Path(tag): Path<String>,
) -> ApiResult<Json<TagBody>> {
    if !is_tag(&tag) {
        return Err(ApiError::not_found(format!(
            "{tag:?} is not a tag: tags are 1-64 lower-case letters, digits or _"
        )));
    }
    let counts = state.events.tag(&tag).await?;
    Ok(Json(TagBody {
        tag: counts.tag,
        total: counts.total,
        hours: counts
            .hours
            .into_iter()
            .map(|(hour, posts)| HourBody {
                hour: format_time_ms(hour * HOUR_MS),
                posts,
            })
            .collect(),
    }))
}

#[derive(Debug, Deserialize, IntoParams)]
pub struct TrendsQuery {
    /// `1h` or `24h` (default); counted in whole hours, the hour the window starts in
    /// included.
    #[param(value_type = Option<String>, pattern = "^(1h|24h)$")]
    pub window: Option<String>,
    /// 1–100, default 10.
    #[param(value_type = Option<u32>, minimum = 1, maximum = 100)]
    pub limit: Option<String>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct TrendBody {
    pub tag: String,
    /// Posts created in the window that carry the tag and still exist.
    pub posts: u64,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct TrendsBody {
    #[schema(example = "24h")]
    pub window: String,
    /// Most posts first, ties by tag ascending.
    pub tags: Vec<TrendBody>,
}

/// The top hashtags by posts in the window.
#[utoipa::path(
    get, path = "/v1/trends", tag = "trends",
    params(TrendsQuery),
    responses(
        (status = 200, description = "The top tags", body = TrendsBody),
        (status = 422, description = "Bad window or limit", body = Problem, content_type = "application/problem+json"),
    )
)]
pub async fn trends(
    State(state): State<AppState>,
    Query(query): Query<TrendsQuery>,
) -> ApiResult<Json<TrendsBody>> {
    let name = query.window.as_deref().unwrap_or("24h");
    let window = Window::parse(name)
        .ok_or_else(|| ApiError::invalid(format!("window must be 1h or 24h, got {name:?}")))?;
    let limit = match query.limit.as_deref() {
        None => 10,
        Some(raw) => match raw.parse::<usize>() {
            Ok(limit) if (1..=100).contains(&limit) => limit,
            _ => {
                return Err(ApiError::invalid(format!(
                    "limit must be an integer from 1 to 100, got {raw:?}"
                )));
            }
        },
    };
    let tags = state.events.trends(window, limit).await?;
    Ok(Json(TrendsBody {
        window: name.to_owned(),
        tags: tags
            .into_iter()
            .map(|(tag, posts)| TrendBody { tag, posts })
            .collect(),
    }))
}
