//! Replies and threads through the API, on both stores: `in_reply_to` on a new post,
//! reply counts, `GET /v1/posts/{id}/context`, and the home-timeline rule for replies
//! under every strategy (including a page kept across an unfollow).

mod common;

use common::{TestServer, fresh_config, kinds};
use reqwest::StatusCode;
use serde_json::{Value, json};
use socialite::domain::{FeedStrategy, MAX_ANCESTORS, MAX_DESCENDANTS};

async fn server(kind: common::Kind, strategy: FeedStrategy) -> TestServer {
    let mut test = fresh_config(kind);
    test.config.feed.strategy = strategy;
    test.config.rate.writes_per_min = 1_000_000;
    TestServer::start(test).await
}

async fn reply(api: &common::Api, author: &str, text: &str, parent: &str) -> String {
    let (status, body) = api
        .post(
            &format!("/v1/users/{author}/posts"),
            json!({ "text": text, "in_reply_to": parent }),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    assert_eq!(body["reply_to"]["post"], parent, "{body}");
    body["id"].as_str().unwrap().to_owned()
}

async fn post(api: &common::Api, id: &str) -> Value {
    let (status, body) = api.get(&format!("/v1/posts/{id}")).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    body
}

fn ids(items: &Value) -> Vec<String> {
    items
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["id"].as_str().unwrap().to_owned())
        .collect()
}

async fn timeline(api: &common::Api, user: &str, limit: usize) -> Vec<String> {
    let (status, body) = api
        .get(&format!("/v1/users/{user}/timeline?limit={limit}"))
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    ids(&body["items"])
}

#[tokio::test]
async fn a_reply_names_an_existing_post_and_moves_its_count() {
    for kind in kinds("replies") {
        let server = server(kind, FeedStrategy::Cache).await;
        let api = server.api();
        for user in ["ann", "bob"] {
            api.user(user).await;
        }
        let root = api.say("ann", "root").await;
        // Malformed: 422 like every malformed value in a body; unknown: 404.
        let (status, body) = api
            .post(
                "/v1/users/bob/posts",
                json!({ "text": "x", "in_reply_to": "nope" }),
            )
            .await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{kind:?}: {body}");
        let unknown = "6740a1b2000c000000000001";
        let (status, body) = api
            .post(
                "/v1/users/bob/posts",
                json!({ "text": "x", "in_reply_to": unknown }),
            )
            .await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{kind:?}: {body}");
        assert_eq!(post(&api, &root).await["replies_count"], 0);

        let first = reply(&api, "bob", "first", &root).await;
        let second = reply(&api, "ann", "second", &root).await;
        let body = post(&api, &first).await;
        assert_eq!(body["reply_to"], json!({ "post": root, "author": "ann" }));
        assert_eq!(post(&api, &root).await["replies_count"], 2, "{kind:?}");
        let (_, page) = api.get("/v1/users/ann/posts").await;
        let listed = page["items"].as_array().unwrap();
        assert_eq!(listed[1]["id"], root.as_str());
        assert_eq!(listed[1]["replies_count"], 2, "{kind:?}: {page}");
        assert!(listed[0].get("reply_to").is_some());
        assert!(listed[1].get("reply_to").is_none(), "only replies carry it");

        // Deleting a reply moves the count down.
        assert_eq!(
            api.delete(&format!("/v1/posts/{second}")).await.0,
            StatusCode::NO_CONTENT
        );
        assert_eq!(post(&api, &root).await["replies_count"], 1, "{kind:?}");
        // Deleting the parent keeps the reply, which still names it.
        assert_eq!(
            api.delete(&format!("/v1/posts/{root}")).await.0,
            StatusCode::NO_CONTENT
        );
        let kept = post(&api, &first).await;
        assert_eq!(kept["reply_to"], json!({ "post": root, "author": "ann" }));
        // And its thread still answers, naming the deleted post.
        let (status, context) = api.get(&format!("/v1/posts/{first}/context")).await;
        assert_eq!(status, StatusCode::OK, "{context}");
        assert_eq!(context["ancestors"], json!([]));
        assert_eq!(
            context["missing_ancestor"],
            json!({ "post": root, "author": "ann" })
        );
        server.stop().await;
    }
}

