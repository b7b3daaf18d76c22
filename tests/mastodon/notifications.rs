//! Notifications on real servers, both stores: Mastodon's types (a reply is a
//! `mention`), `types[]` and `exclude_types[]`, a `Link` walk, the grouped v2 shape, and
//! `min_id` pages with their `prev` links, plain and grouped.

use reqwest::StatusCode;
use serde_json::Value;

use super::client::Masto;
use crate::common::{TestServer, fresh_config, kinds};

fn types(items: &Value) -> Vec<&str> {
    items
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["type"].as_str().unwrap())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn notifications_come_in_mastodon_types_plain_and_grouped() {
    for kind in kinds("notifications_come_in_mastodon_types_plain_and_grouped") {
        let server = TestServer::start(fresh_config(kind)).await;
        let api = server.api();
        for u in ["al", "bo", "cy", "dy", "ev"] {
            api.user(u).await;
        }
        let token = |u: &str| api.token(u);
        let masto = Masto::of(&server);
        let post = masto.toot(&token("al"), "hello").await["id"]
            .as_str()
            .unwrap()
            .to_owned();
        let (status, _) = api.put("/v1/users/bo/following/al").await;
        assert_eq!(status, StatusCode::NO_CONTENT);
        let act = |u: &str, action: &str| {
            let (path, token) = (format!("/api/v1/statuses/{post}/{action}"), token(u));
            let masto = &masto;
            async move {
                let answer = masto.form(&path, &token, &[]).await;
                assert_eq!(answer.status, StatusCode::OK, "{}", answer.body);
            }
        };
        act("bo", "favourite").await;
        act("cy", "reblog").await;
        act("cy", "favourite").await;
        let reply = masto
            .form(
                "/api/v1/statuses",
                &token("dy"),
                &[("status", "a reply"), ("in_reply_to_id", &post)],
            )
            .await
            .body["id"]
            .as_str()
            .unwrap()
            .to_owned();
        let mention = masto.toot(&token("ev"), "hey @al").await["id"]
            .as_str()
            .unwrap()
            .to_owned();
        server.settle().await;

        let al = token("al");
        let all = masto.get("/api/v1/notifications", Some(&al)).await;
        assert_eq!(all.status, StatusCode::OK, "{kind:?}: {}", all.body);
        assert_eq!(
            types(&all.body),
            [
                "mention",
                "mention",
                "favourite",
                "reblog",
                "favourite",
                "follow"
            ],
            "{kind:?}: {}",
            all.body
        );
        let n = &all.body;
        assert_eq!(n[0]["account"]["id"], "ev");
        assert_eq!(n[0]["status"]["id"], mention.as_str());
        assert_eq!(n[1]["account"]["id"], "dy");
        assert_eq!(n[1]["status"]["id"], reply.as_str());
        assert_eq!(n[1]["status"]["in_reply_to_id"], post.as_str());
        assert_eq!(n[2]["status"]["id"], post.as_str());
        assert!(n[5].get("status").is_none(), "a follow names no status");
        assert_eq!(n[5]["account"]["id"], "bo");
        for item in n.as_array().unwrap() {
            assert_eq!(item["id"].as_str().unwrap().len(), 29, "a decimal id");
        }

        let only = |query: &str| {
            let masto = &masto;
            let al = al.clone();
            let path = format!("/api/v1/notifications?{query}");
            async move { masto.get(&path, Some(&al)).await }
        };
        assert_eq!(
            types(&only("types[]=mention").await.body),
            ["mention", "mention"]
        );
        assert_eq!(
            types(
                &only("exclude_types[]=mention&exclude_types[]=follow")
                    .await
                    .body
            ),
            ["favourite", "reblog", "favourite"]
        );
        assert!(types(&only("types[]=poll").await.body).is_empty());

        // A walk by Link, two at a time, keeping the type filter.
        let mut walked = Vec::new();
        let mut page = only("limit=2&exclude_types[]=follow").await;
        loop {
            assert_eq!(page.status, StatusCode::OK);
            let items = page.body.as_array().unwrap().clone();
            if items.is_empty() {
                break;
            }
            walked.extend(items);
            let Some(next) = page.link_path("next", masto.base()) else {
                break;
            };
            assert!(next.contains("exclude_types%5B%5D=follow"), "{next}");
            page = masto.get(&next, Some(&al)).await;
        }
        let walked_types: Vec<&str> = walked.iter().map(|n| n["type"].as_str().unwrap()).collect();
        assert_eq!(
            walked_types,
            ["mention", "mention", "favourite", "reblog", "favourite"]
        );

        // since_id: the newest page cut there; min_id with max_id is refused (422).
        let newest_two: Vec<&str> = n.as_array().unwrap()[..2]
            .iter()
            .map(|i| i["id"].as_str().unwrap())
            .collect();
        let since = only(&format!("since_id={}", n[2]["id"].as_str().unwrap())).await;
        let since_ids: Vec<&str> = since
            .body
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i["id"].as_str().unwrap())
            .collect();
        assert_eq!(since_ids, newest_two);
        assert!(
            since.link_path("next", masto.base()).is_none(),
            "{}",
            since.link()
        );
        let (a, b) = (n[2]["id"].as_str().unwrap(), n[0]["id"].as_str().unwrap());
        let both = only(&format!("min_id={a}&max_id={b}")).await;
        assert_eq!(
            both.status,
            StatusCode::UNPROCESSABLE_ENTITY,
            "{}",
            both.body
        );

        // Grouped: both likes make one group; mentions stay one each.
        let grouped = masto.get("/api/v2/notifications", Some(&al)).await;
        assert_eq!(grouped.status, StatusCode::OK, "{}", grouped.body);
        let groups = &grouped.body["notification_groups"];
        assert_eq!(
            types(groups),
            ["mention", "mention", "favourite", "reblog", "follow"],
            "{kind:?}: {}",
            grouped.body
        );
        let likes = &groups[2];
        assert_eq!(likes["notifications_count"], 2);
        assert_eq!(likes["group_key"], format!("favourite-{post}"));
        assert_eq!(likes["sample_account_ids"], serde_json::json!(["cy", "bo"]));
        assert_eq!(likes["status_id"], post.as_str());
        assert!(
            groups[0]["group_key"]
                .as_str()
                .unwrap()
                .starts_with("ungrouped-")
        );
        let mut accounts: Vec<&str> = grouped.body["accounts"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a["id"].as_str().unwrap())
            .collect();
        accounts.sort_unstable();
        assert_eq!(accounts, ["bo", "cy", "dy", "ev"]);
        let statuses = grouped.body["statuses"].as_array().unwrap();
        for id in [&post, &reply, &mention] {
            assert!(
                statuses.iter().any(|s| s["id"] == id.as_str()),
                "{id} in {statuses:?}"
            );
        }
        server.stop().await;
    }
}

