//! The Tag entity: a hashtag, as a status names it.

use serde::Serialize;
use serde_json::Value;
use utoipa::ToSchema;

use crate::http::mastodon::Origin;

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Tag {
    /// Lower-cased, without the `#`.
    #[schema(example = "rust")]
    pub name: String,
    pub url: String,
    /// Always empty: no usage history is served with a tag.
    pub history: Vec<Value>,
}

impl Tag {
    pub fn new(origin: &Origin, name: &str) -> Tag {
        Tag {
            url: tag_url(origin, name),
            name: name.to_owned(),
            history: Vec::new(),
        }
    }
}

/// `{base}/tags/{name}`.
pub fn tag_url(origin: &Origin, name: &str) -> String {
    format!("{}/tags/{name}", origin.base())
}
