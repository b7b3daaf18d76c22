//! `GET /api/v1/accounts/{id}/statuses`: the account's posts and reposts as statuses,
//! newest first, paged as the home timeline (`max_id`, `since_id` a cut of the newest
//! page, `min_id` the page just above it) with a `Link` header: next, then prev.

use axum::extract::{Path, State};
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde_json::Value;
use utoipa::IntoParams;

use super::Origin;
use super::accounts::account_id;
use super::auth::{MaybeScoped, ReadStatuses};
use super::entities::{Status, status::statuses as render};
use super::error::{MastoError, MastoErrorBody};
use super::form::truthy;
use super::link::{PageParams, link_header, linked};
use crate::http::AppState;
use crate::http::error::{Json, Query};
use crate::service::StatusFilter;

#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct StatusFilters {
    /// Leave out replies to others (replies in the account's own threads stay).
    #[param(value_type = Option<bool>)]
    pub exclude_replies: Option<Value>,
    /// Leave out reposts.
    #[param(value_type = Option<bool>)]
    pub exclude_reblogs: Option<Value>,
    /// `true`: the pinned statuses, always none here.
    #[param(value_type = Option<bool>)]
    pub pinned: Option<Value>,
    /// Accepted and ignored: no media.
    #[param(value_type = Option<bool>)]
    pub only_media: Option<Value>,
    /// Accepted and ignored: no hashtag filter here.
    #[param(value_type = Option<String>)]
    pub tagged: Option<Value>,
}

/// The account's statuses, newest first (below `max_id`, or with `min_id` the page just
/// above it, still newest first); empty when the account blocks the caller. Readable
/// without a token, as on Mastodon.
#[utoipa::path(get, path = "/api/v1/accounts/{id}/statuses", tag = "mastodon",
    security((), ("bearer" = [])),
    params(("id" = String, Path, description = "The user id"), PageParams, StatusFilters),
    responses(
        (status = 200, description = "A page of statuses; `Link` has the next page first, then the previous",
            body = Vec<Status>, headers(("Link" = String, description = "`<...max_id=X>; rel=\"next\", <...min_id=Y>; rel=\"prev\"`"))),
        (status = 401, description = "An invalid token (tokens are optional)", body = MastoErrorBody),
        (status = 403, description = "The token lacks read:statuses", body = MastoErrorBody),
        (status = 404, description = "No such account", body = MastoErrorBody),
        (status = 422, description = "A bad limit or id, or min_id with max_id", body = MastoErrorBody),
    ))]
pub async fn statuses(
    State(state): State<AppState>,
    headers: HeaderMap,
    reader: MaybeScoped<ReadStatuses>,
    Path(id): Path<String>,
    Query(params): Query<PageParams>,
    Query(filters): Query<StatusFilters>,
) -> Result<Response, MastoError> {
    let viewer = reader.viewer();
    let id = account_id(&id)?;
    let (range, limit) = params.home_range()?;
    let origin = Origin::of(&state.mastodon, &headers);
    if truthy(&filters.pinned) {
        // Nothing is pinned; the account must still exist.
        state.social.user(id).await?;
        return Ok(Json(Vec::<Status>::new()).into_response());
    }
    let filter = StatusFilter {
        exclude_replies: truthy(&filters.exclude_replies),
        exclude_reblogs: truthy(&filters.exclude_reblogs),
    };
    let page = state
        .social
        .account_statuses(id, viewer, range, limit, filter)
        .await?;
    let mut extra = Vec::new();
    for (name, on) in [
        ("exclude_replies", filter.exclude_replies),
        ("exclude_reblogs", filter.exclude_reblogs),
    ] {
        if on {
            extra.push((name, "true".to_owned()));
        }
    }
    let link = link_header(
        &origin,
        &format!("/api/v1/accounts/{id}/statuses"),
        &extra,
        limit,
        page.next,
        page.items.first().map(|s| s.id()),
    );
    Ok(linked(Json(render(&origin, &page.items)), link))
}