#[tokio::test]
async fn a_context_is_root_first_above_and_depth_first_below() {
    for kind in kinds("replies") {
        let server = server(kind, FeedStrategy::Cache).await;
        let api = server.api();
        for user in ["ann", "bob"] {
            api.user(user).await;
        }
        let root = api.say("ann", "root").await;
        let c1 = reply(&api, "bob", "c1", &root).await;
        let c2 = reply(&api, "ann", "c2", &c1).await;
        let d2 = reply(&api, "bob", "d2", &c1).await;
        let c3 = reply(&api, "bob", "c3", &c2).await;
        let e1 = reply(&api, "ann", "e1", &root).await;

        let (status, context) = api.get(&format!("/v1/posts/{root}/context")).await;
        assert_eq!(status, StatusCode::OK, "{context}");
        assert_eq!(ids(&context["ancestors"]), Vec::<String>::new());
        assert_eq!(
            ids(&context["descendants"]),
            vec![c1.clone(), c2.clone(), c3.clone(), d2.clone(), e1.clone()],
            "{kind:?}: depth first, children oldest first"
        );
        assert_eq!(context["descendants_truncated"], false);
        assert_eq!(context["ancestors_truncated"], false);
        assert_eq!(context["missing_ancestor"], Value::Null);

        let (_, context) = api.get(&format!("/v1/posts/{c3}/context")).await;
        assert_eq!(
            ids(&context["ancestors"]),
            vec![root.clone(), c1.clone(), c2.clone()],
            "{kind:?}: root first"
        );
        assert_eq!(ids(&context["descendants"]), Vec::<String>::new());

        // A deleted ancestor: the chain stops there and names it.
        assert_eq!(
            api.delete(&format!("/v1/posts/{c1}")).await.0,
            StatusCode::NO_CONTENT
        );
        let (_, context) = api.get(&format!("/v1/posts/{c3}/context")).await;
        assert_eq!(ids(&context["ancestors"]), vec![c2.clone()], "{kind:?}");
        assert_eq!(
            context["missing_ancestor"],
            json!({ "post": c1, "author": "bob" })
        );
        // The root's descendants below the deleted reply are no longer reachable.
        let (_, context) = api.get(&format!("/v1/posts/{root}/context")).await;
        assert_eq!(ids(&context["descendants"]), vec![e1.clone()], "{kind:?}");
        // An unknown post has no context.
        let (status, _) = api.get(&format!("/v1/posts/{c1}/context")).await;
        assert_eq!(status, StatusCode::NOT_FOUND);
        server.stop().await;
    }
}

#[tokio::test]
async fn a_context_says_when_it_was_cut() {
    for kind in kinds("replies") {
        let server = server(kind, FeedStrategy::Cache).await;
        let api = server.api();
        api.user("ann").await;
        // A chain one longer than the ancestors served.
        let mut chain = vec![api.say("ann", "0").await];
        for i in 1..=MAX_ANCESTORS + 1 {
            let next = reply(&api, "ann", &i.to_string(), chain.last().unwrap()).await;
            chain.push(next);
        }
        let last = chain.last().unwrap();
        let (_, context) = api.get(&format!("/v1/posts/{last}/context")).await;
        let ancestors = ids(&context["ancestors"]);
        assert_eq!(ancestors.len(), MAX_ANCESTORS, "{kind:?}");
        assert_eq!(
            ancestors,
            chain[1..=MAX_ANCESTORS].to_vec(),
            "the nearest kept"
        );
        assert_eq!(context["ancestors_truncated"], true);
        let (_, context) = api.get(&format!("/v1/posts/{}/context", chain[1])).await;
        assert_eq!(context["ancestors_truncated"], false);
        assert_eq!(ids(&context["ancestors"]), vec![chain[0].clone()]);

        // One more reply than the descendants served.
        let root = api.say("ann", "root").await;
        let mut replies = Vec::new();
        for i in 0..=MAX_DESCENDANTS {
            replies.push(reply(&api, "ann", &format!("r{i}"), &root).await);
        }
        let (_, context) = api.get(&format!("/v1/posts/{root}/context")).await;
        assert_eq!(
            ids(&context["descendants"]),
            replies[..MAX_DESCENDANTS].to_vec(),
            "{kind:?}"
        );
        assert_eq!(context["descendants_truncated"], true);
        let gone = replies.pop().unwrap();
        assert_eq!(
            api.delete(&format!("/v1/posts/{gone}")).await.0,
            StatusCode::NO_CONTENT
        );
        let (_, context) = api.get(&format!("/v1/posts/{root}/context")).await;
        assert_eq!(ids(&context["descendants"]).len(), MAX_DESCENDANTS);
        assert_eq!(
            context["descendants_truncated"], false,
            "{kind:?}: exactly the bound"
        );
        server.stop().await;
    }
}