fn ids(items: &Value, key: &str) -> Vec<String> {
    items
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n[key].as_str().unwrap().to_owned())
        .collect()
}

/// `min_id` is the page just above it, newest first, plain and grouped: five mentions,
/// `min_id` at the second oldest with `limit=2` is the next two newer. `prev` names the
/// page's newest, `next` its oldest, and following `prev` reaches the newest.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn min_id_pages_just_above_it_newest_first() {
    for kind in kinds("min_id_pages_just_above_it_newest_first") {
        let server = TestServer::start(fresh_config(kind)).await;
        let api = server.api();
        for u in ["al", "bo"] {
            api.user(u).await;
        }
        let masto = Masto::of(&server);
        let bo = api.token("bo");
        for i in 0..5 {
            masto.toot(&bo, &format!("hey @al number {i}")).await;
        }
        server.settle().await;
        let al = api.token("al");
        let base = masto.base();
        let all = masto.get("/api/v1/notifications", Some(&al)).await;
        let n = ids(&all.body, "id");
        assert_eq!(n.len(), 5, "{kind:?}: {}", all.body);

        for (path, items, key) in [
            ("/api/v1/notifications", "", "id"),
            (
                "/api/v2/notifications",
                "notification_groups",
                "page_max_id",
            ),
        ] {
            let page = masto
                .get(&format!("{path}?limit=2&min_id={}", n[3]), Some(&al))
                .await;
            assert_eq!(
                page.status,
                StatusCode::OK,
                "{kind:?} {path}: {}",
                page.body
            );
            let body = if items.is_empty() {
                &page.body
            } else {
                &page.body[items]
            };
            assert_eq!(
                ids(body, key),
                [n[1].as_str(), n[2].as_str()],
                "{kind:?} {path}"
            );
            let prev = page.link_path("prev", base).unwrap_or_default();
            assert!(
                prev.contains(&format!("min_id={}", n[1])),
                "{kind:?}: {prev}"
            );
            let next = page.link_path("next", base).unwrap_or_default();
            assert!(
                next.contains(&format!("max_id={}", n[2])),
                "{kind:?}: {next}"
            );
            let link = page.link();
            assert!(
                link.find("\"next\"") < link.find("\"prev\""),
                "{kind:?}: {link}"
            );
            let top = masto.get(&prev, Some(&al)).await;
            let body = if items.is_empty() {
                &top.body
            } else {
                &top.body[items]
            };
            assert_eq!(
                ids(body, key),
                [n[0].as_str()],
                "{kind:?} {path}: the newest"
            );
        }
        // Nothing above the newest: an empty page with no links.
        let none = masto
            .get(&format!("/api/v1/notifications?min_id={}", n[0]), Some(&al))
            .await;
        assert_eq!(none.body, serde_json::json!([]), "{kind:?}");
        server.stop().await;
    }
}
