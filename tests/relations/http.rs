//! The routes: owner-only writes and lists, the refused follow as problem+json, mute
//! bodies, and the blocked caller's reads of the blocker's posts.

use reqwest::{Method, StatusCode};
use serde_json::json;

use crate::common::{As, Kind, TestServer, fresh_config, kinds};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn blocks_and_mutes_over_http() {
    for kind in kinds("blocks_and_mutes_over_http") {
        let server = TestServer::start(fresh_config(kind)).await;
        let api = server.api();
        for id in ["ann", "bob", "cat"] {
            api.user(id).await;
        }
        assert_eq!(
            api.put("/v1/users/bob/following/ann").await.0,
            StatusCode::NO_CONTENT
        );
        let post = api.say("ann", "for my followers").await;
        let bob = api.token("bob");

        assert_eq!(
            api.put("/v1/users/ann/blocks/bob").await.0,
            StatusCode::NO_CONTENT
        );
        assert_eq!(
            api.put("/v1/users/ann/blocks/bob").await.0,
            StatusCode::NO_CONTENT
        );
        // Embedded: the counters move in the block's transaction. MongoDB: a recount by
        // the counters worker that read the edge before the block removed it may leave
        // the count briefly above the truth (docs/mongodb.md, "Counters"); it settles.
        if kind == Kind::Mongo {
            server.settle().await;
        }
        let (status, body) = api.get("/v1/users/bob").await;
        assert_eq!(
            (status, body["following_count"].as_u64()),
            (StatusCode::OK, Some(0)),
            "{kind:?}"
        );
        let (status, problem) = api.put("/v1/users/bob/following/ann").await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{kind:?}: {problem}");
        assert!(
            problem["detail"].as_str().unwrap().contains("block"),
            "{problem}"
        );
        let (status, _) = api.put("/v1/users/ann/following/bob").await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{kind:?}");
        // Only ann writes or reads her blocks.
        let (status, _) = api
            .send_as(
                As::Token(&bob),
                Method::PUT,
                "/v1/users/ann/blocks/cat",
                None,
            )
            .await;
        assert_eq!(status, StatusCode::FORBIDDEN);
        let (status, _) = api
            .send_as(As::Token(&bob), Method::GET, "/v1/users/ann/blocks", None)
            .await;
        assert_eq!(status, StatusCode::FORBIDDEN);
        let (status, page) = api.get("/v1/users/ann/blocks").await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(page["items"][0]["id"], "bob", "{page}");
        assert!(page["items"][0]["created_at"].is_string(), "{page}");
        assert!(page["next_cursor"].is_null());
        assert_eq!(
            api.put("/v1/users/ann/blocks/ann").await.0,
            StatusCode::UNPROCESSABLE_ENTITY
        );
        assert_eq!(
            api.put("/v1/users/ann/blocks/nobody").await.0,
            StatusCode::NOT_FOUND
        );

        // The blocked caller: the post and the list as if there were none.
        let path = format!("/v1/posts/{post}");
        let (status, _) = api.send_as(As::Token(&bob), Method::GET, &path, None).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{kind:?}");
        let (status, _) = api.send_as(As::Nobody, Method::GET, &path, None).await;
        assert_eq!(
            status,
            StatusCode::OK,
            "{kind:?}: anonymous reads are public"
        );
        let (status, _) = api
            .send_as(As::Token("not a token"), Method::GET, &path, None)
            .await;
        assert_eq!(status, StatusCode::UNAUTHORIZED);
        let (status, page) = api
            .send_as(As::Token(&bob), Method::GET, "/v1/users/ann/posts", None)
            .await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(page["items"], json!([]), "{kind:?}");
        assert!(page["next_cursor"].is_null());
        let cat = api.token("cat");
        let (_, page) = api
            .send_as(As::Token(&cat), Method::GET, "/v1/users/ann/posts", None)
            .await;
        assert_eq!(page["items"][0]["id"], post.as_str(), "{kind:?}");
        // ann, the blocker, still reads bob's posts.
        assert_eq!(
            api.delete("/v1/users/ann/blocks/bob").await.0,
            StatusCode::NO_CONTENT
        );
        let (status, _) = api.send_as(As::Token(&bob), Method::GET, &path, None).await;
        assert_eq!(status, StatusCode::OK, "{kind:?}: unblocked");
        let (_, body) = api.get("/v1/users/bob").await;
        assert_eq!(body["following_count"], 0, "unblocking restores no follow");

        // Mutes: an empty body, a body, bad bodies.
        assert_eq!(
            api.put("/v1/users/ann/mutes/cat").await.0,
            StatusCode::NO_CONTENT
        );
        let mute = |body| api.send(Method::PUT, "/v1/users/ann/mutes/bob", Some(body));
        let (status, _) = mute(json!({ "notifications": false, "duration": "1h" })).await;
        assert_eq!(status, StatusCode::NO_CONTENT);
        for bad in [
            json!({ "duration": "0s" }),
            json!({ "duration": "soon" }),
            json!({ "duration": "20000days" }),
            json!({ "notify": true }),
        ] {
            let (status, problem) = mute(bad.clone()).await;
            assert_eq!(status, StatusCode::BAD_REQUEST, "{bad}: {problem}");
        }
        let (status, page) = api.get("/v1/users/ann/mutes").await;
        assert_eq!(status, StatusCode::OK);
        let items = page["items"].as_array().unwrap();
        assert_eq!(items.len(), 2, "{page}");
        assert_eq!(items[0]["id"], "bob");
        assert_eq!(items[0]["notifications"], false);
        assert!(items[0]["expires_at"].is_string(), "{page}");
        assert_eq!(items[1]["id"], "cat");
        assert_eq!(items[1]["notifications"], true);
        assert!(items[1]["expires_at"].is_null(), "{page}");
        let (status, page) = api.get("/v1/users/ann/mutes?limit=1").await;
        assert_eq!(status, StatusCode::OK);
        let next = page["next_cursor"].as_str().unwrap().to_owned();
        let (_, rest) = api
            .get(&format!("/v1/users/ann/mutes?limit=1&cursor={next}"))
            .await;
        assert_eq!(rest["items"][0]["id"], "cat", "{rest}");
        let (status, _) = api.get("/v1/users/ann/mutes?cursor=nope").await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
        assert_eq!(
            api.delete("/v1/users/ann/mutes/bob").await.0,
            StatusCode::NO_CONTENT
        );
        let (_, page) = api.get("/v1/users/ann/mutes").await;
        assert_eq!(page["items"].as_array().unwrap().len(), 1);
        assert_eq!(
            api.put("/v1/users/ann/mutes/ann").await.0,
            StatusCode::UNPROCESSABLE_ENTITY
        );
        server.stop().await;
    }
}
