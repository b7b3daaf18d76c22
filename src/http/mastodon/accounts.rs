//! Accounts by id: the profile, `update_credentials`, `lookup`, the follow lists, and
//! follow, unfollow, block, unblock, mute and unmute, each answering the Relationship it
//! leaves (`relationships.rs` has the batched read and the block and mute lists). An
//! account's id is its user id; an id that breaks the id rules names no account (404).
//! The account's statuses are in `account_statuses.rs`.

use axum::extract::{Path, State};
use axum::http::HeaderMap;
use axum::response::Response;
use serde::Deserialize;
use serde_json::Value;
use utoipa::{IntoParams, ToSchema};

use super::Origin;
use super::auth::{Scoped, WriteAccounts, WriteBlocks, WriteFollows, WriteMutes};
use super::entities::{Account, Relationship};
use super::error::{MastoError, MastoErrorBody};
use super::form::{FormOrJson, truthy};
use super::paging::{AccountPaging, cursor_link};
use crate::domain::{validate_display_name, validate_user_id};
use crate::http::AppState;
use crate::http::error::{Json, Query};
use crate::service::{Direction, MuteRequest};

/// A path id that breaks the user id rules names no account.
pub(super) fn account_id(id: &str) -> Result<&str, MastoError> {
    validate_user_id(id).map_err(|_| MastoError::not_found())?;
    Ok(id)
}

/// An account. Public, as on Mastodon.
#[utoipa::path(get, path = "/api/v1/accounts/{id}", tag = "mastodon",
    params(("id" = String, Path, description = "The user id")),
    responses(
        (status = 200, description = "The account", body = Account),
        (status = 404, description = "No such account", body = MastoErrorBody),
    ))]
pub async fn get_account(
    State(state): State<AppState>,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Result<Json<Account>, MastoError> {
    let account = state.social.account(account_id(&id)?).await?;
    Ok(Json(Account::new(
        &Origin::of(&state.mastodon, &headers),
        &account,
    )))
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct LookupQuery {
    /// `alice`, `@alice`, or `alice@` this server's domain. Required (400 without).
    #[param(required = true)]
    pub acct: Option<String>,
}

/// An account by its `acct`: a user id, with or without this server's domain.
#[utoipa::path(get, path = "/api/v1/accounts/lookup", tag = "mastodon",
    params(LookupQuery),
    responses(
        (status = 200, description = "The account", body = Account),
        (status = 400, description = "No acct, or an empty one", body = MastoErrorBody),
        (status = 404, description = "No such account here", body = MastoErrorBody),
    ))]
pub async fn lookup(
    State(state): State<AppState>,
    headers: HeaderMap,
    Query(query): Query<LookupQuery>,
) -> Result<Json<Account>, MastoError> {
    let origin = Origin::of(&state.mastodon, &headers);
    let acct = query
        .acct
        .as_deref()
        .unwrap_or("")
        .trim()
        .trim_start_matches('@');
    if acct.is_empty() {
        return Err(MastoError::new(
            axum::http::StatusCode::BAD_REQUEST,
            "acct is required",
        ));
    }
    let id = match acct.split_once('@') {
        None => acct,
        Some((id, domain)) if domain.eq_ignore_ascii_case(origin.domain()) => id,
        // Another server's account: nothing federates here.
        Some(_) => return Err(MastoError::not_found()),
    };
    let account = state.social.account(account_id(id)?).await?;
    Ok(Json(Account::new(&origin, &account)))
}

/// What `update_credentials` reads. Every other field Mastodon takes (note, avatar,
/// header, fields, locked, bot, source...) is accepted and ignored.
#[derive(Debug, Deserialize, ToSchema)]
pub struct CredentialsForm {
    /// 1–100 characters.
    pub display_name: Option<String>,
}

/// Changes the token's user's display name; answers the account with `source`.
#[utoipa::path(patch, path = "/api/v1/accounts/update_credentials", tag = "mastodon",
    security(("bearer" = [])),
    request_body(content = CredentialsForm, content_type = "multipart/form-data",
        description = "Or the same fields as a form or JSON; other fields are ignored"),
    responses(
        (status = 200, description = "The account, renamed", body = Account),
        (status = 400, description = "A malformed body", body = MastoErrorBody),
        (status = 401, description = "No valid token", body = MastoErrorBody),
        (status = 403, description = "The token lacks write:accounts", body = MastoErrorBody),
        (status = 415, description = "Not a form, multipart form or JSON", body = MastoErrorBody),
        (status = 422, description = "A display name out of bounds, a file part, or an app's own token", body = MastoErrorBody),
    ))]
pub async fn update_credentials(
    State(state): State<AppState>,
    headers: HeaderMap,
    auth: Scoped<WriteAccounts>,
    FormOrJson(form): FormOrJson<CredentialsForm>,
) -> Result<Json<Account>, MastoError> {
    let user = auth.user()?;
    if let Some(name) = &form.display_name {
        validate_display_name(name)
            .map_err(|why| MastoError::unprocessable(format!("Validation failed: {why}")))?;
    }
    let account = state
        .social
        .update_account(user, form.display_name.as_deref())
        .await?;
    Ok(Json(Account::credential(
        &Origin::of(&state.mastodon, &headers),
        &account,
    )))
}

