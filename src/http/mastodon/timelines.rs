//! `GET /api/v1/timelines/home`, `/public` and `/tag/:hashtag`: the engine's home
//! timeline and listings as statuses, paged with `max_id`, `since_id` or `min_id` and a
//! `Link` header (next first). The public and tag timelines are readable without a
//! token, as Mastodon's are by default; with one, the authors hidden from its user are
//! left out.

use std::borrow::Cow;

use axum::extract::{Path, State};
use axum::http::{HeaderMap, HeaderValue, header};
use axum::response::{AppendHeaders, IntoResponse, Response};
use bytes::Bytes;

use super::Origin;
use serde::Deserialize;
use utoipa::IntoParams;

use super::auth::{MaybeScoped, ReadStatuses, Scoped};
use super::entities::{Status, status::statuses};
use super::error::{MastoError, MastoErrorBody};
use super::link::{PageParams, link_header, linked};
use crate::http::error::{Json, Query};
use crate::http::{AppState, gzip};
use crate::service::mastodon::{HomeRange, StatusPage, cut_at_since};
use crate::store::PostRange;

/// The caller's home timeline: their posts and reposts and those of everyone they
/// follow, newest first, each post at most once: the newest below `max_id` (cut at
/// `since_id`), or with `min_id` the page just above it, still newest first.
#[utoipa::path(get, path = "/api/v1/timelines/home", tag = "mastodon",
    params(PageParams),
    security(("bearer" = [])),
    responses(
        (status = 200, description = "A page of statuses; `Link` has the next page first, then the previous",
            body = Vec<Status>, headers(
                ("Link" = String, description = "`<...max_id=X>; rel=\"next\", <...min_id=Y>; rel=\"prev\"`"),
                ("Content-Encoding" = String, description = "`gzip` on a page without `since_id` and `min_id` when `Accept-Encoding` admits gzip; absent otherwise"),
                ("Vary" = String, description = "`Accept-Encoding` on a page without `since_id` and `min_id`"))),
        (status = 401, description = "No valid token", body = MastoErrorBody),
        (status = 403, description = "The token lacks read:statuses", body = MastoErrorBody),
        (status = 422, description = "A bad limit or id, min_id with max_id, or an app's token", body = MastoErrorBody),
    ))]
pub async fn home(
    State(state): State<AppState>,
    headers: HeaderMap,
    auth: Scoped<ReadStatuses>,
    Query(params): Query<PageParams>,
) -> Result<Response, MastoError> {
    let user = auth.user()?;
    let (range, limit) = params.home_range()?;
    let origin = Origin::of(&state.mastodon, &headers);
    if let HomeRange::Older {
        before,
        since: None,
    } = range
    {
        let gzip = gzip::accepts_gzip(&headers);
        let form = match gzip {
            true => Cow::Owned(format!("{}\ngzip", origin.base())),
            false => Cow::Borrowed(origin.base()),
        };
        let kept = state
            .social
            .rendered_home_statuses(user, before, limit, &form, |page| {
                kept_body(&origin, limit, &page, gzip)
            })
            .await?;
        return Ok(kept_response(kept, gzip));
    }
    let page = state.social.home_statuses(user, range, limit).await?;
    let link = link_header(
        &origin,
        "/api/v1/timelines/home",
        &[],
        limit,
        page.next,
        page.items.first().map(|s| s.id()),
    );
    Ok(linked(Json(statuses(&origin, &page.items)), link))
}

/// A home page as it is kept: its `Link` value, a newline, then its JSON (which has no
/// raw newline), gzipped when `gzip`, so that a kept page answers with both.
fn kept_body(
    origin: &Origin,
    limit: usize,
    page: &StatusPage,
    gzip: bool,
) -> anyhow::Result<Bytes> {
    let link = link_header(
        origin,
        "/api/v1/timelines/home",
        &[],
        limit,
        page.next,
        page.items.first().map(|s| s.id()),
    );
    let mut body = link.map_or_else(Vec::new, |l| l.as_bytes().to_vec());
    body.push(b'\n');
    let json = serde_json::to_vec(&statuses(origin, &page.items))?;
    match gzip {
        true => body.extend_from_slice(&gzip::gzip(&json)?),
        false => body.extend_from_slice(&json),
    }
    Ok(body.into())
}

/// The response of a [`kept_body`]. It names `Accept-Encoding` in `Vary` either way,
/// since the body depends on it.
fn kept_response(kept: Bytes, gzip: bool) -> Response {
    let split = kept.iter().position(|b| *b == b'\n').unwrap_or(0);
    let body = kept.slice((split + 1).min(kept.len())..);
    let link = HeaderValue::from_maybe_shared(kept.slice(..split))
        .ok()
        .filter(|l| !l.is_empty());
    let encoding = gzip.then_some((header::CONTENT_ENCODING, "gzip"));
    let headers = [
        (header::CONTENT_TYPE, "application/json"),
        (header::VARY, "Accept-Encoding"),
    ];
    linked((headers, AppendHeaders(encoding), body), link)
}

/// What the public timeline takes besides paging.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct PublicParams {
    /// Accepted: every post here is local.
    #[param(value_type = Option<bool>)]
    pub local: Option<String>,
    /// Accepted: true answers nothing (every post here is local).
    #[param(value_type = Option<bool>)]
    pub remote: Option<String>,
    /// Accepted: true answers nothing (no post has media).
    #[param(value_type = Option<bool>)]
    pub only_media: Option<String>,
}

