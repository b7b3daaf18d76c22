//! `GET /v1/users/{id}/notifications` on a real server: the JSON of each item and of a
//! group, the owner alone may read, type filters, bad parameters as 422, paging by
//! `next_cursor`; and the lag from a like's 2xx to its notification, printed.

use std::time::{Duration, Instant};

use reqwest::StatusCode;
use serde_json::Value;

use crate::common::{As, TestServer, fresh_config, kinds};

fn types(items: &[Value]) -> Vec<&str> {
    items.iter().map(|i| i["type"].as_str().unwrap()).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_api_serves_notifications_plain_grouped_and_filtered() {
    for kind in kinds("the_api_serves_notifications_plain_grouped_and_filtered") {
        let server = TestServer::start(fresh_config(kind)).await;
        let api = server.api();
        for u in ["al", "bo", "cy"] {
            api.user(u).await;
        }
        let p = api.say("al", "hello").await;
        assert_eq!(
            api.put("/v1/users/bo/following/al").await.0,
            StatusCode::NO_CONTENT
        );
        for u in ["bo", "cy", "al"] {
            let (status, body) = api.put(&format!("/v1/users/{u}/likes/{p}")).await;
            assert_eq!(status, StatusCode::NO_CONTENT, "{body}");
        }
        let m = api.say("cy", "hi @al").await;
        server.settle().await;

        let (status, page) = api.get("/v1/users/al/notifications").await;
        assert_eq!(status, StatusCode::OK, "{kind:?}: {page}");
        let items = page["items"].as_array().unwrap();
        assert_eq!(
            types(items),
            ["mention", "like", "like", "follow"],
            "{kind:?}: {page}"
        );
        let mention = &items[0];
        assert_eq!(mention["actor"]["id"], "cy");
        assert!(
            mention["actor"]["display_name"].as_str().is_some(),
            "{mention}"
        );
        assert_eq!(mention["post_id"], m.as_str());
        assert!(mention["id"].as_str().unwrap().len() == 24, "{mention}");
        assert!(
            mention["created_at"].as_str().unwrap().ends_with('Z'),
            "{mention}"
        );
        assert!(
            items[3].get("post_id").is_none(),
            "a follow names no post: {}",
            items[3]
        );
        assert!(page["next_cursor"].is_null());

        // Grouped: the two likes are one group, naming the latest likers first.
        let (_, grouped) = api.get("/v1/users/al/notifications?grouped=true").await;
        let groups = grouped["groups"].as_array().unwrap();
        assert_eq!(
            types(groups),
            ["mention", "like", "follow"],
            "{kind:?}: {grouped}"
        );
        assert_eq!(groups[1]["count"], 2);
        assert_eq!(groups[1]["post_id"], p.as_str());
        let actors: Vec<&str> = groups[1]["actors"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a["id"].as_str().unwrap())
            .collect();
        assert_eq!(actors, ["cy", "bo"], "{kind:?}");
        assert!(grouped.get("items").is_none());

        // Filters and paging.
        let (_, likes) = api
            .get("/v1/users/al/notifications?types=like,follow&exclude_types=follow")
            .await;
        assert_eq!(types(likes["items"].as_array().unwrap()), ["like", "like"]);
        let walked = api
            .walk("/v1/users/al/notifications?limit=1", "before")
            .await;
        assert_eq!(
            types(&walked),
            ["mention", "like", "like", "follow"],
            "{kind:?}"
        );
        let (_, page) = api
            .get("/v1/users/al/notifications?limit=1&grouped=true")
            .await;
        let next = page["next_cursor"].as_str().unwrap();
        let (_, rest) = api
            .get(&format!(
                "/v1/users/al/notifications?grouped=true&before={next}"
            ))
            .await;
        assert_eq!(
            types(rest["groups"].as_array().unwrap()),
            ["like", "follow"]
        );

        // Others may not read them; bad parameters are 422.
        let bo = api.token("bo");
        let (status, _) = api
            .send_as(
                As::Token(&bo),
                reqwest::Method::GET,
                "/v1/users/al/notifications",
                None,
            )
            .await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{kind:?}");
        for bad in [
            "types=likes",
            "exclude_types=follow,like,repost,reply,mention",
            "grouped=yes",
            "limit=0",
            "before=zz",
        ] {
            let (status, body) = api.get(&format!("/v1/users/al/notifications?{bad}")).await;
            assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{bad}: {body}");
        }

        // Undone causes are no longer served.
        api.delete(&format!("/v1/users/bo/likes/{p}")).await;
        api.delete("/v1/users/bo/following/al").await;
        api.delete(&format!("/v1/posts/{m}")).await;
        server.settle().await;
        let (_, page) = api.get("/v1/users/al/notifications").await;
        let items = page["items"].as_array().unwrap();
        assert_eq!(types(items), ["like"], "{kind:?}: {page}");
        assert_eq!(items[0]["actor"]["id"], "cy");

        // The lag: from a like's 204 to its notification being served, polled.
        let mut lags = Vec::new();
        for i in 0..20 {
            let u = format!("lag{i}");
            api.user(&u).await;
            let started = Instant::now();
            api.put(&format!("/v1/users/{u}/likes/{p}")).await;
            loop {
                let (_, page) = api
                    .get("/v1/users/al/notifications?limit=1&types=like")
                    .await;
                if page["items"][0]["actor"]["id"] == u.as_str() {
                    break;
                }
                assert!(started.elapsed() < Duration::from_secs(30), "never served");
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
            lags.push(started.elapsed());
        }
        lags.sort();
        eprintln!(
            "notification lag on {kind:?} (20 likes, like's 2xx to served): median {:?}, max {:?}",
            lags[10], lags[19]
        );
        server.stop().await;
    }
}
