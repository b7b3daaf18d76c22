//! The public and hashtag streams: over SSE every post and deletion (public) or only
//! the tagged ones (hashtag); over the WebSocket, subscriptions that start and stop
//! them, named `["public"]` and `["hashtag", tag]`, and the cap on subscriptions.

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::client::Masto;
use crate::common::{TestServer, event_log_kinds, fresh_config};
use crate::{Sse, command, connect, next_event};

/// An SSE stream at `path` read with `token`.
async fn sse(server: &TestServer, path: &str, token: &str) -> Sse {
    let response = server
        .client
        .get(server.url(path))
        .bearer_auth(token)
        .send()
        .await
        .unwrap();
    Sse::of(response)
}

/// The next SSE event: its name and the Status's id (an update) or the bare id.
async fn next_id(stream: &mut Sse) -> (String, String) {
    let (event, data) = stream.next().await;
    let id = match event.as_str() {
        "update" => {
            let status: Value = serde_json::from_str(&data).unwrap();
            status["id"].as_str().unwrap().to_owned()
        }
        // A deletion's data is the id as a JSON string.
        _ => serde_json::from_str::<String>(&data).unwrap(),
    };
    (event, id)
}

fn id(status: &Value) -> String {
    status["id"].as_str().unwrap().to_owned()
}

