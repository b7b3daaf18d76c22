//! The Notification entity (v1) and the grouped shapes of `/api/v2/notifications`
//! (Mastodon 4.3). The engine's types map onto Mastodon's: `like` is `favourite`,
//! `repost` is `reblog`, and a `reply` is a `mention`, as Mastodon counts a reply.

use serde::Serialize;
use utoipa::ToSchema;

use super::{Account, Status};
use crate::domain::{NotificationType, format_time_ms};
use crate::http::mastodon::{Origin, ids};
use crate::service::masto_notifications::{GroupPage, NotificationItem};
use crate::service::notifications::GroupView;

/// Mastodon's name of an engine notification type.
pub fn masto_type(kind: NotificationType) -> &'static str {
    match kind {
        NotificationType::Follow => "follow",
        NotificationType::Like => "favourite",
        NotificationType::Repost => "reblog",
        NotificationType::Reply | NotificationType::Mention => "mention",
    }
}

/// The engine types a Mastodon type names (none for types this server never makes,
/// such as `poll` or `follow_request`).
pub fn engine_types(name: &str) -> &'static [NotificationType] {
    match name {
        "follow" => &[NotificationType::Follow],
        "favourite" => &[NotificationType::Like],
        "reblog" => &[NotificationType::Repost],
        "mention" => &[NotificationType::Reply, NotificationType::Mention],
        _ => &[],
    }
}

#[derive(Debug, Serialize, ToSchema)]
pub struct Notification {
    /// A decimal number without leading zeros, sorting (as a number, and by length then
    /// lexically) in creation order.
    #[schema(example = "31955090848581443178733764609")]
    pub id: String,
    /// `follow`, `favourite`, `reblog` or `mention`.
    #[serde(rename = "type")]
    #[schema(example = "favourite")]
    pub kind: &'static str,
    pub created_at: String,
    /// Who acted.
    pub account: Account,
    /// The status it is about; absent for follows.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<Status>,
}

impl Notification {
    pub fn new(origin: &Origin, item: &NotificationItem) -> Notification {
        Notification {
            id: ids::render(item.id),
            kind: masto_type(item.kind),
            created_at: format_time_ms(item.at_ms),
            account: Account::new(origin, &item.actor),
            status: item.status.as_ref().map(|s| Status::new(origin, s)),
        }
    }
}

/// A group of `/api/v2/notifications`.
#[derive(Debug, Serialize, ToSchema)]
pub struct NotificationGroup {
    /// `favourite-{status}`, `reblog-{status}`, `follow`, or for mentions (never
    /// grouped, as on Mastodon) `ungrouped-{notification id}`.
    pub group_key: String,
    pub notifications_count: u64,
    #[serde(rename = "type")]
    #[schema(example = "favourite")]
    pub kind: &'static str,
    pub most_recent_notification_id: String,
    /// The group's latest notification's id (only the latest is known per group).
    pub page_min_id: String,
    pub page_max_id: String,
    pub latest_page_notification_at: String,
    /// The latest actors, newest first, at most 3.
    pub sample_account_ids: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status_id: Option<String>,
}

impl NotificationGroup {
    pub fn new(group: &GroupView) -> NotificationGroup {
        let kind = masto_type(group.kind);
        let latest = ids::render(group.latest_id);
        let group_key = match (kind, group.post) {
            ("mention", _) => format!("ungrouped-{latest}"),
            (kind, Some(post)) => format!("{kind}-{}", ids::render(post)),
            (kind, None) => kind.to_owned(),
        };
        NotificationGroup {
            group_key,
            notifications_count: group.count,
            kind,
            page_min_id: latest.clone(),
            page_max_id: latest.clone(),
            most_recent_notification_id: latest,
            latest_page_notification_at: format_time_ms(group.latest_at_ms),
            sample_account_ids: group.actors.iter().map(|a| a.id.clone()).collect(),
            status_id: group.post.map(ids::render),
        }
    }
}

/// `/api/v2/notifications`: the groups, with the accounts and statuses they name once
/// each.
#[derive(Debug, Serialize, ToSchema)]
pub struct GroupedNotifications {
    pub accounts: Vec<Account>,
    pub statuses: Vec<Status>,
    pub notification_groups: Vec<NotificationGroup>,
}

impl GroupedNotifications {
    pub fn new(origin: &Origin, page: &GroupPage) -> GroupedNotifications {
        GroupedNotifications {
            accounts: page
                .actors
                .iter()
                .map(|u| Account::new(origin, u))
                .collect(),
            statuses: page
                .statuses
                .iter()
                .map(|s| Status::new(origin, s))
                .collect(),
            notification_groups: page.groups.iter().map(NotificationGroup::new).collect(),
        }
    }
}
