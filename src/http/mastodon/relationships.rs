//! `GET /api/v1/accounts/relationships?id[]=` (batched: see
//! `service::relationships`), and the token's user's blocks and mutes as accounts,
//! newest first, with a `Link` to the next page and the previous one.

use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::Response;
use serde::Deserialize;
use utoipa::IntoParams;

use super::Origin;
use super::accounts::account_page;
use super::auth::{ReadBlocks, ReadFollows, ReadMutes, Scoped};
use super::entities::{Account, Relationship};
use super::error::{MastoError, MastoErrorBody};
use super::form::{FormOrJson, StringOrList};
use super::paging::{AccountPaging, cursor_link};
use crate::domain::validate_user_id;
use crate::http::AppState;
use crate::http::error::{Json, Query};
use crate::store::relations::RelationCursor;

/// The most ids one relationships request may ask about.
pub const MAX_RELATIONSHIPS: usize = 80;

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct RelationshipsQuery {
    /// The accounts, as `id[]=a&id[]=b` (or one `id=a`); at most 80.
    #[serde(default)]
    #[param(rename = "id[]", value_type = Vec<String>)]
    pub id: Option<StringOrList>,
    /// Accepted and ignored: there are no suspended accounts.
    #[param(value_type = Option<bool>)]
    pub with_suspended: Option<serde_json::Value>,
}

/// How the token's user and each account stand, in the order asked; unknown and
/// malformed ids are left out, as Mastodon leaves them.
#[utoipa::path(get, path = "/api/v1/accounts/relationships", tag = "mastodon",
    security(("bearer" = [])),
    params(RelationshipsQuery),
    responses(
        (status = 200, description = "One Relationship per known account", body = Vec<Relationship>),
        (status = 401, description = "No valid token", body = MastoErrorBody),
        (status = 403, description = "The token lacks read:follows", body = MastoErrorBody),
        (status = 422, description = "More than 80 ids, or an app's own token", body = MastoErrorBody),
    ))]
pub async fn relationships(
    State(state): State<AppState>,
    auth: Scoped<ReadFollows>,
    FormOrJson(query): FormOrJson<RelationshipsQuery>,
) -> Result<Json<Vec<Relationship>>, MastoError> {
    let user = auth.user()?;
    let ids: Vec<String> = query.id.map(|ids| ids.items()).unwrap_or_default();
    if ids.len() > MAX_RELATIONSHIPS {
        return Err(MastoError::unprocessable(format!(
            "at most {MAX_RELATIONSHIPS} ids a request, got {}",
            ids.len()
        )));
    }
    let ids: Vec<String> = ids
        .into_iter()
        .filter(|id| validate_user_id(id).is_ok())
        .collect();
    let views = state.social.relationships(user, &ids).await?;
    Ok(Json(views.iter().map(Relationship::new).collect()))
}

/// A blocks or mutes cursor: `{created_ms}_{user}`; the time is all digits, so the
/// first `_` ends it.
fn relation_cursor(raw: &str) -> Option<RelationCursor> {
    let (ms, user) = raw.split_once('_')?;
    let ms = ms.parse::<i64>().ok()?;
    validate_user_id(user)
        .is_ok()
        .then(|| (ms, user.to_owned()))
}

fn render_cursor((ms, user): &RelationCursor) -> String {
    format!("{ms}_{user}")
}

async fn relation_list(
    state: AppState,
    headers: HeaderMap,
    user: &str,
    paging: AccountPaging,
    mutes: bool,
) -> Result<Response, MastoError> {
    let (range, limit) = paging.parse(relation_cursor)?;
    let page = state
        .social
        .relation_accounts(user, mutes, range, limit)
        .await?;
    let origin = Origin::of(&state.mastodon, &headers);
    let path = if mutes {
        "/api/v1/mutes"
    } else {
        "/api/v1/blocks"
    };
    let next = page.next.as_ref().map(render_cursor);
    let prev = page.prev.as_ref().map(render_cursor);
    let link = cursor_link(&origin, path, limit, next.as_deref(), prev.as_deref());
    let accounts = page
        .items
        .iter()
        .map(|(_, user)| Account::new(&origin, user))
        .collect();
    Ok(account_page(accounts, link))
}

/// The accounts the token's user blocks, newest first.
#[utoipa::path(get, path = "/api/v1/blocks", tag = "mastodon",
    security(("bearer" = [])),
    params(AccountPaging),
    responses(
        (status = 200, description = "A page of accounts", body = Vec<Account>,
            headers(("Link" = String, description = "`<...max_id=X>; rel=\"next\"` when more may follow, then `<...min_id=Y>; rel=\"prev\"`"))),
        (status = 401, description = "No valid token", body = MastoErrorBody),
        (status = 403, description = "The token lacks read:blocks", body = MastoErrorBody),
        (status = 422, description = "A bad limit or cursor, min_id with max_id, or an app's own token", body = MastoErrorBody),
    ))]
pub async fn blocks(
    State(state): State<AppState>,
    headers: HeaderMap,
    auth: Scoped<ReadBlocks>,
    Query(paging): Query<AccountPaging>,
) -> Result<Response, MastoError> {
    relation_list(state, headers, auth.user()?, paging, false).await
}

/// The accounts the token's user mutes (mutes that stand now), newest first.
#[utoipa::path(get, path = "/api/v1/mutes", tag = "mastodon",
    security(("bearer" = [])),
    params(AccountPaging),
    responses(
        (status = 200, description = "A page of accounts", body = Vec<Account>,
            headers(("Link" = String, description = "`<...max_id=X>; rel=\"next\"` when more may follow, then `<...min_id=Y>; rel=\"prev\"`"))),
        (status = 401, description = "No valid token", body = MastoErrorBody),
        (status = 403, description = "The token lacks read:mutes", body = MastoErrorBody),
        (status = 422, description = "A bad limit or cursor, min_id with max_id, or an app's own token", body = MastoErrorBody),
    ))]
pub async fn mutes(
    State(state): State<AppState>,
    headers: HeaderMap,
    auth: Scoped<ReadMutes>,
    Query(paging): Query<AccountPaging>,
) -> Result<Response, MastoError> {
    relation_list(state, headers, auth.user()?, paging, true).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursors_read_back_and_bad_ones_are_refused() {
        let cursor = (1_795_780_800_000, "bob_2".to_owned());
        assert_eq!(relation_cursor("1795780800000_bob_2"), Some(cursor.clone()));
        assert_eq!(render_cursor(&cursor), "1795780800000_bob_2");
        assert_eq!(relation_cursor("bob"), None);
        assert_eq!(relation_cursor("12_"), None);
    }
}