/// Users al (the reader, following nobody: these are not home timelines), bo and cy;
/// their tokens.
async fn users(server: &TestServer) -> (String, String, String) {
    let api = server.api();
    for user in ["al", "bo", "cy"] {
        api.user(user).await;
    }
    (api.token("al"), api.token("bo"), api.token("cy"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn public_and_hashtag_sse_streams_carry_posts_and_their_deletions() {
    for kind in event_log_kinds("public_and_hashtag_sse").await {
        let server = TestServer::start(fresh_config(kind)).await;
        let (al, bo, cy) = users(&server).await;
        let mut public = sse(&server, "/api/v1/streaming/public", &al).await;
        let mut tagged = sse(&server, "/api/v1/streaming/hashtag?tag=Rust", &al).await;
        let masto = Masto::of(&server);
        let plain = id(&masto.toot(&bo, "nothing tagged").await);
        let rust = id(&masto.toot(&bo, "about #RUST and #async").await);
        let other = id(&masto.toot(&cy, "about #rustacean only").await);
        for post in [&plain, &rust, &other] {
            assert_eq!(
                next_id(&mut public).await,
                ("update".to_owned(), post.clone()),
                "{kind:?}: every post, in order"
            );
        }
        let (event, data) = tagged.next().await;
        assert_eq!(event, "update", "{kind:?}: {data}");
        let status: Value = serde_json::from_str(&data).unwrap();
        assert_eq!(
            status["id"],
            rust.as_str(),
            "{kind:?}: only the tagged post"
        );
        assert_eq!(status["account"]["id"], "bo");
        assert!(
            status["content"]
                .as_str()
                .unwrap()
                .contains("#<span>RUST</span>")
        );
        for post in [&plain, &rust] {
            let gone = masto.delete(&format!("/api/v1/statuses/{post}"), &bo).await;
            assert_eq!(gone.status, StatusCode::OK, "{}", gone.body);
        }
        for post in [&plain, &rust] {
            assert_eq!(
                next_id(&mut public).await,
                ("delete".to_owned(), post.clone()),
                "{kind:?}: every deletion, its id"
            );
        }
        // The untagged post's deletion comes first, but not on the tag's stream.
        assert_eq!(
            next_id(&mut tagged).await,
            ("delete".to_owned(), rust.clone()),
            "{kind:?}"
        );
        let last = id(&masto.toot(&cy, "#rust again").await);
        assert_eq!(next_id(&mut tagged).await, ("update".to_owned(), last));
        server.stop().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn websocket_subscriptions_to_public_and_hashtag_start_and_stop() {
    for kind in event_log_kinds("websocket_public_and_hashtag").await {
        let server = TestServer::start(fresh_config(kind)).await;
        let (al, bo, _) = users(&server).await;
        let masto = Masto::of(&server);
        let mut socket = connect(&server, &al).await;
        for (bad, why) in [
            (
                json!({"type": "subscribe", "stream": "hashtag"}),
                "Missing tag name",
            ),
            (
                json!({"type": "subscribe", "stream": "hashtag", "tag": "no-dash"}),
                "Invalid tag name",
            ),
        ] {
            let refused = command(&mut socket, bad).await.expect("an error message");
            assert_eq!(refused["status"], 400, "{refused}");
            assert!(
                refused["error"].as_str().unwrap().starts_with(why),
                "{refused}"
            );
        }
        for subscribe in [
            json!({"type": "subscribe", "stream": "public"}),
            json!({"type": "subscribe", "stream": "hashtag", "tag": "#Rust"}),
            json!({"type": "subscribe", "stream": "hashtag:local", "tag": "rust"}),
        ] {
            assert_eq!(command(&mut socket, subscribe).await, None);
        }
        let one = id(&masto.toot(&bo, "#rust one").await);
        for stream in [
            json!(["public"]),
            json!(["hashtag", "rust"]),
            json!(["hashtag:local", "rust"]),
        ] {
            assert_eq!(
                next_event(&mut socket).await,
                (stream, "update".to_owned(), one.clone()),
                "{kind:?}"
            );
        }
        // Without the hashtag subscriptions, only the public one goes on.
        for unsubscribe in [
            json!({"type": "unsubscribe", "stream": "hashtag", "tag": "rust"}),
            json!({"type": "unsubscribe", "stream": "hashtag:local", "tag": "rust"}),
        ] {
            assert_eq!(command(&mut socket, unsubscribe).await, None);
        }
        let two = id(&masto.toot(&bo, "#rust two").await);
        let three = id(&masto.toot(&bo, "#rust three").await);
        for post in [two, three.clone()] {
            assert_eq!(
                next_event(&mut socket).await,
                (json!(["public"]), "update".to_owned(), post),
                "{kind:?}: nothing on the hashtag streams any more"
            );
        }
        // Without any, the engine's stream closes; a new subscription opens one again.
        // (A post made meanwhile could still arrive: the event log trails the 2xx.)
        let unsubscribe = json!({"type": "unsubscribe", "stream": "public"});
        assert_eq!(command(&mut socket, unsubscribe).await, None);
        let subscribe = json!({"type": "subscribe", "stream": "hashtag", "tag": "rust"});
        assert_eq!(command(&mut socket, subscribe).await, None);
        let gone = masto
            .delete(&format!("/api/v1/statuses/{three}"), &bo)
            .await;
        assert_eq!(gone.status, StatusCode::OK);
        assert_eq!(
            next_event(&mut socket).await,
            (json!(["hashtag", "rust"]), "delete".to_owned(), three),
            "{kind:?}"
        );
        server.stop().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_socket_holds_at_most_32_subscriptions() {
    for kind in event_log_kinds("a_socket_holds_at_most").await {
        let server = TestServer::start(fresh_config(kind)).await;
        let (al, bo, _) = users(&server).await;
        let mut socket = connect(&server, &al).await;
        let tag =
            |n: usize| json!({"type": "subscribe", "stream": "hashtag", "tag": format!("t{n}")});
        for n in 0..32 {
            assert_eq!(command(&mut socket, tag(n)).await, None, "subscription {n}");
        }
        let refused = command(&mut socket, tag(32))
            .await
            .expect("an error message");
        assert_eq!(refused["status"], 400, "{kind:?}: {refused}");
        let why = refused["error"].as_str().unwrap();
        assert!(why.contains("Too many subscriptions"), "{why}");
        // One already held is no new one; one freed makes room.
        assert_eq!(command(&mut socket, tag(0)).await, None);
        let unsubscribe = json!({"type": "unsubscribe", "stream": "hashtag", "tag": "t0"});
        assert_eq!(command(&mut socket, unsubscribe).await, None);
        assert_eq!(command(&mut socket, tag(32)).await, None);
        let masto = Masto::of(&server);
        masto.toot(&bo, "#t0 is no longer followed").await;
        let post = id(&masto.toot(&bo, "#t32 is").await);
        assert_eq!(
            next_event(&mut socket).await,
            (json!(["hashtag", "t32"]), "update".to_owned(), post),
            "{kind:?}"
        );
        server.stop().await;
    }
}
