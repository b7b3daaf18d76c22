//! `GET /api/v2/search` and the trending hashtags (`/api/v1/trends/tags`, with
//! `/api/v1/trends` its older name). Search finds accounts by id prefix, then by the
//! words of their display names (each word of `q` starting a word of the name), and a
//! hashtag by its exact name; it finds no statuses. `resolve` is ignored: nothing
//! federates.
//!
//! A Tag's `history` is its last seven days, newest first, from the hourly counts the
//! aggregates worker keeps. `accounts` there is the day's posts: distinct authors are
//! not counted, so it is an upper bound (docs/mastodon.md says so).

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use utoipa::{IntoParams, ToSchema};

use super::Origin;
use super::auth::{MaybeScoped, ReadSearch};
use super::entities::{Account, Tag};
use super::error::{MastoError, MastoErrorBody};
use crate::http::AppState;
use crate::http::error::{Json, Query};
use crate::service::SearchFor;
use crate::store::trends::{HOUR_MS, TagCounts};

const DAY_MS: i64 = 24 * HOUR_MS;
const HISTORY_DAYS: i64 = 7;

/// The Tag entity of `counts`, with its daily history ending today (UTC).
pub fn tag_with_history(origin: &Origin, counts: &TagCounts, now_ms: i64) -> Tag {
    let today = now_ms.div_euclid(DAY_MS);
    let mut history = Vec::with_capacity(HISTORY_DAYS as usize);
    for back in 0..HISTORY_DAYS {
        let day = today - back;
        let uses: u64 = counts
            .hours
            .iter()
            .filter(|(hour, _)| (hour * HOUR_MS).div_euclid(DAY_MS) == day)
            .map(|(_, posts)| posts)
            .sum();
        history.push(json!({
            "day": (day * DAY_MS / 1000).to_string(),
            "uses": uses.to_string(),
            "accounts": uses.to_string(),
        }));
    }
    Tag {
        history,
        ..Tag::new(origin, &counts.tag)
    }
}

fn limit(raw: Option<&str>, default: usize, max: usize) -> Result<usize, MastoError> {
    match raw.filter(|l| !l.is_empty()) {
        None => Ok(default),
        Some(raw) => match raw.parse::<u64>() {
            Ok(n) if n >= 1 => Ok(usize::try_from(n).unwrap_or(max).min(max)),
            _ => Err(MastoError::unprocessable(format!(
                "limit must be a positive integer, got {raw:?}"
            ))),
        },
    }
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct TrendsQuery {
    /// 1–20, default 10; larger values are taken as 20.
    #[param(value_type = Option<u32>, minimum = 1)]
    pub limit: Option<String>,
    /// Must be 0 or absent: one page of trends only.
    #[param(value_type = Option<u32>)]
    pub offset: Option<String>,
}

/// The hashtags with most posts in the last 24 hours, most first, each with its last
/// week's history. Public.
#[utoipa::path(get, path = "/api/v1/trends/tags", tag = "mastodon",
    params(TrendsQuery),
    responses(
        (status = 200, description = "The trending tags", body = Vec<Tag>),
        (status = 422, description = "A bad limit, or an offset past the first page", body = MastoErrorBody),
    ))]
pub async fn trending_tags(
    State(state): State<AppState>,
    headers: HeaderMap,
    Query(query): Query<TrendsQuery>,
) -> Result<Json<Vec<Tag>>, MastoError> {
    let limit = limit(query.limit.as_deref(), 10, 20)?;
    if query
        .offset
        .as_deref()
        .is_some_and(|o| !o.is_empty() && o != "0")
    {
        return Err(MastoError::unprocessable(
            "offset is not supported: trends are one page",
        ));
    }
    let tags = state.social.trending_tags(limit).await?;
    let origin = Origin::of(&state.mastodon, &headers);
    let now = crate::domain::now_ms();
    Ok(Json(
        tags.iter()
            .map(|counts| tag_with_history(&origin, counts, now))
            .collect(),
    ))
}

/// The older name of `/api/v1/trends/tags`.
#[utoipa::path(get, path = "/api/v1/trends", tag = "mastodon",
    params(TrendsQuery),
    responses(
        (status = 200, description = "The trending tags", body = Vec<Tag>),
        (status = 422, description = "A bad limit, or an offset past the first page", body = MastoErrorBody),
    ))]
