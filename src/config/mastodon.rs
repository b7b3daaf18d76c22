//! The Mastodon-compatible client API's settings (`[mastodon]`).

use anyhow::bail;
use serde::{Deserialize, Serialize};

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
}

impl Default for MastodonConfig {
    fn default() -> Self {
        MastodonConfig {
            enabled: true,
            public_url: None,
            title: "socialite".to_owned(),
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
