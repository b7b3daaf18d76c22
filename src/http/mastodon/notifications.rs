//! `GET /api/v1/notifications` and the grouped `GET /api/v2/notifications`: the
//! engine's notifications in Mastodon's shapes, filtered by `types[]` and
//! `exclude_types[]`, paged as the home timeline (`max_id`, `since_id` a cut of the
//! newest page, `min_id` the page just above it) with a `Link` header: next, then prev.

use axum::extract::{Path, RawQuery, State};
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde_json::{Value, json};
use utoipa::{IntoParams, ToSchema};

use super::Origin;
use super::auth::{ReadNotifications, Scoped, WriteNotifications};
use super::entities::notification::{GroupedNotifications, Notification, engine_types};
use super::error::{MastoError, MastoErrorBody};
use super::form::FormOrJson;
use super::link::{PageParams, link_header, linked};
use super::statuses::status_id;
use crate::domain::{NotificationFilter, NotificationType, PostId};
use crate::http::AppState;
use crate::http::error::Json;
use crate::service::masto_notifications::{GroupPage, NotificationPage};
use crate::service::mastodon::HomeRange;

/// The query of both notification lists (lists as `key[]=`, as Rails reads them).
#[derive(Debug, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct NotificationParams {
    /// Only these types: `follow`, `favourite`, `reblog`, `mention` (replies are
    /// mentions); others name nothing this server makes.
    #[param(rename = "types[]", value_type = Option<Vec<String>>)]
    pub types: Vec<String>,
    /// None of these types.
    #[param(rename = "exclude_types[]", value_type = Option<Vec<String>>)]
    pub exclude_types: Vec<String>,
    /// v2 only, accepted and ignored: every type is grouped as the engine groups it.
    #[param(rename = "grouped_types[]", value_type = Option<Vec<String>>)]
    pub grouped_types: Vec<String>,
}

struct Parsed {
    /// `None`: the filter admits nothing.
    filter: Option<NotificationFilter>,
    range: HomeRange,
    limit: usize,
    /// The type parameters, kept for the `Link` URLs.
    kept: Vec<(&'static str, String)>,
}

fn parse(query: Option<&str>) -> Result<Parsed, MastoError> {
    let pairs: Vec<(String, String)> = serde_urlencoded::from_str(query.unwrap_or(""))
        .map_err(|e| MastoError::unprocessable(format!("malformed query: {e}")))?;
    let mut page = PageParams::default();
    let (mut types, mut exclude) = (None::<Vec<String>>, Vec::new());
    let mut kept = Vec::new();
    for (key, value) in pairs {
        match key.as_str() {
            "types[]" | "types" => {
                kept.push(("types[]", value.clone()));
                types.get_or_insert_with(Vec::new).push(value);
            }
            "exclude_types[]" | "exclude_types" => {
                kept.push(("exclude_types[]", value.clone()));
                exclude.push(value);
            }
            "max_id" => page.max_id = Some(value),
            "since_id" => page.since_id = Some(value),
            "min_id" => page.min_id = Some(value),
            "limit" => page.limit = Some(value),
            "account_id" => {
                return Err(MastoError::unprocessable("account_id is not yet supported"));
            }
            _ => {}
        }
    }
    let (range, limit) = page.home_range()?;
    let mut admitted: Vec<NotificationType> = match &types {
        Some(names) => names
            .iter()
            .flat_map(|n| engine_types(n))
            .copied()
            .collect(),
        None => NotificationType::ALL.to_vec(),
    };
    for name in &exclude {
        admitted.retain(|t| !engine_types(name).contains(t));
    }
    admitted.sort_unstable();
    admitted.dedup();
    let filter = match admitted.len() {
        0 => None,
        n if n == NotificationType::ALL.len() => Some(NotificationFilter::default()),
        _ => Some(NotificationFilter {
            types: admitted,
            hidden: Vec::new(),
        }),
    };
    Ok(Parsed {
        filter,
        range,
        limit,
        kept,
    })
}

/// `body` with its `Link`: next below `next`, prev above `newest` (the page's newest
/// id), keeping the type parameters.
fn with_link(
    body: impl IntoResponse,
    origin: &Origin,
    path: &str,
    parsed: &Parsed,
    (next, newest): (Option<PostId>, Option<PostId>),
) -> Response {
    let link = link_header(origin, path, &parsed.kept, parsed.limit, next, newest);
    linked(body, link)
}

/// The caller's notifications, newest first.
#[utoipa::path(get, path = "/api/v1/notifications", tag = "mastodon",
    params(NotificationParams, PageParams),
    security(("bearer" = [])),
    responses(
        (status = 200, description = "A page of notifications; `Link` has the next page first, then the previous",
            body = Vec<Notification>, headers(("Link" = String, description = "`<...max_id=X>; rel=\"next\", <...min_id=Y>; rel=\"prev\"`"))),
        (status = 401, description = "No valid token", body = MastoErrorBody),
        (status = 403, description = "The token lacks read:notifications", body = MastoErrorBody),
        (status = 422, description = "A bad limit or id, min_id with max_id, account_id (not yet supported), or an app's token", body = MastoErrorBody),
    ))]
