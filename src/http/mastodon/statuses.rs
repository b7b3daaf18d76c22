//! Statuses: create, get, delete, context, favourite, reblog. Each handler parses,
//! calls one service operation (`service/mastodon.rs`) and renders the Status. A post
//! whose author blocks the caller does not exist for them (404, as on `/v1`).

use axum::extract::{FromRequestParts, Path, State};
use axum::http::HeaderMap;
use axum::http::request::Parts;
use axum::response::Response;
use serde::Deserialize;
use serde_json::Value;
use utoipa::ToSchema;

use super::Origin;
use super::auth::{MastoAuth, ReadStatuses, Scoped, WriteFavourites, WriteStatuses, bearer};
use super::entities::{Context, Status, status::statuses};
use super::error::{MastoError, MastoErrorBody};
use super::form::FormOrJson;
use crate::domain::{PostId, validate_post_text};
use crate::http::AppState;
use crate::http::error::Json;

/// The longest `Idempotency-Key` taken.
const MAX_IDEMPOTENCY_KEY: usize = 256;

/// A new status. Fields Mastodon clients send that this server has no use for are
/// taken and ignored when they ask for nothing it lacks; those that would ask for
/// something it cannot do are refused (422) rather than dropped.
#[derive(Debug, Deserialize, ToSchema)]
pub struct StatusForm {
    /// The text: 1–500 characters, not all whitespace.
    pub status: Option<String>,
    /// The status this one answers.
    #[schema(pattern = "^[1-9][0-9]{19,28}$")]
    pub in_reply_to_id: Option<String>,
    /// Must be empty: media are not served.
    #[schema(value_type = Option<Vec<String>>)]
    pub media_ids: Option<Value>,
    /// `public` or `unlisted` (both served as public); `private` and `direct` are refused.
    pub visibility: Option<String>,
    /// Ignored (no media).
    #[schema(value_type = Option<bool>)]
    pub sensitive: Option<Value>,
    /// Must be empty: content warnings are not served.
    pub spoiler_text: Option<String>,
    /// Ignored.
    pub language: Option<String>,
    /// Must be absent: polls are not served.
    #[schema(value_type = Option<Object>)]
    pub poll: Option<Value>,
    /// Must be absent: scheduling is not served.
    pub scheduled_at: Option<String>,
}

impl StatusForm {
    /// The text and the post it answers, or why the form is refused.
    fn parse(self) -> Result<(String, Option<PostId>), MastoError> {
        let media = match &self.media_ids {
            None | Some(Value::Null) => false,
            Some(Value::Array(items)) => !items.is_empty(),
            Some(Value::String(s)) => !s.is_empty(),
            Some(_) => true,
        };
        if media {
            return Err(MastoError::unprocessable(
                "media_ids: media attachments are not supported",
            ));
        }
        if let Some(v) = self.visibility.as_deref()
            && !matches!(v, "" | "public" | "unlisted")
        {
            return Err(MastoError::unprocessable(format!(
                "visibility {v:?} is not supported: every status is public"
            )));
        }
        if self.spoiler_text.as_deref().is_some_and(|s| !s.is_empty()) {
            return Err(MastoError::unprocessable(
                "spoiler_text: content warnings are not supported",
            ));
        }
        if self.poll.as_ref().is_some_and(|p| !p.is_null()) {
            return Err(MastoError::unprocessable("poll: polls are not supported"));
        }
        if self.scheduled_at.as_deref().is_some_and(|s| !s.is_empty()) {
            return Err(MastoError::unprocessable(
                "scheduled_at: scheduled statuses are not supported",
            ));
        }
        let text = self.status.unwrap_or_default();
        validate_post_text(&text)
            .map_err(|why| MastoError::unprocessable(format!("Validation failed: {why}")))?;
        let in_reply_to = match self.in_reply_to_id.as_deref().filter(|s| !s.is_empty()) {
            None => None,
            Some(raw) => Some(status_id(raw)?),
        };
        Ok((text, in_reply_to))
    }
}

/// A path or body status (or notification) id: one that is not the decimal of an id
/// the engine could have made names none (404; see `ids`).
pub fn status_id(raw: &str) -> Result<PostId, MastoError> {
    super::ids::parse(raw).ok_or_else(MastoError::not_found)
}