pub async fn trends(
    state: State<AppState>,
    headers: HeaderMap,
    query: Query<TrendsQuery>,
) -> Result<Json<Vec<Tag>>, MastoError> {
    trending_tags(state, headers, query).await
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct SearchQuery {
    /// The start of an account id (`ali`, `@alice`, `alice@` this domain), the starts of
    /// words of a display name (`lidd`, `alice lid`, any case), or a hashtag (`rust`,
    /// `#rust`).
    pub q: String,
    /// `accounts`, `hashtags` or `statuses`; all when absent.
    #[param(value_type = Option<String>, pattern = "^(accounts|hashtags|statuses)$")]
    pub r#type: Option<String>,
    /// Ignored (nothing federates), but `true` needs a token, as on Mastodon.
    #[param(value_type = Option<bool>)]
    pub resolve: Option<String>,
    /// 1–40, default 20: the accounts found, at most (at most one tag matches).
    #[param(value_type = Option<u32>, minimum = 1)]
    pub limit: Option<String>,
    /// Past 0, nothing is found: every match is on the first page. Needs a token, as on
    /// Mastodon.
    #[param(value_type = Option<u32>)]
    pub offset: Option<String>,
}

/// Mastodon's Search entity.
#[derive(Debug, Serialize, ToSchema)]
pub struct SearchResults {
    pub accounts: Vec<Account>,
    /// Always empty: statuses are not searched.
    pub statuses: Vec<Value>,
    pub hashtags: Vec<Tag>,
}

/// Search accounts by id prefix (by id, so an exact match first), then by display-name
/// words (every word of `q` starts a word of the name; by word, then id), and a hashtag
/// by its name; statuses are not searched. Without a token, as on Mastodon, only without
/// `resolve` and `offset`.
#[utoipa::path(get, path = "/api/v2/search", tag = "mastodon",
    security((), ("bearer" = [])),
    params(SearchQuery),
    responses(
        (status = 200, description = "What was found", body = SearchResults),
        (status = 400, description = "No q", body = MastoErrorBody),
        (status = 401, description = "An invalid token, or none with resolve=true or an offset", body = MastoErrorBody),
        (status = 403, description = "The token lacks read:search", body = MastoErrorBody),
        (status = 422, description = "An unknown type, a bad limit or offset", body = MastoErrorBody),
    ))]
pub async fn search(
    State(state): State<AppState>,
    headers: HeaderMap,
    reader: MaybeScoped<ReadSearch>,
    Query(query): Query<SearchQuery>,
) -> Result<Json<SearchResults>, MastoError> {
    let limit = limit(query.limit.as_deref(), 20, 40)?;
    let offset = match query.offset.as_deref().filter(|o| !o.is_empty()) {
        None => 0,
        Some(raw) => raw.parse::<u64>().map_err(|_| {
            MastoError::unprocessable(format!("offset must be a whole number, got {raw:?}"))
        })?,
    };
    let resolve = matches!(query.resolve.as_deref(), Some("true" | "1" | "on"));
    if reader.0.is_none() && (resolve || query.offset.is_some()) {
        return Err(MastoError::new(
            StatusCode::UNAUTHORIZED,
            "Search queries that resolve or use offset require a token",
        ));
    }
    let what = match query.r#type.as_deref().filter(|t| !t.is_empty()) {
        None => SearchFor {
            accounts: true,
            hashtags: true,
        },
        Some("accounts") => SearchFor {
            accounts: true,
            hashtags: false,
        },
        Some("hashtags") => SearchFor {
            accounts: false,
            hashtags: true,
        },
        Some("statuses") => SearchFor {
            accounts: false,
            hashtags: false,
        },
        Some(other) => {
            return Err(MastoError::unprocessable(format!(
                "type must be accounts, hashtags or statuses, got {other:?}"
            )));
        }
    };
    let origin = Origin::of(&state.mastodon, &headers);
    let q = query.q.trim();
    // `alice@this.domain` is `alice`; another domain's account is not here.
    let q = match q.trim_start_matches('@').split_once('@') {
        Some((id, domain)) if domain.eq_ignore_ascii_case(origin.domain()) => id,
        Some(_) => "",
        None => q,
    };
    let found = match offset {
        0 if !q.is_empty() => state.social.search(q, what, limit).await?,
        _ => Default::default(),
    };
    let now = crate::domain::now_ms();
    Ok(Json(SearchResults {
        accounts: found
            .accounts
            .iter()
            .map(|u| Account::new(&origin, u))
            .collect(),
        statuses: Vec::new(),
        hashtags: found
            .tags
            .iter()
            .map(|counts| tag_with_history(&origin, counts, now))
            .collect(),
    }))
}
