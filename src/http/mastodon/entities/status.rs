//! The Status entity: a post, or a repost wrapping its original as `reblog`. Every
//! post is public; media, polls, cards and emojis are not served (empty or null).

use serde::Serialize;
use serde_json::Value;
use utoipa::ToSchema;

use super::account::profile_url;
use super::content::{self, Parsed};
use super::{Account, Tag};
use crate::domain::format_time_ms;
use crate::http::mastodon::{Origin, ids};
use crate::service::mastodon::StatusView;

/// A mentioned account, as the text names it.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Mention {
    /// The user id.
    pub id: String,
    pub username: String,
    pub url: String,
    pub acct: String,
}

/// Named `MastoStatus` in the OpenAPI document: `Status` is the health check's.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[schema(as = MastoStatus)]
pub struct Status {
    /// The post's id (a repost's own id for a repost): a decimal number without leading
    /// zeros, so ids sort as numbers, and by (length, then lexically), in creation order.
    #[schema(example = "31955090848581443178733764609")]
    pub id: String,
    #[schema(example = "2026-11-22T14:00:00.012Z")]
    pub created_at: String,
    pub in_reply_to_id: Option<String>,
    pub in_reply_to_account_id: Option<String>,
    pub sensitive: bool,
    pub spoiler_text: String,
    /// Always `public`.
    #[schema(example = "public")]
    pub visibility: &'static str,
    /// Always null (not recorded).
    pub language: Option<String>,
    pub uri: String,
    pub url: Option<String>,
    pub replies_count: u64,
    pub reblogs_count: u64,
    /// The standing likes, counted per page in one grouped read.
    pub favourites_count: u64,
    pub edited_at: Option<String>,
    /// Whether the viewer likes it.
    pub favourited: bool,
    /// Whether the viewer reposted it.
    pub reblogged: bool,
    pub muted: bool,
    pub bookmarked: bool,
    pub pinned: bool,
    /// HTML: the text escaped, in paragraphs, hashtags and mentions linked. Empty on a
    /// repost (the original's is in `reblog`).
    pub content: String,
    /// The original, on a repost.
    #[schema(no_recursion)]
    pub reblog: Option<Box<Status>>,
    pub account: Account,
    pub media_attachments: Vec<Value>,
    pub mentions: Vec<Mention>,
    pub tags: Vec<Tag>,
    pub emojis: Vec<Value>,
    pub card: Option<Value>,
    pub poll: Option<Value>,
    /// Always null (the posting app is not recorded).
    pub application: Option<Value>,
    /// The source text: only in the answer to a delete, for "delete and redraft".
    #[serde(skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
}

impl Status {
    /// The Status of `view` as its viewer sees it.
    pub fn new(origin: &Origin, view: &StatusView) -> Status {
        let post = &view.post;
        let author = &view.author;
        let id = ids::render(post.id);
        let parsed = Parsed::of(&post.text);
        let original = Status {
            created_at: format_time_ms(post.created_at_ms()),
            in_reply_to_id: post.reply_to.as_ref().map(|r| ids::render(r.post)),
            in_reply_to_account_id: post.reply_to.as_ref().map(|r| r.author.clone()),
            sensitive: false,
            spoiler_text: String::new(),
            visibility: "public",
            language: None,
            uri: status_uri(origin, &author.user.id, &id),
            url: Some(format!("{}/{id}", profile_url(origin, &author.user.id))),
            replies_count: post.replies_count,
            reblogs_count: post.reposts_count,
            favourites_count: view.favourites,
            edited_at: None,
            favourited: view.viewed.favourited,
            reblogged: view.viewed.reblogged,
            muted: false,
            bookmarked: false,
            pinned: false,
            content: content::render(origin, &post.text, &parsed),
            reblog: None,
            account: Account::new(origin, author),
            media_attachments: Vec::new(),
            mentions: parsed
                .mentions
                .iter()
                .map(|m| Mention {
                    id: m.clone(),
                    username: m.clone(),
                    url: profile_url(origin, m),
                    acct: m.clone(),
                })
                .collect(),
            tags: parsed.tags.iter().map(|t| Tag::new(origin, t)).collect(),
            emojis: Vec::new(),
            card: None,
            poll: None,
            application: None,
            text: None,
            id,
        };
        let Some(reblog) = &view.reblog else {
            return original;
        };
        let id = ids::render(reblog.id);
        Status {
            created_at: format_time_ms(reblog.id.timestamp_ms()),
            in_reply_to_id: None,
            in_reply_to_account_id: None,
            uri: format!("{}/activity", status_uri(origin, &reblog.by.user.id, &id)),
            url: None,
            replies_count: 0,
            reblogs_count: 0,
            content: String::new(),
            account: Account::new(origin, &reblog.by),
            mentions: Vec::new(),
            tags: Vec::new(),
            id,
            reblog: Some(Box::new(original.clone())),
            ..original
        }
    }

    /// With the source text, as a delete answers.
    pub fn with_text(mut self, text: String) -> Status {
        self.text = Some(text);
        self
    }
}

fn status_uri(origin: &Origin, author: &str, id: &str) -> String {
    format!("{}/users/{author}/statuses/{id}", origin.base())
}

/// A page of statuses, in order.
pub fn statuses(origin: &Origin, views: &[StatusView]) -> Vec<Status> {
    views.iter().map(|v| Status::new(origin, v)).collect()
}