/// A page of accounts with its `Link` header.
pub(super) fn account_page(
    accounts: Vec<Account>,
    link: Option<axum::http::HeaderValue>,
) -> Response {
    super::link::linked(Json(accounts), link)
}

async fn follow_list(
    state: AppState,
    headers: HeaderMap,
    id: String,
    paging: AccountPaging,
    direction: Direction,
) -> Result<Response, MastoError> {
    let id = account_id(&id)?;
    // A cursor is a user id.
    let (range, limit) = paging.parse(|c| validate_user_id(c).is_ok().then(|| c.to_owned()))?;
    let page = state
        .social
        .follow_accounts(id, direction, range, limit)
        .await?;
    let origin = Origin::of(&state.mastodon, &headers);
    let side = match direction {
        Direction::Followers => "followers",
        Direction::Following => "following",
    };
    let path = format!("/api/v1/accounts/{id}/{side}");
    let (next, prev) = (page.next.as_deref(), page.prev.as_deref());
    let link = cursor_link(&origin, &path, limit, next, prev);
    let accounts = page
        .items
        .iter()
        .map(|u| Account::new(&origin, u))
        .collect();
    Ok(account_page(accounts, link))
}

/// The account's followers, by id; `Link` names the next page, then the previous. Public.
#[utoipa::path(get, path = "/api/v1/accounts/{id}/followers", tag = "mastodon",
    params(("id" = String, Path, description = "The user id"), AccountPaging),
    responses(
        (status = 200, description = "A page of accounts", body = Vec<Account>,
            headers(("Link" = String, description = "`<...max_id=X>; rel=\"next\"` when more may follow, then `<...min_id=Y>; rel=\"prev\"`"))),
        (status = 404, description = "No such account", body = MastoErrorBody),
        (status = 422, description = "A bad limit or cursor, or min_id with max_id", body = MastoErrorBody),
    ))]
pub async fn followers(
    State(state): State<AppState>,
    headers: HeaderMap,
    Path(id): Path<String>,
    Query(paging): Query<AccountPaging>,
) -> Result<Response, MastoError> {
    follow_list(state, headers, id, paging, Direction::Followers).await
}

/// The accounts the account follows, by id; `Link` names the next page, then the
/// previous. Public.
#[utoipa::path(get, path = "/api/v1/accounts/{id}/following", tag = "mastodon",
    params(("id" = String, Path, description = "The user id"), AccountPaging),
    responses(
        (status = 200, description = "A page of accounts", body = Vec<Account>,
            headers(("Link" = String, description = "`<...max_id=X>; rel=\"next\"` when more may follow, then `<...min_id=Y>; rel=\"prev\"`"))),
        (status = 404, description = "No such account", body = MastoErrorBody),
        (status = 422, description = "A bad limit or cursor, or min_id with max_id", body = MastoErrorBody),
    ))]
pub async fn following(
    State(state): State<AppState>,
    headers: HeaderMap,
    Path(id): Path<String>,
    Query(paging): Query<AccountPaging>,
) -> Result<Response, MastoError> {
    follow_list(state, headers, id, paging, Direction::Following).await
}

/// What `follow` takes: all accepted and ignored (reposts always show, no per-follow
/// notifications or languages).
#[derive(Debug, Default, Deserialize, ToSchema)]
pub struct FollowForm {
    #[schema(value_type = Option<bool>)]
    pub reblogs: Option<Value>,
    #[schema(value_type = Option<bool>)]
    pub notify: Option<Value>,
    #[schema(value_type = Option<Vec<String>>)]
    pub languages: Option<Value>,
}

/// Follows the account (no approval: at once).
#[utoipa::path(post, path = "/api/v1/accounts/{id}/follow", tag = "mastodon",
    security(("bearer" = [])),
    params(("id" = String, Path, description = "The user id")),
    request_body(content = FollowForm, content_type = "application/x-www-form-urlencoded",
        description = "Optional; or JSON"),
    responses(
        (status = 200, description = "How the two stand now", body = Relationship),
        (status = 401, description = "No valid token", body = MastoErrorBody),
        (status = 403, description = "The token lacks write:follows, or a block stands between the two", body = MastoErrorBody),
        (status = 404, description = "No such account", body = MastoErrorBody),
        (status = 422, description = "The account is the token's user, or an app's own token", body = MastoErrorBody),
    ))]
pub async fn follow(
    State(state): State<AppState>,
    auth: Scoped<WriteFollows>,
    Path(id): Path<String>,
    FormOrJson(_form): FormOrJson<FollowForm>,
) -> Result<Json<Relationship>, MastoError> {
    let view = state
        .social
        .follow_account(auth.user()?, account_id(&id)?)
        .await?;
    Ok(Json(Relationship::new(&view)))
}