/// The `Idempotency-Key` header, if sent: printable ASCII, at most 256 characters.
fn idempotency_key(headers: &HeaderMap) -> Result<Option<String>, MastoError> {
    let Some(value) = headers.get("idempotency-key") else {
        return Ok(None);
    };
    match value.to_str() {
        Ok(key) if !key.is_empty() && key.len() <= MAX_IDEMPOTENCY_KEY => Ok(Some(key.to_owned())),
        _ => Err(MastoError::unprocessable(format!(
            "Idempotency-Key must be 1-{MAX_IDEMPOTENCY_KEY} printable ASCII characters"
        ))),
    }
}

/// Credentials that may be absent (reads of public statuses): with a token, it must
/// hold `read:statuses`.
pub struct OptionalReader(pub Option<MastoAuth>);

impl FromRequestParts<AppState> for OptionalReader {
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, Response> {
        if bearer(parts).is_none() {
            return Ok(OptionalReader(None));
        }
        let auth = Scoped::<ReadStatuses>::from_request_parts(parts, state).await?;
        Ok(OptionalReader(Some(auth.0)))
    }
}

impl OptionalReader {
    fn viewer(&self) -> Option<&str> {
        self.0.as_ref().and_then(|a| a.0.user.as_deref())
    }
}

fn render(
    state: &AppState,
    headers: &HeaderMap,
    status: &crate::service::mastodon::StatusView,
) -> Status {
    Status::new(&Origin::of(&state.mastodon, headers), status)
}

/// Post a status (form or JSON). A repeat with the same `Idempotency-Key` within an
/// hour answers the first status and posts nothing.
#[utoipa::path(post, path = "/api/v1/statuses", tag = "mastodon",
    security(("bearer" = [])),
    params(("Idempotency-Key" = Option<String>, Header, description = "1-256 printable ASCII characters: a repeat by the same user within an hour answers the first status")),
    request_body(content = StatusForm, content_type = "application/x-www-form-urlencoded",
        description = "Or the same fields as JSON"),
    responses(
        (status = 200, description = "The new status", body = Status),
        (status = 400, description = "A malformed body", body = MastoErrorBody),
        (status = 401, description = "No valid token", body = MastoErrorBody),
        (status = 403, description = "The token lacks write:statuses", body = MastoErrorBody),
        (status = 404, description = "in_reply_to_id names no status the caller can see, or the Idempotency-Key's status was deleted", body = MastoErrorBody),
        (status = 415, description = "Neither a form nor JSON", body = MastoErrorBody),
        (status = 422, description = "Blank or too long text, media, a visibility other than public, a poll, a content warning, a bad Idempotency-Key, or an app's token", body = MastoErrorBody),
    ))]
pub async fn create_status(
    State(state): State<AppState>,
    headers: HeaderMap,
    auth: Scoped<WriteStatuses>,
    FormOrJson(form): FormOrJson<StatusForm>,
) -> Result<Json<Status>, MastoError> {
    let user = auth.user()?;
    let (text, in_reply_to) = form.parse()?;
    let key = idempotency_key(&headers)?;
    let view = state
        .social
        .post_status(user, &text, in_reply_to, key.as_deref())
        .await?;
    Ok(Json(render(&state, &headers, &view)))
}

/// A status.
#[utoipa::path(get, path = "/api/v1/statuses/{id}", tag = "mastodon",
    params(("id" = String, Path, description = "Status id")),
    security((), ("bearer" = [])),
    responses(
        (status = 200, description = "The status", body = Status),
        (status = 401, description = "An invalid token (tokens are optional)", body = MastoErrorBody),
        (status = 403, description = "The token lacks read:statuses", body = MastoErrorBody),
        (status = 404, description = "Unknown or deleted, or its author blocks the caller", body = MastoErrorBody),
    ))]
pub async fn get_status(
    State(state): State<AppState>,
    headers: HeaderMap,
    reader: OptionalReader,
    Path(id): Path<String>,
) -> Result<Json<Status>, MastoError> {
    let view = state
        .social
        .status(reader.viewer(), status_id(&id)?)
        .await?;
    Ok(Json(render(&state, &headers, &view)))
}

