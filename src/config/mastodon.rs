//! The Mastodon-compatible client API's settings (`[mastodon]`).

use std::time::Duration;

use anyhow::bail;
use serde::{Deserialize, Serialize};

use super::HumanDuration;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct MastodonConfig {
    /// Serve the Mastodon client API (`/api/v1`, `/api/v2`, `/oauth`, `/.well-known`,
    /// `/nodeinfo`) beside `/v1`.
    pub enabled: bool,
    /// The address clients reach this server at, such as `https://social.example`:
    /// named in the instance document, its streaming URL and pagination links. Unset,
    /// each response uses `http://` and the request's `Host`.
    pub public_url: Option<String>,
    /// The instance's title.
    pub title: String,
    /// Failed sign-ins (authorize page, password grant) one account may have within
    /// `signin_failure_window` before every sign-in to it is refused until the window
    /// ends. Counted in each process on its own.
    pub signin_failures_per_account: u32,
    /// The same, per client address.
    pub signin_failures_per_address: u32,
    /// How long failed sign-ins count, from the first.
    pub signin_failure_window: HumanDuration,
    /// MiB of rendered home timeline pages (as statuses) each process keeps; 0 keeps
    /// none.
    pub page_memo_mib: u32,
    /// How long a kept home page may be served after it was rendered: its counts and
    /// the viewer's likes made through other processes are at most this old; 0 keeps
    /// none.
    pub kept_page_max_age: HumanDuration,
}

impl Default for MastodonConfig {
    fn default() -> Self {
        MastodonConfig {
            enabled: true,
            public_url: None,
            title: "socialite".to_owned(),
            signin_failures_per_account: 5,
            signin_failures_per_address: 20,
            signin_failure_window: HumanDuration(Duration::from_secs(15 * 60)),
            page_memo_mib: 128,
            kept_page_max_age: HumanDuration(Duration::from_secs(10)),
        }
    }
}

impl MastodonConfig {
    pub(super) fn validate(&self) -> anyhow::Result<()> {
        if let Some(url) = &self.public_url {
            let rest = url
                .strip_prefix("https://")
                .or_else(|| url.strip_prefix("http://"));
            let Some(host) = rest else {
                bail!("mastodon.public_url must start with http:// or https://, got {url:?}");
            };
            if host.is_empty() || host.contains(['/', '?', '#', ' ']) {
                bail!(
                    "mastodon.public_url must be a scheme and a host (and port), with no \
                     path, got {url:?}"
                );
            }
        }
        let title = self.title.trim();
        if title.is_empty() || title.chars().count() > 100 {
            bail!("mastodon.title must be 1-100 characters, not all whitespace");
        }
        if self.signin_failures_per_account == 0 || self.signin_failures_per_address == 0 {
            bail!("mastodon.signin_failures_per_account and _per_address must be at least 1");
        }
        let window = self.signin_failure_window.0;
        if window < Duration::from_secs(1) || window > Duration::from_secs(24 * 3600) {
            bail!("mastodon.signin_failure_window must be 1s to 24h");
        }
        if self.page_memo_mib > 4096 {
            bail!(
                "mastodon.page_memo_mib must be at most 4096, got {}",
                self.page_memo_mib
            );
        }
        if self.kept_page_max_age.0 > Duration::from_secs(300) {
            bail!(
                "mastodon.kept_page_max_age must be at most 5m (it is how old a kept page's \
                 counts may be)"
            );
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_public_url_is_a_scheme_and_a_host() {
        let with = |url: &str| MastodonConfig {
            public_url: Some(url.to_owned()),
            ..MastodonConfig::default()
        };
        assert!(with("https://social.example").validate().is_ok());
        assert!(with("http://127.0.0.1:8080").validate().is_ok());
        for bad in [
            "social.example",
            "ftp://x",
            "https://",
            "https://x/path",
            "https://x?q",
        ] {
            assert!(with(bad).validate().is_err(), "{bad}");
        }
        let blank = MastodonConfig {
            title: "  ".to_owned(),
            ..MastodonConfig::default()
        };
        assert!(blank.validate().is_err());
    }
}
