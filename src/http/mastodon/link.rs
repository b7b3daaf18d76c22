//! Mastodon's paging: `max_id`, `since_id`, `min_id` and `limit` in, and a `Link`
//! header out with `next` first (`<url>; rel="next", <url>; rel="prev"`), which toot
//! requires (it matches only a header that starts with the next link).

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use utoipa::IntoParams;

use super::Origin;
use super::error::MastoError;
use crate::domain::PostId;
use crate::service::mastodon::HomeRange;

/// The largest page: Mastodon's for statuses and notifications.
pub const MAX_LIMIT: usize = 40;
pub const DEFAULT_LIMIT: usize = 20;

/// The paging parameters of a Mastodon list.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct PageParams {
    /// Only items older than this id (exclusive).
    #[param(value_type = Option<String>, pattern = "^(0|[1-9][0-9]{0,28})$")]
    pub max_id: Option<String>,
    /// Only items newer than this id (the newest page, cut there).
    #[param(value_type = Option<String>, pattern = "^(0|[1-9][0-9]{0,28})$")]
    pub since_id: Option<String>,
    /// The page just above this id (the oldest items above it, newest first). Not with
    /// `max_id` (422).
    #[param(value_type = Option<String>, pattern = "^(0|[1-9][0-9]{0,28})$")]
    pub min_id: Option<String>,
    /// 1–40, default 20; larger values are taken as 40, as Mastodon does.
    #[param(value_type = Option<u32>, minimum = 1)]
    pub limit: Option<String>,
}

fn id(name: &str, raw: Option<&str>) -> Result<Option<PostId>, MastoError> {
    raw.filter(|r| !r.is_empty())
        .map(|raw| {
            super::ids::parse_cursor(raw).ok_or_else(|| {
                MastoError::unprocessable(format!(
                    "{name} must be a status id (a decimal number), got {raw:?}"
                ))
            })
        })
        .transpose()
}

impl PageParams {
    /// The page of a list read newest first (a timeline, notifications, an account's
    /// statuses) asked for, and its length.
    pub fn home_range(&self) -> Result<(HomeRange, usize), MastoError> {
        let limit = self.limit()?;
        let before = id("max_id", self.max_id.as_deref())?;
        let since = id("since_id", self.since_id.as_deref())?;
        let range = match id("min_id", self.min_id.as_deref())? {
            Some(_) if before.is_some() => {
                return Err(MastoError::unprocessable(
                    "min_id with max_id is not supported: page with one of them",
                ));
            }
            // `since_id` lies at or below `min_id` on any page above `min_id`.
            Some(after) => HomeRange::Newer { after },
            None => HomeRange::Older { before, since },
        };
        Ok((range, limit))
    }

    fn limit(&self) -> Result<usize, MastoError> {
        Ok(match self.limit.as_deref().filter(|l| !l.is_empty()) {
            None => DEFAULT_LIMIT,
            Some(raw) => match raw.parse::<u64>() {
                Ok(n) if n >= 1 => usize::try_from(n).unwrap_or(MAX_LIMIT).min(MAX_LIMIT),
                _ => {
                    return Err(MastoError::unprocessable(format!(
                        "limit must be a positive integer, got {raw:?}"
                    )));
                }
            },
        })
    }
}

/// The `Link` header of a page of `path` (with `extra` query pairs kept, such as
/// `types[]`): `next` below `next_max_id` when more may follow, then `prev` above
/// `prev_min_id` (the page's newest id) when the page has items. `None` when neither.
pub fn link_header(
    origin: &Origin,
    path: &str,
    extra: &[(&str, String)],
    limit: usize,
    next_max_id: Option<PostId>,
    prev_min_id: Option<PostId>,
) -> Option<HeaderValue> {
    let url = |key: &str, id: PostId| {
        let mut pairs: Vec<(&str, String)> = extra.to_vec();
        pairs.push(("limit", limit.to_string()));
        pairs.push((key, super::ids::render(id)));
        let query = serde_urlencoded::to_string(&pairs).unwrap_or_default();
        format!("{}{path}?{query}", origin.base())
    };
    let mut links = Vec::new();
    if let Some(id) = next_max_id {
        links.push(format!("<{}>; rel=\"next\"", url("max_id", id)));
    }
    if let Some(id) = prev_min_id {
        links.push(format!("<{}>; rel=\"prev\"", url("min_id", id)));
    }
    if links.is_empty() {
        return None;
    }
    HeaderValue::from_str(&links.join(", ")).ok()
}

/// `body` as a response, with its page's `Link` header when it has one.
pub fn linked(body: impl IntoResponse, link: Option<HeaderValue>) -> Response {
    match link {
        Some(link) => ([(header::LINK, link)], body).into_response(),
        None => body.into_response(),
    }
}

/// A 422 for a list parameter outside the allowed values.
pub fn bad_value(name: &str, value: &str) -> MastoError {
    MastoError::new(
        StatusCode::UNPROCESSABLE_ENTITY,
        format!("{name} has an unknown value {value:?}"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http::mastodon::Settings;
    use axum::http::HeaderMap;

    #[test]
    fn next_comes_first_and_keeps_the_other_parameters() {
        let settings = Settings {
            public_url: Some("https://s.example".to_owned()),
            title: "t".to_owned(),
        };
        let origin = Origin::of(&settings, &HeaderMap::new());
        let a: PostId = "6740a1b2000c000000000001".parse().unwrap();
        let b: PostId = "6740a1b2000c000000000009".parse().unwrap();
        let link = link_header(
            &origin,
            "/api/v1/notifications",
            &[("types[]", "follow".to_owned())],
            20,
            Some(a),
            Some(b),
        )
        .unwrap();
        assert_eq!(
            link.to_str().unwrap(),
            "<https://s.example/api/v1/notifications?types%5B%5D=follow&limit=20&max_id=31955090848581443178733764609>; rel=\"next\", \
             <https://s.example/api/v1/notifications?types%5B%5D=follow&limit=20&min_id=31955090848581443178733764617>; rel=\"prev\""
        );
        assert!(link_header(&origin, "/x", &[], 20, None, None).is_none());
    }

    #[test]
    fn limits_are_clamped_and_min_id_is_not_taken_with_max_id() {
        let params = |limit: &str| PageParams {
            limit: Some(limit.to_owned()),
            ..Default::default()
        };
        assert_eq!(params("5").home_range().unwrap().1, 5);
        assert_eq!(params("400").home_range().unwrap().1, MAX_LIMIT);
        assert_eq!(PageParams::default().home_range().unwrap().1, 20);
        assert!(params("0").home_range().is_err());
        assert!(params("x").home_range().is_err());
        let (a, b) = (
            "31955090848581443178733764609",
            "31955090848581443178733764617",
        );
        let newer = PageParams {
            min_id: Some(a.to_owned()),
            since_id: Some(b.to_owned()),
            ..Default::default()
        };
        let after = "6740a1b2000c000000000001".parse().unwrap();
        assert_eq!(newer.home_range().unwrap().0, HomeRange::Newer { after });
        let both = PageParams {
            max_id: Some(b.to_owned()),
            ..newer
        };
        assert_eq!(
            both.home_range().unwrap_err().status(),
            StatusCode::UNPROCESSABLE_ENTITY
        );
        let hex = PageParams {
            max_id: Some("6740a1b2000c000000000001".to_owned()),
            ..Default::default()
        };
        assert_eq!(
            hex.home_range().unwrap_err().status(),
            StatusCode::UNPROCESSABLE_ENTITY
        );
    }
}
