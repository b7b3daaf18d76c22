//! `GET /api/v1/statuses/:id/favourited_by` and `/reblogged_by`: who liked and who
//! reposted a status, newest first, as accounts, paged by the opaque cursors the
//! `Link` header names (a like's `<ms>.<user>`, a repost's id) as `max_id`, `since_id`
//! or `min_id`. Readable
//! without a token; with one, it must hold `read:accounts`, and the accounts in a block
//! with its user are left out.

use axum::extract::{Path, State};
use axum::http::HeaderMap;
use axum::response::Response;

use super::Origin;
use super::accounts::account_page;
use super::auth::{MaybeScoped, ReadAccounts};
use super::entities::Account;
use super::error::{MastoError, MastoErrorBody};
use super::ids;
use super::paging::{AccountPaging, cursor_link};
use super::statuses::status_id;
use crate::http::AppState;
use crate::http::error::Query;
use crate::service::{liker_cursor, parse_liker_cursor};

/// The accounts that favourited the status, newest like first.
#[utoipa::path(get, path = "/api/v1/statuses/{id}/favourited_by", tag = "mastodon",
    params(("id" = String, Path, description = "Status id"), AccountPaging),
    security((), ("bearer" = [])),
    responses(
        (status = 200, description = "A page of accounts", body = Vec<Account>,
            headers(("Link" = String, description = "`<...max_id=X>; rel=\"next\"` when more may follow, then `<...min_id=Y>; rel=\"prev\"`"))),
        (status = 401, description = "An invalid token (tokens are optional)", body = MastoErrorBody),
        (status = 403, description = "The token lacks read:accounts", body = MastoErrorBody),
        (status = 404, description = "Unknown or deleted, or its author blocks the caller", body = MastoErrorBody),
        (status = 422, description = "A bad limit or cursor, or min_id with max_id", body = MastoErrorBody),
    ))]
pub async fn favourited_by(
    State(state): State<AppState>,
    headers: HeaderMap,
    reader: MaybeScoped<ReadAccounts>,
    Path(id): Path<String>,
    Query(paging): Query<AccountPaging>,
) -> Result<Response, MastoError> {
    let id = status_id(&id)?;
    let (range, limit) = paging.parse(parse_liker_cursor)?;
    let page = state
        .social
        .liker_accounts(id, reader.viewer(), range, limit)
        .await?;
    let origin = Origin::of(&state.mastodon, &headers);
    let path = format!("/api/v1/statuses/{}/favourited_by", ids::render(id));
    let next = page.next.as_ref().map(liker_cursor);
    let prev = page.prev.as_ref().map(liker_cursor);
    let link = cursor_link(&origin, &path, limit, next.as_deref(), prev.as_deref());
    let accounts = page
        .items
        .iter()
        .map(|u| Account::new(&origin, u))
        .collect();
    Ok(account_page(accounts, link))
}

/// The accounts that reblogged the status, newest repost first.
#[utoipa::path(get, path = "/api/v1/statuses/{id}/reblogged_by", tag = "mastodon",
    params(("id" = String, Path, description = "Status id"), AccountPaging),
    security((), ("bearer" = [])),
    responses(
        (status = 200, description = "A page of accounts", body = Vec<Account>,
            headers(("Link" = String, description = "`<...max_id=X>; rel=\"next\"` when more may follow, then `<...min_id=Y>; rel=\"prev\"`"))),
        (status = 401, description = "An invalid token (tokens are optional)", body = MastoErrorBody),
        (status = 403, description = "The token lacks read:accounts", body = MastoErrorBody),
        (status = 404, description = "Unknown or deleted, or its author blocks the caller", body = MastoErrorBody),
        (status = 422, description = "A bad limit or cursor, or min_id with max_id", body = MastoErrorBody),
    ))]
pub async fn reblogged_by(
    State(state): State<AppState>,
    headers: HeaderMap,
    reader: MaybeScoped<ReadAccounts>,
    Path(id): Path<String>,
    Query(paging): Query<AccountPaging>,
) -> Result<Response, MastoError> {
    let id = status_id(&id)?;
    let (range, limit) = paging.parse(ids::parse_cursor)?;
    let page = state
        .social
        .reposter_accounts(id, reader.viewer(), range, limit)
        .await?;
    let origin = Origin::of(&state.mastodon, &headers);
    let path = format!("/api/v1/statuses/{}/reblogged_by", ids::render(id));
    let next = page.next.map(ids::render);
    let prev = page.prev.map(ids::render);
    let link = cursor_link(&origin, &path, limit, next.as_deref(), prev.as_deref());
    let accounts = page
        .items
        .iter()
        .map(|u| Account::new(&origin, u))
        .collect();
    Ok(account_page(accounts, link))
}