/// Mastodon's rule, under every strategy: a reply reaches a follower's home timeline
/// only when they also follow the author of the post it answers, are that author, or
/// the reply answers its own author; decided at read time by the current follows.
#[tokio::test]
async fn a_reply_reaches_home_timelines_by_mastodons_rule() {
    for kind in kinds("replies") {
        for strategy in FeedStrategy::ALL {
            let server = server(kind, strategy).await;
            let api = server.api();
            for user in ["reader", "ann", "pat"] {
                api.user(user).await;
            }
            for (follower, followee) in [("reader", "ann"), ("pat", "ann")] {
                let (status, _) = api
                    .put(&format!("/v1/users/{follower}/following/{followee}"))
                    .await;
                assert!(status.is_success());
            }
            let what = format!("{kind:?} {strategy:?}");
            let parent = api.say("pat", "a question").await;
            let fillers = [
                api.say("ann", "f1").await,
                api.say("ann", "f2").await,
                api.say("ann", "f3").await,
            ];
            let answer = reply(&api, "ann", "an answer", &parent).await;
            let more = reply(&api, "ann", "and more", &answer).await;
            // The question goes: the answer still names pat, and no follow or unfollow
            // of pat below writes any timeline entry of pat's.
            let (status, _) = api.delete(&format!("/v1/posts/{parent}")).await;
            assert_eq!(status, StatusCode::NO_CONTENT);
            server.settle().await;

            // The reader follows ann only: the answer to pat is hidden, ann's
            // self-thread shown.
            let read = timeline(&api, "reader", 20).await;
            assert!(!read.contains(&answer), "{what}: {read:?}");
            assert!(read.contains(&more), "{what}: a self-thread: {read:?}");
            assert!(read.contains(&fillers[2]), "{what}");
            // pat, whose post it answers, sees it.
            let read = timeline(&api, "pat", 20).await;
            assert!(
                read.contains(&answer),
                "{what}: the parent's author: {read:?}"
            );

            // Once the reader follows pat, it shows at once (a first page read just
            // before included).
            let _ = timeline(&api, "reader", 2).await;
            let _ = timeline(&api, "reader", 2).await;
            let (status, _) = api.put("/v1/users/reader/following/pat").await;
            assert!(status.is_success());
            let read = timeline(&api, "reader", 20).await;
            assert!(read.contains(&answer), "{what}: follows both: {read:?}");
            assert_eq!(
                timeline(&api, "reader", 2).await,
                vec![more.clone(), answer.clone()],
                "{what}"
            );

            // A page kept while it showed the answer stops at the unfollow, even once
            // the workers have settled every mark.
            let kept = timeline(&api, "reader", 2).await;
            assert_eq!(kept, timeline(&api, "reader", 2).await);
            let (status, _) = api.delete("/v1/users/reader/following/pat").await;
            assert!(status.is_success());
            server.settle().await;
            assert_eq!(
                timeline(&api, "reader", 2).await,
                vec![more.clone(), fillers[2].clone()],
                "{what}: the unfollow hides the answer again"
            );
            server.stop().await;
        }
    }
}

/// `post.created` of a reply names what it answers, as the post's change-feed document
/// does (embedded: the MongoDB stand-in keeps no event log).
#[tokio::test]
async fn a_replys_event_names_what_it_answers() {
    let server = server(common::Kind::Embedded, FeedStrategy::Cache).await;
    let api = server.api();
    for user in ["ann", "bob"] {
        api.user(user).await;
    }
    let root = api.say("ann", "root").await;
    let answer = reply(&api, "bob", "answer", &root).await;
    server.settle().await;
    let (status, page) = api.get("/v1/events?limit=1000").await;
    assert_eq!(status, StatusCode::OK, "{page}");
    let created = |id: &str| {
        page["events"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["type"] == "post.created" && e["payload"]["post"] == id)
            .cloned()
            .unwrap_or_else(|| panic!("no post.created of {id}: {page}"))
    };
    assert_eq!(
        created(&answer)["payload"]["in_reply_to"],
        json!({ "post": root, "author": "ann" })
    );
    assert!(created(&root)["payload"].get("in_reply_to").is_none());
    server.stop().await;
}
