//! Endpoints this server answers with nothing, so that web clients which read them at
//! start (Phanpy, Elk, toot's TUI) go on: custom emojis, lists, followed tags, filters (v1 and v2),
//! announcements, and the preferences (Mastodon's keys with their defaults). Each still checks the
//! scope Mastodon asks for, so a client learns of a missing scope here as it would there.
//! docs/mastodon.md lists them as "answers empty".

use serde::Serialize;
use serde_json::Value;
use utoipa::ToSchema;

use super::auth::{MastoAuth, ReadAccounts, ReadFilters, ReadFollows, ReadLists, Scoped};
use super::error::{MastoError, MastoErrorBody};
use crate::http::error::Json;

fn empty_list() -> Json<Vec<Value>> {
    Json(Vec::new())
}

/// No custom emojis: `[]`. Public.
#[utoipa::path(get, path = "/api/v1/custom_emojis", tag = "mastodon",
    responses((status = 200, description = "`[]`", body = Vec<serde_json::Value>)))]
pub async fn custom_emojis() -> Json<Vec<Value>> {
    empty_list()
}

/// No lists: `[]`.
#[utoipa::path(get, path = "/api/v1/lists", tag = "mastodon",
    security(("bearer" = [])),
    responses(
        (status = 200, description = "`[]`", body = Vec<serde_json::Value>),
        (status = 401, description = "No valid token", body = MastoErrorBody),
        (status = 403, description = "The token lacks read:lists", body = MastoErrorBody),
    ))]
pub async fn lists(_auth: Scoped<ReadLists>) -> Json<Vec<Value>> {
    empty_list()
}

/// No followed hashtags: `[]`.
#[utoipa::path(get, path = "/api/v1/followed_tags", tag = "mastodon",
    security(("bearer" = [])),
    responses(
        (status = 200, description = "`[]`", body = Vec<serde_json::Value>),
        (status = 401, description = "No valid token", body = MastoErrorBody),
        (status = 403, description = "The token lacks read:follows", body = MastoErrorBody),
    ))]
pub async fn followed_tags(_auth: Scoped<ReadFollows>) -> Json<Vec<Value>> {
    empty_list()
}

/// No filters: `[]`.
#[utoipa::path(get, path = "/api/v2/filters", tag = "mastodon",
    security(("bearer" = [])),
    responses(
        (status = 200, description = "`[]`", body = Vec<serde_json::Value>),
        (status = 401, description = "No valid token", body = MastoErrorBody),
        (status = 403, description = "The token lacks read:filters", body = MastoErrorBody),
    ))]
pub async fn filters_v2(_auth: Scoped<ReadFilters>) -> Json<Vec<Value>> {
    empty_list()
}

/// No filters (the older API): `[]`.
#[utoipa::path(get, path = "/api/v1/filters", tag = "mastodon",
    security(("bearer" = [])),
    responses(
        (status = 200, description = "`[]`", body = Vec<serde_json::Value>),
        (status = 401, description = "No valid token", body = MastoErrorBody),
        (status = 403, description = "The token lacks read:filters", body = MastoErrorBody),
    ))]
pub async fn filters_v1(_auth: Scoped<ReadFilters>) -> Json<Vec<Value>> {
    empty_list()
}

/// No announcements: `[]`. Any valid token (Mastodon asks for none in particular).
#[utoipa::path(get, path = "/api/v1/announcements", tag = "mastodon",
    security(("bearer" = [])),
    responses(
        (status = 200, description = "`[]`", body = Vec<serde_json::Value>),
        (status = 401, description = "No valid token", body = MastoErrorBody),
    ))]
pub async fn announcements(_auth: MastoAuth) -> Json<Vec<Value>> {
    empty_list()
}

/// Mastodon's Preferences entity: this server keeps none, so these are Mastodon's
/// defaults, and every post is public.
#[derive(Debug, Serialize, ToSchema)]
pub struct Preferences {
    #[serde(rename = "posting:default:visibility")]
    #[schema(example = "public")]
    pub visibility: &'static str,
    #[serde(rename = "posting:default:sensitive")]
    pub sensitive: bool,
    #[serde(rename = "posting:default:language")]
    pub language: Option<String>,
    #[serde(rename = "reading:expand:media")]
    #[schema(example = "default")]
    pub expand_media: &'static str,
    #[serde(rename = "reading:expand:spoilers")]
    pub expand_spoilers: bool,
    #[serde(rename = "reading:autoplay:gifs")]
    pub autoplay_gifs: bool,
}

/// The user's preferences: Mastodon's defaults.
#[utoipa::path(get, path = "/api/v1/preferences", tag = "mastodon",
    security(("bearer" = [])),
    responses(
        (status = 200, description = "The defaults", body = Preferences),
        (status = 401, description = "No valid token", body = MastoErrorBody),
        (status = 403, description = "The token lacks read:accounts", body = MastoErrorBody),
        (status = 422, description = "An app's own token (no user)", body = MastoErrorBody),
    ))]
pub async fn preferences(auth: Scoped<ReadAccounts>) -> Result<Json<Preferences>, MastoError> {
    auth.user()?;
    Ok(Json(Preferences {
        visibility: "public",
        sensitive: false,
        language: None,
        expand_media: "default",
        expand_spoilers: false,
        autoplay_gifs: false,
    }))
}