macro_rules! relation_action {
    ($(#[$doc:meta])* $name:ident, $path:literal, $scope:ident, $scope_name:literal, $op:ident) => {
        $(#[$doc])*
        #[utoipa::path(post, path = $path, tag = "mastodon",
            security(("bearer" = [])),
            params(("id" = String, Path, description = "The user id")),
            responses(
                (status = 200, description = "How the two stand now", body = Relationship),
                (status = 401, description = "No valid token", body = MastoErrorBody),
                (status = 403, description = concat!("The token lacks ", $scope_name), body = MastoErrorBody),
                (status = 404, description = "No such account", body = MastoErrorBody),
                (status = 422, description = "The account is the token's user, or an app's own token", body = MastoErrorBody),
            ))]
        pub async fn $name(
            State(state): State<AppState>,
            auth: Scoped<$scope>,
            Path(id): Path<String>,
        ) -> Result<Json<Relationship>, MastoError> {
            let view = state.social.$op(auth.user()?, account_id(&id)?).await?;
            Ok(Json(Relationship::new(&view)))
        }
    };
}

relation_action! {
    /// Stops following the account. Idempotent.
    unfollow, "/api/v1/accounts/{id}/unfollow", WriteFollows, "write:follows", unfollow_account
}
relation_action! {
    /// Blocks the account, removing the follows between the two both ways.
    block, "/api/v1/accounts/{id}/block", WriteBlocks, "write:blocks", block_account
}
relation_action! {
    /// Unblocks the account; restores no follow. Idempotent.
    unblock, "/api/v1/accounts/{id}/unblock", WriteBlocks, "write:blocks", unblock_account
}
relation_action! {
    /// Unmutes the account. Idempotent.
    unmute, "/api/v1/accounts/{id}/unmute", WriteMutes, "write:mutes", unmute_account
}

/// What `mute` takes.
#[derive(Debug, Default, Deserialize, ToSchema)]
pub struct MuteForm {
    /// Hide the account's notifications too; true when absent.
    #[schema(value_type = Option<bool>)]
    pub notifications: Option<Value>,
    /// Seconds; 0 or absent: for ever. At most ten years.
    #[schema(value_type = Option<u64>)]
    pub duration: Option<Value>,
}

fn mute_request(form: &MuteForm) -> Result<MuteRequest, MastoError> {
    let seconds = match &form.duration {
        None | Some(Value::Null) => 0,
        Some(Value::Number(n)) => n.as_i64().unwrap_or(-1),
        Some(Value::String(s)) if s.is_empty() => 0,
        Some(Value::String(s)) => s.parse::<i64>().unwrap_or(-1),
        Some(_) => -1,
    };
    if seconds < 0 {
        return Err(MastoError::unprocessable(
            "Validation failed: duration must be a whole number of seconds, 0 for ever",
        ));
    }
    Ok(MuteRequest {
        notifications: form.notifications.is_none() || truthy(&form.notifications),
        duration_ms: (seconds > 0).then(|| seconds.saturating_mul(1000)),
    })
}

/// Mutes the account (for `duration` seconds, or for ever), replacing the settings of
/// a mute that stands.
#[utoipa::path(post, path = "/api/v1/accounts/{id}/mute", tag = "mastodon",
    security(("bearer" = [])),
    params(("id" = String, Path, description = "The user id")),
    request_body(content = MuteForm, content_type = "application/x-www-form-urlencoded",
        description = "Optional; or JSON"),
    responses(
        (status = 200, description = "How the two stand now", body = Relationship),
        (status = 401, description = "No valid token", body = MastoErrorBody),
        (status = 403, description = "The token lacks write:mutes", body = MastoErrorBody),
        (status = 404, description = "No such account", body = MastoErrorBody),
        (status = 422, description = "A bad duration, the token's own user, or an app's own token", body = MastoErrorBody),
    ))]
pub async fn mute(
    State(state): State<AppState>,
    auth: Scoped<WriteMutes>,
    Path(id): Path<String>,
    FormOrJson(form): FormOrJson<MuteForm>,
) -> Result<Json<Relationship>, MastoError> {
    let request = mute_request(&form)?;
    let view = state
        .social
        .mute_account(auth.user()?, account_id(&id)?, request)
        .await?;
    Ok(Json(Relationship::new(&view)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn mute_durations_are_seconds_and_zero_is_for_ever() {
        let form = |v: Value| MuteForm {
            notifications: Some(json!("false")),
            duration: Some(v),
        };
        let request = mute_request(&form(json!("3600"))).unwrap();
        assert_eq!(request.duration_ms, Some(3_600_000));
        assert!(!request.notifications);
        assert_eq!(mute_request(&form(json!(0))).unwrap().duration_ms, None);
        assert!(mute_request(&form(json!("soon"))).is_err());
        assert!(mute_request(&form(json!(-5))).is_err());
        assert!(mute_request(&MuteForm::default()).unwrap().notifications);
    }
}
