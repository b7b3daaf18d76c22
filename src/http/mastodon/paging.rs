//! Paging of account lists (followers, following, blocks, mutes): `max_id` is the
//! opaque cursor the previous page's `Link` named, `limit` 1–80 (default 40, larger
//! taken as 80, as Mastodon does). These lists run oldest id first, so only `next`
//! links exist: `since_id` and `min_id` are refused (422) rather than ignored.

use axum::http::HeaderValue;
use serde::Deserialize;
use utoipa::IntoParams;

use super::Origin;
use super::error::MastoError;

pub const DEFAULT_ACCOUNTS: usize = 40;
pub const MAX_ACCOUNTS: usize = 80;

#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct AccountPaging {
    /// The cursor from the previous page's `Link`.
    #[param(value_type = Option<String>)]
    pub max_id: Option<String>,
    /// Not supported on account lists (422).
    #[param(value_type = Option<String>)]
    pub since_id: Option<String>,
    /// Not supported on account lists (422).
    #[param(value_type = Option<String>)]
    pub min_id: Option<String>,
    /// 1–80, default 40; larger values are taken as 80.
    #[param(value_type = Option<u32>, minimum = 1)]
    pub limit: Option<String>,
}

impl AccountPaging {
    /// The cursor and the page size.
    pub fn parse(&self) -> Result<(Option<String>, usize), MastoError> {
        let limit = match self.limit.as_deref().filter(|l| !l.is_empty()) {
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
        for (name, value) in [("since_id", &self.since_id), ("min_id", &self.min_id)] {
            if value.as_deref().is_some_and(|v| !v.is_empty()) {
                return Err(MastoError::unprocessable(format!(
                    "{name} is not supported on account lists: page with max_id"
                )));
            }
        }
        let cursor = self.max_id.clone().filter(|c| !c.is_empty());
        Ok((cursor, limit))
    }
}

/// `<{base}{path}?limit=..&max_id=..>; rel="next"` when more may follow.
pub fn cursor_link(
    origin: &Origin,
    path: &str,
    limit: usize,
    next: Option<&str>,
) -> Option<HeaderValue> {
    let next = next?;
    let query =
        serde_urlencoded::to_string([("limit", limit.to_string()), ("max_id", next.to_owned())])
            .unwrap_or_default();
    HeaderValue::from_str(&format!("<{}{path}?{query}>; rel=\"next\"", origin.base())).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_are_clamped_and_newer_pages_refused() {
        let paging = |limit: &str| AccountPaging {
            limit: Some(limit.to_owned()),
            ..Default::default()
        };
        assert_eq!(paging("5").parse().unwrap().1, 5);
        assert_eq!(paging("500").parse().unwrap().1, MAX_ACCOUNTS);
        assert_eq!(
            AccountPaging::default().parse().unwrap(),
            (None, DEFAULT_ACCOUNTS)
        );
        assert!(paging("0").parse().is_err());
        assert!(paging("many").parse().is_err());
        let newer = AccountPaging {
            since_id: Some("bob".to_owned()),
            ..Default::default()
        };
        assert!(newer.parse().is_err());
    }
}