/// Delete one's own status; the answer is the status as it was, with its `text`.
#[utoipa::path(delete, path = "/api/v1/statuses/{id}", tag = "mastodon",
    params(("id" = String, Path, description = "Status id")),
    security(("bearer" = [])),
    responses(
        (status = 200, description = "The deleted status, with `text`", body = Status),
        (status = 401, description = "No valid token", body = MastoErrorBody),
        (status = 403, description = "The token lacks write:statuses", body = MastoErrorBody),
        (status = 404, description = "Unknown, already deleted, or someone else's (as on Mastodon)", body = MastoErrorBody),
        (status = 422, description = "An app's token (no user)", body = MastoErrorBody),
    ))]
pub async fn delete_status(
    State(state): State<AppState>,
    headers: HeaderMap,
    auth: Scoped<WriteStatuses>,
    Path(id): Path<String>,
) -> Result<Json<Status>, MastoError> {
    let view = state
        .social
        .delete_status(auth.user()?, status_id(&id)?)
        .await?;
    let text = view.post.text.clone();
    Ok(Json(render(&state, &headers, &view).with_text(text)))
}

/// The thread around a status: its ancestors (root first) and descendants (thread
/// order), without the statuses of accounts hidden from the caller.
#[utoipa::path(get, path = "/api/v1/statuses/{id}/context", tag = "mastodon",
    params(("id" = String, Path, description = "Status id")),
    security((), ("bearer" = [])),
    responses(
        (status = 200, description = "The thread", body = Context),
        (status = 401, description = "An invalid token (tokens are optional)", body = MastoErrorBody),
        (status = 403, description = "The token lacks read:statuses", body = MastoErrorBody),
        (status = 404, description = "Unknown or deleted, or its author blocks the caller", body = MastoErrorBody),
    ))]
pub async fn status_context(
    State(state): State<AppState>,
    headers: HeaderMap,
    reader: OptionalReader,
    Path(id): Path<String>,
) -> Result<Json<Context>, MastoError> {
    let context = state
        .social
        .status_context(reader.viewer(), status_id(&id)?)
        .await?;
    let origin = Origin::of(&state.mastodon, &headers);
    Ok(Json(Context {
        ancestors: statuses(&origin, &context.ancestors),
        descendants: statuses(&origin, &context.descendants),
    }))
}

macro_rules! action {
    ($(#[$doc:meta])* $name:ident, $path:literal, $scope:ty, $scope_name:literal, |$social:ident, $user:ident, $id:ident| $call:expr) => {
        $(#[$doc])*
        #[utoipa::path(post, path = $path, tag = "mastodon",
            params(("id" = String, Path, description = "Status id")),
            security(("bearer" = [])),
            responses(
                (status = 200, description = "The status as it now stands for the caller", body = Status),
                (status = 401, description = "No valid token", body = MastoErrorBody),
                (status = 403, description = concat!("The token lacks ", $scope_name), body = MastoErrorBody),
                (status = 404, description = "Unknown or deleted, or its author blocks the caller", body = MastoErrorBody),
                (status = 422, description = "An app's token (no user)", body = MastoErrorBody),
            ))]
        pub async fn $name(
            State(state): State<AppState>,
            headers: HeaderMap,
            auth: Scoped<$scope>,
            Path(id): Path<String>,
        ) -> Result<Json<Status>, MastoError> {
            let ($social, $user, $id) = (&state.social, auth.user()?, status_id(&id)?);
            let view = $call.await?;
            Ok(Json(render(&state, &headers, &view)))
        }
    };
}

action!(
    /// Like a status (idempotent).
    favourite, "/api/v1/statuses/{id}/favourite", WriteFavourites, "write:favourites",
    |social, user, id| social.favourite_status(user, id, true)
);
action!(
    /// Unlike a status (idempotent).
    unfavourite, "/api/v1/statuses/{id}/unfavourite", WriteFavourites, "write:favourites",
    |social, user, id| social.favourite_status(user, id, false)
);
action!(
    /// Repost a status (idempotent); the answer is the repost, the status in `reblog`.
    reblog, "/api/v1/statuses/{id}/reblog", WriteStatuses, "write:statuses",
    |social, user, id| social.reblog_status(user, id)
);
action!(
    /// Undo one's repost of a status (idempotent); the answer is the status.
    unreblog, "/api/v1/statuses/{id}/unreblog", WriteStatuses, "write:statuses",
    |social, user, id| social.unreblog_status(user, id)
);