fn is_true(value: Option<&str>) -> bool {
    matches!(value, Some("true" | "1" | "on"))
}

/// A listing page's range, and the `since_id` that cuts an older page.
fn listing_range(
    params: &PageParams,
) -> Result<(PostRange, Option<crate::domain::PostId>, usize), MastoError> {
    let (range, limit) = params.home_range()?;
    let (range, since) = range.split();
    Ok((range, since, limit))
}

/// A listing page as a response, cut at `since` and with its `Link` header: next (the
/// page below its oldest status) first, then prev (above its newest).
fn listing_response(
    origin: &Origin,
    path: &str,
    extra: &[(&str, String)],
    range: PostRange,
    since: Option<crate::domain::PostId>,
    limit: usize,
    mut page: StatusPage,
) -> Response {
    let next = match range {
        PostRange::Older(_) => cut_at_since(&mut page.items, page.next, since, |s| s.id()),
        // A page above `min_id`: older statuses lie below its oldest one.
        PostRange::Newer(_) => page.items.last().map(|s| s.id()),
    };
    let link = link_header(
        origin,
        path,
        extra,
        limit,
        next,
        page.items.first().map(|s| s.id()),
    );
    linked(Json(statuses(origin, &page.items)), link)
}

/// The public timeline: every post, replies included, newest first. Readable without
/// a token; with one, the authors hidden from its user are left out.
#[utoipa::path(get, path = "/api/v1/timelines/public", tag = "mastodon",
    params(PublicParams, PageParams),
    security((), ("bearer" = [])),
    responses(
        (status = 200, description = "A page of statuses; `Link` has the next page first, then the previous",
            body = Vec<Status>, headers(
                ("Link" = String, description = "`<...max_id=X>; rel=\"next\", <...min_id=Y>; rel=\"prev\"`"),
                ("Content-Encoding" = String, description = "`gzip` on a page without `since_id` and `min_id` when `Accept-Encoding` admits gzip; absent otherwise"),
                ("Vary" = String, description = "`Accept-Encoding` on a page without `since_id` and `min_id`"))),
        (status = 401, description = "An invalid token (tokens are optional)", body = MastoErrorBody),
        (status = 403, description = "The token lacks read:statuses", body = MastoErrorBody),
        (status = 422, description = "A bad limit or id, or min_id with max_id", body = MastoErrorBody),
    ))]
pub async fn public(
    State(state): State<AppState>,
    headers: HeaderMap,
    reader: MaybeScoped<ReadStatuses>,
    Query(filter): Query<PublicParams>,
    Query(params): Query<PageParams>,
) -> Result<Response, MastoError> {
    let (range, since, limit) = listing_range(&params)?;
    let origin = Origin::of(&state.mastodon, &headers);
    if is_true(filter.only_media.as_deref()) || is_true(filter.remote.as_deref()) {
        return Ok(Json(Vec::<Status>::new()).into_response());
    }
    let page = state
        .social
        .public_statuses(reader.viewer(), range, limit)
        .await?;
    let mut extra = Vec::new();
    if is_true(filter.local.as_deref()) {
        extra.push(("local", "true".to_owned()));
    }
    let path = "/api/v1/timelines/public";
    Ok(listing_response(
        &origin, path, &extra, range, since, limit, page,
    ))
}

/// The statuses carrying a hashtag (matched case-insensitively), newest first. Readable
/// without a token; with one, the authors hidden from its user are left out.
#[utoipa::path(get, path = "/api/v1/timelines/tag/{hashtag}", tag = "mastodon",
    params(("hashtag" = String, Path, description = "The tag, without `#`"), PageParams),
    security((), ("bearer" = [])),
    responses(
        (status = 200, description = "A page of statuses; `Link` has the next page first, then the previous",
            body = Vec<Status>, headers(
                ("Link" = String, description = "`<...max_id=X>; rel=\"next\", <...min_id=Y>; rel=\"prev\"`"),
                ("Content-Encoding" = String, description = "`gzip` on a page without `since_id` and `min_id` when `Accept-Encoding` admits gzip; absent otherwise"),
                ("Vary" = String, description = "`Accept-Encoding` on a page without `since_id` and `min_id`"))),
        (status = 401, description = "An invalid token (tokens are optional)", body = MastoErrorBody),
        (status = 403, description = "The token lacks read:statuses", body = MastoErrorBody),
        (status = 422, description = "Not a tag (1 to 64 letters, digits or _), a bad limit or id, or min_id with max_id", body = MastoErrorBody),
    ))]
pub async fn tag(
    State(state): State<AppState>,
    headers: HeaderMap,
    reader: MaybeScoped<ReadStatuses>,
    Path(hashtag): Path<String>,
    Query(params): Query<PageParams>,
) -> Result<Response, MastoError> {
    let (range, since, limit) = listing_range(&params)?;
    let tag = hashtag.trim_start_matches('#').to_lowercase();
    let page = state
        .social
        .tagged_statuses(reader.viewer(), &tag, range, limit)
        .await?;
    let origin = Origin::of(&state.mastodon, &headers);
    let path = format!("/api/v1/timelines/tag/{tag}");
    Ok(listing_response(
        &origin,
        &path,
        &[],
        range,
        since,
        limit,
        page,
    ))
}
