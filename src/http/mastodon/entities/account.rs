//! The Account entity: a user as Mastodon clients read one. Ids are user ids, and a
//! local account's `acct` and `username` are its id too. Avatars and headers are one
//! placeholder image this server serves ([`placeholder_image`]).

use axum::http::header;
use axum::response::IntoResponse;
use serde::Serialize;
use serde_json::Value;
use utoipa::ToSchema;

use crate::domain::{AccountView, format_time_ms};
use crate::http::mastodon::Origin;

/// The placeholder avatar's path, as Mastodon names its own.
pub const AVATAR_PATH: &str = "/avatars/original/missing.png";
/// The placeholder header's path.
pub const HEADER_PATH: &str = "/headers/original/missing.png";

/// A 1×1 grey PNG.
const PLACEHOLDER_PNG: [u8; 67] = [
    0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x48, 0x44, 0x52,
    0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x00, 0x00, 0x00, 0x00, 0x3a, 0x7e, 0x9b,
    0x55, 0x00, 0x00, 0x00, 0x0a, 0x49, 0x44, 0x41, 0x54, 0x78, 0x9c, 0x63, 0x58, 0x00, 0x00, 0x00,
    0xa2, 0x00, 0xa1, 0xdc, 0x8d, 0xb1, 0xcc, 0x00, 0x00, 0x00, 0x00, 0x49, 0x45, 0x4e, 0x44, 0xae,
    0x42, 0x60, 0x82,
];

/// The placeholder avatar and header every account points at.
#[utoipa::path(get, path = "/avatars/original/missing.png", tag = "mastodon",
    responses((status = 200, description = "A 1×1 PNG", content_type = "image/png")))]
pub async fn placeholder_image() -> impl IntoResponse {
    (
        [
            (header::CONTENT_TYPE, "image/png"),
            (header::CACHE_CONTROL, "public, max-age=86400"),
        ],
        PLACEHOLDER_PNG.as_slice(),
    )
}

/// What `verify_credentials` adds for the account's own user.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct AccountSource {
    pub privacy: String,
    pub sensitive: bool,
    pub language: Option<String>,
    pub note: String,
    pub fields: Vec<Value>,
    pub follow_requests_count: u64,
}

impl AccountSource {
    pub fn defaults() -> Self {
        AccountSource {
            privacy: "public".to_owned(),
            sensitive: false,
            language: None,
            note: String::new(),
            fields: Vec::new(),
            follow_requests_count: 0,
        }
    }
}

/// Mastodon's Account entity, as far as this server has its fields.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Account {
    /// The user id.
    #[schema(example = "alice")]
    pub id: String,
    #[schema(example = "alice")]
    pub username: String,
    /// The user id (no domain: a local account).
    #[schema(example = "alice")]
    pub acct: String,
    pub display_name: String,
    pub locked: bool,
    pub bot: bool,
    pub group: bool,
    pub discoverable: bool,
    #[schema(example = "2026-11-22T14:00:00.012Z")]
    pub created_at: String,
    /// Always empty: profiles have no note.
    pub note: String,
    pub url: String,
    pub avatar: String,
    pub avatar_static: String,
    pub header: String,
    pub header_static: String,
    pub followers_count: u64,
    pub following_count: u64,
    pub statuses_count: u64,
    /// The UTC date of the account's newest post or repost that exists, `YYYY-MM-DD`;
    /// null when it has none. As of the read that rendered it.
    #[schema(example = "2026-11-22")]
    pub last_status_at: Option<String>,
    pub emojis: Vec<Value>,
    pub fields: Vec<Value>,
    /// Only for the account's own user (verify_credentials).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source: Option<AccountSource>,
}

impl Account {
    /// The Account entity of `account`, with the placeholder avatar and header.
    pub fn new(origin: &Origin, account: &AccountView) -> Account {
        let user = &account.user;
        let base = origin.base();
        let avatar = format!("{base}{AVATAR_PATH}");
        let header = format!("{base}{HEADER_PATH}");
        Account {
            id: user.id.clone(),
            username: user.id.clone(),
            acct: user.id.clone(),
            display_name: user.display_name.clone(),
            locked: false,
            bot: false,
            group: false,
            discoverable: true,
            created_at: format_time_ms(user.created_at_ms),
            note: String::new(),
            url: profile_url(origin, &user.id),
            avatar_static: avatar.clone(),
            avatar,
            header_static: header.clone(),
            header,
            followers_count: user.followers_count,
            following_count: user.following_count,
            statuses_count: user.posts_count,
            last_status_at: account.last_status_date(),
            emojis: Vec::new(),
            fields: Vec::new(),
            source: None,
        }
    }

    /// With `source`, as `verify_credentials` answers.
    pub fn credential(origin: &Origin, account: &AccountView) -> Account {
        Account {
            source: Some(AccountSource::defaults()),
            ..Account::new(origin, account)
        }
    }
}

/// A user's profile address: `{base}/@{id}`.
pub fn profile_url(origin: &Origin, id: &str) -> String {
    format!("{}/@{id}", origin.base())
}
