//! Paging of account lists (followers, following, blocks, mutes, favourited_by,
//! reblogged_by): `max_id`, `since_id` and `min_id` are the opaque cursors the `Link`
//! header names (each list has its own form), `limit` 1–80 (default 40, larger taken as
//! 80, as Mastodon does). `max_id` pages on (cut at `since_id`), `min_id` is the page
//! just before (not with `max_id`: 422, as on the timelines). The `Link` header names
//! `next` first, then `prev` (the page's first item as `min_id`).

use axum::http::HeaderValue;
use serde::Deserialize;
use utoipa::IntoParams;

use super::Origin;
use super::error::MastoError;
use crate::service::ListRange;

pub const DEFAULT_ACCOUNTS: usize = 40;
pub const MAX_ACCOUNTS: usize = 80;

#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct AccountPaging {
    /// The accounts after this cursor (the `Link`'s `next`).
    #[param(value_type = Option<String>)]
    pub max_id: Option<String>,
    /// Only the accounts ahead of this cursor (the newest page, cut there).
    #[param(value_type = Option<String>)]
    pub since_id: Option<String>,
    /// The page just ahead of this cursor (the `Link`'s `prev`), in the list's order.
    /// Not with `max_id` (422).
    #[param(value_type = Option<String>)]
    pub min_id: Option<String>,
    /// 1–80, default 40; larger values are taken as 80.
    #[param(value_type = Option<u32>, minimum = 1)]
    pub limit: Option<String>,
}

fn present(value: &Option<String>) -> Option<&str> {
    value.as_deref().filter(|v| !v.is_empty())
}

impl AccountPaging {
    /// The page asked for, its cursors read by `cursor` (a cursor it does not read is
    /// 422), and the page size.
    pub fn parse<C>(
        &self,
        cursor: impl Fn(&str) -> Option<C>,
    ) -> Result<(ListRange<C>, usize), MastoError> {
        let limit = match present(&self.limit) {
            None => DEFAULT_ACCOUNTS,
            Some(raw) => match raw.parse::<u64>() {
                Ok(n) if n >= 1 => usize::try_from(n).unwrap_or(MAX_ACCOUNTS).min(MAX_ACCOUNTS),
                _ => {
                    return Err(MastoError::unprocessable(format!(
                        "limit must be a positive integer, got {raw:?}"
                    )));
                }
            },
        };
        let read = |name: &str, raw: Option<&str>| {
            raw.map(|raw| {
                cursor(raw).ok_or_else(|| {
                    MastoError::unprocessable(format!(
                        "{name} must be a cursor a page's Link named, got {raw:?}"
                    ))
                })
            })
            .transpose()
        };
        let before = read("max_id", present(&self.max_id))?;
        let since = read("since_id", present(&self.since_id))?;
        let range = match read("min_id", present(&self.min_id))? {
            Some(_) if before.is_some() => {
                return Err(MastoError::unprocessable(
                    "min_id with max_id is not supported: page with one of them",
                ));
            }
            // `since_id` lies behind `min_id` on any page ahead of `min_id`.
            Some(after) => ListRange::Newer { after },
            None => ListRange::Older { before, since },
        };
        Ok((range, limit))
    }
}

/// `<{base}{path}?limit=..&max_id=..>; rel="next"` when more may follow, then
/// `<...min_id=..>; rel="prev"` when the page has a first item; `None` when neither.
pub fn cursor_link(
    origin: &Origin,
    path: &str,
    limit: usize,
    next: Option<&str>,
    prev: Option<&str>,
) -> Option<HeaderValue> {
    let url = |key: &str, cursor: &str| {
        let query =
            serde_urlencoded::to_string([("limit", limit.to_string()), (key, cursor.to_owned())])
                .unwrap_or_default();
        format!("<{}{path}?{query}>", origin.base())
    };
    let mut links = Vec::new();
    if let Some(next) = next {
        links.push(format!("{}; rel=\"next\"", url("max_id", next)));
    }
    if let Some(prev) = prev {
        links.push(format!("{}; rel=\"prev\"", url("min_id", prev)));
    }
    if links.is_empty() {
        return None;
    }
    HeaderValue::from_str(&links.join(", ")).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::{HeaderMap, StatusCode};

    fn some(raw: &str) -> Option<String> {
        Some(raw.to_owned())
    }

    #[test]
    fn limits_are_clamped_and_cursors_read_both_ways() {
        let id = |raw: &str| Some(raw.to_owned());
        let paging = |limit: &str| AccountPaging {
            limit: some(limit),
            ..Default::default()
        };
        assert_eq!(paging("5").parse(id).unwrap().1, 5);
        assert_eq!(paging("500").parse(id).unwrap().1, MAX_ACCOUNTS);
        assert_eq!(
            AccountPaging::default().parse(id).unwrap(),
            (ListRange::older(None), DEFAULT_ACCOUNTS)
        );
        assert!(paging("0").parse(id).is_err());
        assert!(paging("many").parse(id).is_err());
        let newer = AccountPaging {
            min_id: some("bob"),
            since_id: some("al"),
            ..Default::default()
        };
        let after = "bob".to_owned();
        assert_eq!(newer.parse(id).unwrap().0, ListRange::Newer { after });
        let since = AccountPaging {
            since_id: some("al"),
            max_id: some("zed"),
            ..Default::default()
        };
        let (before, since_id) = (some("zed"), some("al"));
        assert_eq!(
            since.parse(id).unwrap().0,
            ListRange::Older {
                before,
                since: since_id
            }
        );
        let both = AccountPaging {
            max_id: some("zed"),
            ..newer
        };
        let refused = both.parse(id).unwrap_err().status();
        assert_eq!(refused, StatusCode::UNPROCESSABLE_ENTITY);
        let unread = AccountPaging {
            since_id: some("x"),
            ..Default::default()
        };
        assert!(unread.parse(|_| None::<u8>).is_err());
    }

    #[test]
    fn next_comes_first_then_prev() {
        let settings = super::super::Settings {
            public_url: some("https://s.example"),
            title: "t".to_owned(),
        };
        let origin = Origin::of(&settings, &HeaderMap::new());
        let link = cursor_link(&origin, "/api/v1/blocks", 2, Some("5_b"), Some("9_a")).unwrap();
        assert_eq!(
            link.to_str().unwrap(),
            "<https://s.example/api/v1/blocks?limit=2&max_id=5_b>; rel=\"next\", \
             <https://s.example/api/v1/blocks?limit=2&min_id=9_a>; rel=\"prev\""
        );
        assert!(cursor_link(&origin, "/x", 2, None, None).is_none());
    }
}