pub async fn notifications(
    State(state): State<AppState>,
    headers: HeaderMap,
    auth: Scoped<ReadNotifications>,
    RawQuery(query): RawQuery,
) -> Result<Response, MastoError> {
    let user = auth.user()?;
    let parsed = parse(query.as_deref())?;
    let page = match &parsed.filter {
        Some(filter) => {
            let (range, limit) = (parsed.range, parsed.limit);
            state
                .social
                .notification_statuses(user, filter, range, limit)
                .await?
        }
        None => NotificationPage {
            items: Vec::new(),
            next: None,
        },
    };
    let origin = Origin::of(&state.mastodon, &headers);
    let body: Vec<Notification> = page
        .items
        .iter()
        .map(|n| Notification::new(&origin, n))
        .collect();
    let path = "/api/v1/notifications";
    let ids = (page.next, page.items.first().map(|n| n.id));
    Ok(with_link(Json(body), &origin, path, &parsed, ids))
}

/// The caller's notifications grouped (Mastodon 4.3's shape): one group per type and
/// status (follows: one group), newest first by each group's latest notification;
/// mentions are groups of one. `max_id` and `min_id` page by a group's latest
/// notification id.
#[utoipa::path(get, path = "/api/v2/notifications", tag = "mastodon",
    params(NotificationParams, PageParams),
    security(("bearer" = [])),
    responses(
        (status = 200, description = "A page of groups; `Link` has the next page first, then the previous",
            body = GroupedNotifications, headers(("Link" = String, description = "`<...max_id=X>; rel=\"next\", <...min_id=Y>; rel=\"prev\"`"))),
        (status = 401, description = "No valid token", body = MastoErrorBody),
        (status = 403, description = "The token lacks read:notifications", body = MastoErrorBody),
        (status = 422, description = "A bad limit or id, min_id with max_id, account_id (not yet supported), or an app's token", body = MastoErrorBody),
    ))]
pub async fn grouped_notifications(
    State(state): State<AppState>,
    headers: HeaderMap,
    auth: Scoped<ReadNotifications>,
    RawQuery(query): RawQuery,
) -> Result<Response, MastoError> {
    let user = auth.user()?;
    let parsed = parse(query.as_deref())?;
    let page = match &parsed.filter {
        Some(filter) => {
            let (range, limit) = (parsed.range, parsed.limit);
            state
                .social
                .notification_group_statuses(user, filter, range, limit)
                .await?
        }
        None => GroupPage {
            groups: Vec::new(),
            actors: Vec::new(),
            statuses: Vec::new(),
            next: None,
        },
    };
    let origin = Origin::of(&state.mastodon, &headers);
    let body = Json(GroupedNotifications::new(&origin, &page));
    let path = "/api/v2/notifications";
    let ids = (page.next, page.groups.first().map(|g| g.latest_id));
    Ok(with_link(body, &origin, path, &parsed, ids))
}

/// One of the caller's notifications.
#[utoipa::path(get, path = "/api/v1/notifications/{id}", tag = "mastodon",
    params(("id" = String, Path, description = "Notification id")),
    security(("bearer" = [])),
    responses(
        (status = 200, description = "The notification", body = Notification),
        (status = 401, description = "No valid token", body = MastoErrorBody),
        (status = 403, description = "The token lacks read:notifications", body = MastoErrorBody),
        (status = 404, description = "Not the caller's, dismissed or cleared, its cause undone, or its actor hidden from the caller", body = MastoErrorBody),
        (status = 422, description = "An app's token (no user)", body = MastoErrorBody),
    ))]
pub async fn notification(
    State(state): State<AppState>,
    headers: HeaderMap,
    auth: Scoped<ReadNotifications>,
    Path(id): Path<String>,
) -> Result<Json<Notification>, MastoError> {
    let item = state
        .social
        .notification_status(auth.user()?, status_id(&id)?)
        .await?;
    let origin = Origin::of(&state.mastodon, &headers);
    Ok(Json(Notification::new(&origin, &item)))
}

