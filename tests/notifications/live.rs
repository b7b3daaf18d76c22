//! The live stream carries the user's new notifications, by the worker's rules: a
//! follow, a like of their post (not their own), a mention, a reply; each with the id
//! the list gives it.

use std::time::Duration;

use reqwest::StatusCode;
use serde_json::json;

use crate::common::{TestServer, event_log_kinds, fresh_config};
use crate::sse::Client;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_live_stream_carries_new_notifications() {
    for kind in event_log_kinds("the_live_stream_carries_new_notifications").await {
        let server = TestServer::start(fresh_config(kind)).await;
        let api = server.api();
        for u in ["al", "bo"] {
            api.user(u).await;
        }
        let p = api.say("al", "mine").await;
        let token = api.credentials().token("al");
        let mut stream = Client::open(&server.client, &server.base, "al", token, None).await;
        // al's own like notifies nobody; bo's follow, like and mention notify al.
        assert_eq!(
            api.put(&format!("/v1/users/al/likes/{p}")).await.0,
            StatusCode::NO_CONTENT
        );
        assert_eq!(
            api.put("/v1/users/bo/following/al").await.0,
            StatusCode::NO_CONTENT
        );
        assert_eq!(
            api.put(&format!("/v1/users/bo/likes/{p}")).await.0,
            StatusCode::NO_CONTENT
        );
        let m = api.say("bo", "hi @al").await;
        let (status, reply) = api
            .post(
                "/v1/users/bo/posts",
                json!({ "text": "an answer", "in_reply_to": p }),
            )
            .await;
        assert_eq!(status, StatusCode::CREATED, "{reply}");
        let r = reply["id"].as_str().unwrap().to_owned();
        let mut got = Vec::new();
        while got.len() < 4 {
            // A missing notification fails here rather than hanging the run.
            let message = tokio::time::timeout(Duration::from_secs(60), stream.next())
                .await
                .unwrap_or_else(|_| panic!("{kind:?}: only {got:?} arrived"))
                .unwrap();
            if message.event == "notification" {
                assert!(message.id.is_some(), "{message:?}");
                got.push(message.data);
            } else {
                assert_eq!(message.event, "item", "{message:?}");
            }
        }
        let summary: Vec<(&str, &str, Option<&str>)> = got
            .iter()
            .map(|n| {
                (
                    n["type"].as_str().unwrap(),
                    n["actor"]["id"].as_str().unwrap(),
                    n["post_id"].as_str(),
                )
            })
            .collect();
        assert_eq!(
            summary,
            [
                ("follow", "bo", None),
                ("like", "bo", Some(p.as_str())),
                ("mention", "bo", Some(m.as_str())),
                ("reply", "bo", Some(r.as_str()))
            ],
            "{kind:?}"
        );
        // The same ids as the list.
        server.settle().await;
        let (_, page) = api.get("/v1/users/al/notifications").await;
        let listed: Vec<&str> = page["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|n| n["id"].as_str().unwrap())
            .collect();
        let live: Vec<&str> = got
            .iter()
            .rev()
            .map(|n| n["id"].as_str().unwrap())
            .collect();
        assert_eq!(listed, live, "{kind:?}");
        server.stop().await;
    }
}
