//! `GET /api/v1/timelines/home`: the engine's home timeline as statuses, paged with
//! `max_id` and a `Link` header (next first).

use axum::extract::State;
use axum::http::{HeaderMap, header};
use axum::response::{IntoResponse, Response};

use super::Origin;
use super::auth::{ReadStatuses, Scoped};
use super::entities::{Status, status::statuses};
use super::error::{MastoError, MastoErrorBody};
use super::link::{PageParams, link_header};
use crate::http::AppState;
use crate::http::error::{Json, Query};

/// The caller's home timeline: their posts and reposts and those of everyone they
/// follow, newest first, each post at most once. `since_id` and `min_id` are not yet
/// supported (422).
#[utoipa::path(get, path = "/api/v1/timelines/home", tag = "mastodon",
    params(PageParams),
    security(("bearer" = [])),
    responses(
        (status = 200, description = "A page of statuses; `Link` has the next page first, then the previous",
            body = Vec<Status>, headers(("Link" = String, description = "`<...max_id=X>; rel=\"next\", <...min_id=Y>; rel=\"prev\"`"))),
        (status = 401, description = "No valid token", body = MastoErrorBody),
        (status = 403, description = "The token lacks read:statuses", body = MastoErrorBody),
        (status = 422, description = "A bad limit or id, since_id or min_id (not yet supported), or an app's token", body = MastoErrorBody),
    ))]
pub async fn home(
    State(state): State<AppState>,
    headers: HeaderMap,
    auth: Scoped<ReadStatuses>,
    Query(params): Query<PageParams>,
) -> Result<Response, MastoError> {
    let user = auth.user()?;
    let paging = params.paging()?;
    let page = state
        .social
        .home_statuses(user, paging.max_id, paging.limit)
        .await?;
    let origin = Origin::of(&state.mastodon, &headers);
    let link = link_header(
        &origin,
        "/api/v1/timelines/home",
        &[],
        paging.limit,
        page.next,
        page.items.first().map(|s| s.id()),
    );
    let body = Json(statuses(&origin, &page.items));
    Ok(match link {
        Some(link) => ([(header::LINK, link)], body).into_response(),
        None => body.into_response(),
    })
}
