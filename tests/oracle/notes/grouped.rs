//! `GET /api/v2/notifications`, Mastodon 4.3's grouped notifications, as the `/v1`
//! groups they stand for: each `notification_groups` entry a group `{type, post_id,
//! latest_id, count, actors}` (its type and status mapped as a Notification's are, by
//! `masto::notification_item`), so that the v2 view meets the checks `/v1`'s groups
//! meet, during the run and at convergence. The shape's own rules are checked on the
//! way: `page_min_id` and `page_max_id` are the group's latest notification, every
//! sampled account and the group's status are in the page's `accounts` and `statuses`,
//! and `group_key` is `{type}-{status}` (`follow` alone, a mention `ungrouped-{id}`).

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Value, json};

use super::super::cluster::Target;
use super::super::masto::{self, Page};
use super::super::world::World;

/// The `/v1` groups of one v2 answer, and what is wrong with its shape.
pub fn groups_of(user: &str, body: &Value) -> (Vec<Value>, Vec<String>) {
    let mut faults = Vec::new();
    let accounts: BTreeSet<&str> = body["accounts"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|a| a["id"].as_str())
        .collect();
    let statuses: BTreeMap<&str, &Value> = body["statuses"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|s| Some((s["id"].as_str()?, s)))
        .collect();
    let mut groups = Vec::new();
    for g in body["notification_groups"].as_array().into_iter().flatten() {
        let latest = g["most_recent_notification_id"]
            .as_str()
            .unwrap_or_default();
        let kind = g["type"].as_str().unwrap_or_default();
        let status_id = g["status_id"].as_str();
        let actors: Vec<&str> = g["sample_account_ids"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        let key = match (kind, status_id) {
            ("mention", _) => format!("ungrouped-{latest}"),
            (kind, Some(s)) => format!("{kind}-{s}"),
            (kind, None) => kind.to_owned(),
        };
        let status = status_id.and_then(|s| statuses.get(s)).copied();
        if g["page_min_id"] != g["most_recent_notification_id"]
            || g["page_max_id"] != g["most_recent_notification_id"]
            || g["group_key"].as_str() != Some(key.as_str())
            || actors.iter().any(|a| !accounts.contains(a))
            || (status_id.is_some() && status.is_none())
            || (kind != "follow" && status_id.is_none())
        {
            faults.push(format!(
                "{user}'s v2 group not in its documented shape: {g}"
            ));
        }
        let as_notification = json!({
            "id": latest,
            "type": kind,
            "account": { "id": actors.first().copied().unwrap_or_default() },
            "status": status.cloned().unwrap_or(Value::Null),
        });
        let mut item = masto::notification_item(user, &as_notification);
        let mut group = json!({
            "type": item["type"].take(),
            "latest_id": item["id"].take(),
            "count": g["notifications_count"],
            "actors": actors.iter().map(|a| json!({ "id": a })).collect::<Vec<_>>(),
        });
        if status.is_some() {
            group["post_id"] = item["post_id"].take();
            group["status"] = item["status"].take();
        }
        groups.push(group);
    }
    (groups, faults)
}

/// One page of v2 groups at `path`; `None` when the process was down or busy. A shape
/// that breaks the rules is a violation.
pub async fn read_v2(
    world: &World,
    target: &Target,
    path: &str,
    token: &str,
    user: &str,
) -> Option<Page> {
    let (body, link) = world.read_linked(target, path, Some(token)).await?;
    let (items, faults) = groups_of(user, &body);
    for fault in faults {
        world
            .model()
            .violation(format!("{path} via {}: {fault}", target.slot));
    }
    Some(Page {
        items,
        next: masto::next_path(link.as_deref()),
    })
}

/// Every v2 group of `user`'s, walked by the `Link` header's `next` (a page that times
/// out or answers 503 asked again, up to four times), as `/v1` groups.
pub async fn walk_v2(world: &World, target: &Target, user: &str) -> Result<Vec<Value>, String> {
    let token = world.masto_token(user);
    let mut groups = Vec::new();
    let mut next = Some("/api/v2/notifications?limit=40".to_owned());
    while let Some(path) = next.take() {
        let mut attempt = 0;
        let page = loop {
            attempt += 1;
            if let Some(page) = world.read_linked(target, &path, Some(&token)).await {
                break page;
            }
            if attempt >= 4 {
                return Err(format!("GET {path} (v2) failed"));
            }
            tokio::time::sleep(std::time::Duration::from_millis(500)).await;
        };
        let (items, faults) = groups_of(user, &page.0);
        if !faults.is_empty() {
            return Err(faults.join("; "));
        }
        groups.extend(items);
        next = masto::next_path(page.1.as_deref());
        if groups.len() > 100_000 {
            return Err(format!("{user}'s v2 groups never end"));
        }
    }
    Ok(groups)
}
