//! Notifications on real servers, both stores: Mastodon's types (a reply is a
//! `mention`), `types[]` and `exclude_types[]`, a `Link` walk, and the grouped v2 shape.

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
            assert_eq!(item["id"].as_str().unwrap().len(), 24);
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