/// Dismisses one of the caller's notifications for good (the same cause done again
/// later notifies again). Answers `{}`.
#[utoipa::path(post, path = "/api/v1/notifications/{id}/dismiss", tag = "mastodon",
    params(("id" = String, Path, description = "Notification id")),
    security(("bearer" = [])),
    responses(
        (status = 200, description = "Dismissed: `{}`", body = Object),
        (status = 401, description = "No valid token", body = MastoErrorBody),
        (status = 403, description = "The token lacks write:notifications", body = MastoErrorBody),
        (status = 404, description = "No such notification of the caller's", body = MastoErrorBody),
        (status = 422, description = "An app's token (no user)", body = MastoErrorBody),
    ))]
pub async fn dismiss(
    State(state): State<AppState>,
    auth: Scoped<WriteNotifications>,
    Path(id): Path<String>,
) -> Result<Json<Value>, MastoError> {
    let user = auth.user()?;
    state
        .social
        .dismiss_notification(user, status_id(&id)?)
        .await?;
    Ok(Json(json!({})))
}

/// The body of the old `POST /api/v1/notifications/dismiss`.
#[derive(Debug, Default, Deserialize, ToSchema)]
pub struct DismissForm {
    /// The notification to dismiss.
    #[schema(pattern = "^[1-9][0-9]{19,28}$")]
    pub id: Option<String>,
}

/// The old form of dismissing (Mastodon before 3.1): the id in the body.
#[utoipa::path(post, path = "/api/v1/notifications/dismiss", tag = "mastodon",
    security(("bearer" = [])),
    request_body(content = DismissForm, content_type = "application/x-www-form-urlencoded",
        description = "Or the same field as JSON"),
    responses(
        (status = 200, description = "Dismissed: `{}`", body = Object),
        (status = 400, description = "A malformed body", body = MastoErrorBody),
        (status = 401, description = "No valid token", body = MastoErrorBody),
        (status = 403, description = "The token lacks write:notifications", body = MastoErrorBody),
        (status = 404, description = "No such notification of the caller's", body = MastoErrorBody),
        (status = 415, description = "Neither a form nor JSON", body = MastoErrorBody),
        (status = 422, description = "No id, or an app's token (no user)", body = MastoErrorBody),
    ))]
pub async fn dismiss_by_form(
    State(state): State<AppState>,
    auth: Scoped<WriteNotifications>,
    FormOrJson(form): FormOrJson<DismissForm>,
) -> Result<Json<Value>, MastoError> {
    let user = auth.user()?;
    let Some(id) = form.id.filter(|id| !id.is_empty()) else {
        return Err(MastoError::unprocessable("id is required"));
    };
    state
        .social
        .dismiss_notification(user, status_id(&id)?)
        .await?;
    Ok(Json(json!({})))
}

/// Clears all the caller's notifications for good. Answers `{}`.
#[utoipa::path(post, path = "/api/v1/notifications/clear", tag = "mastodon",
    security(("bearer" = [])),
    responses(
        (status = 200, description = "Cleared: `{}`", body = Object),
        (status = 401, description = "No valid token", body = MastoErrorBody),
        (status = 403, description = "The token lacks write:notifications", body = MastoErrorBody),
        (status = 422, description = "An app's token (no user)", body = MastoErrorBody),
    ))]
pub async fn clear(
    State(state): State<AppState>,
    auth: Scoped<WriteNotifications>,
) -> Result<Json<Value>, MastoError> {
    state.social.clear_notifications(auth.user()?).await?;
    Ok(Json(json!({})))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mastodon_types_map_onto_the_engine_s() {
        let filter = |q: &str| parse(Some(q)).unwrap().filter;
        assert_eq!(filter(""), Some(NotificationFilter::default()));
        assert_eq!(
            filter("types[]=mention").unwrap().types,
            [NotificationType::Reply, NotificationType::Mention]
        );
        assert_eq!(
            filter("exclude_types[]=mention&exclude_types[]=follow")
                .unwrap()
                .types,
            [NotificationType::Like, NotificationType::Repost]
        );
        // Only types this server never makes: nothing, not everything.
        assert_eq!(filter("types[]=poll"), None);
        assert_eq!(filter("types[]=follow&exclude_types[]=follow"), None);
    }
}
