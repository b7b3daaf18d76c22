//! Blocks and mutes hold on every stream: a blocked author's posts (either way) and a
//! muted one's reach none of the reader's `user`, `public` and `hashtag` streams, a
//! block drops the account's notifications from `user:notification`, and a timed mute
//! ends by the server's clock.

use std::sync::Arc;

use reqwest::StatusCode;
use serde_json::{Value, json};
use socialite::domain::clock::ManualClock;

use crate::client::Masto;
use crate::common::{TestServer, event_log_kinds, fresh_config};
use crate::{Sse, command, connect, next_event};

fn id(status: &Value) -> String {
    status["id"].as_str().unwrap().to_owned()
}

/// Users al (the reader) and bo, cy, dy, ey; al follows bo, cy and dy. Their tokens.
async fn users(server: &TestServer) -> [String; 5] {
    let api = server.api();
    for user in ["al", "bo", "cy", "dy", "ey"] {
        api.user(user).await;
    }
    for followee in ["bo", "cy", "dy"] {
        let path = format!("/v1/users/al/following/{followee}");
        assert_eq!(api.put(&path).await.0, StatusCode::NO_CONTENT);
    }
    ["al", "bo", "cy", "dy", "ey"].map(|user| api.token(user))
}

async fn relate(masto: &Masto, token: &str, path: &str, fields: &[(&str, &str)]) {
    let answer = masto.form(path, token, fields).await;
    assert_eq!(answer.status, StatusCode::OK, "{path}: {}", answer.body);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hidden_authors_posts_reach_none_of_the_readers_streams() {
    for kind in event_log_kinds("a_hidden_authors_posts").await {
        let server = TestServer::start(fresh_config(kind)).await;
        let [al, bo, cy, dy, ey] = users(&server).await;
        let masto = Masto::of(&server);
        let dy_old = id(&masto.toot(&dy, "dy, before the block").await);
        relate(&masto, &al, "/api/v1/accounts/dy/block", &[]).await;
        relate(&masto, &ey, "/api/v1/accounts/al/block", &[]).await;
        relate(&masto, &al, "/api/v1/accounts/cy/mute", &[]).await;
        let mut socket = connect(&server, &al).await;
        for stream in [
            json!({"type": "subscribe", "stream": "user"}),
            json!({"type": "subscribe", "stream": "public"}),
            json!({"type": "subscribe", "stream": "hashtag", "tag": "news"}),
        ] {
            assert_eq!(command(&mut socket, stream).await, None);
        }
        let response = server
            .client
            .get(server.url("/api/v1/streaming/hashtag?tag=news"))
            .bearer_auth(&al)
            .send()
            .await
            .unwrap();
        let mut tagged = Sse::of(response);

        masto.toot(&dy, "#news from dy, whom al blocks").await;
        masto.toot(&ey, "#news from ey, who blocks al").await;
        masto.toot(&cy, "#news from cy, whom al mutes").await;
        let boost = format!("/api/v1/statuses/{dy_old}/reblog");
        relate(&masto, &bo, &boost, &[]).await;
        let shown = id(&masto.toot(&bo, "#news from bo").await);
        for stream in [
            json!(["user"]),
            json!(["public"]),
            json!(["hashtag", "news"]),
        ] {
            assert_eq!(
                next_event(&mut socket).await,
                (stream, "update".to_owned(), shown.clone()),
                "{kind:?}: nothing hidden comes first"
            );
        }
        let (event, data) = tagged.next().await;
        assert_eq!(event, "update", "{kind:?}: {data}");
        let status: Value = serde_json::from_str(&data).unwrap();
        assert_eq!(status["id"], shown.as_str(), "{kind:?}: the SSE stream too");
        server.stop().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_block_or_mute_drops_the_accounts_notifications_until_undone() {
    for kind in event_log_kinds("a_block_or_mute_drops").await {
        let server = TestServer::start(fresh_config(kind)).await;
        let [al, bo, cy, dy, ey] = users(&server).await;
        let masto = Masto::of(&server);
        let response = server
            .client
            .get(server.url("/api/v1/streaming/user/notification"))
            .bearer_auth(&al)
            .send()
            .await
            .unwrap();
        let mut stream = Sse::of(response);
        relate(&masto, &al, "/api/v1/accounts/dy/block", &[]).await;
        relate(&masto, &ey, "/api/v1/accounts/al/block", &[]).await;
        relate(&masto, &al, "/api/v1/accounts/cy/mute", &[]).await;
        for token in [&dy, &ey, &cy] {
            masto.toot(token, "@al from someone hidden").await;
        }
        masto.toot(&bo, "@al from bo").await;
        assert_eq!(
            mention(&mut stream).await,
            "bo",
            "{kind:?}: no hidden actor first"
        );
        relate(&masto, &al, "/api/v1/accounts/dy/unblock", &[]).await;
        masto.toot(&dy, "@al from dy, unblocked").await;
        assert_eq!(mention(&mut stream).await, "dy", "{kind:?}");
        server.stop().await;
    }
}

/// The actor of the next event, which must be a mention notification.
async fn mention(stream: &mut Sse) -> String {
    let (event, data) = stream.next().await;
    assert_eq!(event, "notification", "{data}");
    let notification: Value = serde_json::from_str(&data).unwrap();
    assert_eq!(notification["type"], "mention", "{notification}");
    notification["account"]["id"].as_str().unwrap().to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_timed_mute_ends_on_the_streams_by_the_servers_clock() {
    for kind in event_log_kinds("a_timed_mute_ends").await {
        let clock = Arc::new(ManualClock::at(socialite::domain::now_ms()));
        let server = TestServer::start_with_clock(fresh_config(kind), clock.clone()).await;
        let [al, bo, cy, _, _] = users(&server).await;
        let masto = Masto::of(&server);
        relate(
            &masto,
            &al,
            "/api/v1/accounts/cy/mute",
            &[("duration", "60")],
        )
        .await;
        let mut socket = connect(&server, &al).await;
        for stream in [
            json!({"type": "subscribe", "stream": "user"}),
            json!({"type": "subscribe", "stream": "public"}),
        ] {
            assert_eq!(command(&mut socket, stream).await, None);
        }
        masto.toot(&cy, "muted for a minute").await;
        let marker = id(&masto.toot(&bo, "marker").await);
        for stream in [json!(["user"]), json!(["public"])] {
            assert_eq!(
                next_event(&mut socket).await,
                (stream, "update".to_owned(), marker.clone()),
                "{kind:?}: the muted post first"
            );
        }
        // The wall clock has not moved a minute; the server's has.
        clock.advance(61_000);
        let back = id(&masto.toot(&cy, "the mute is over").await);
        masto.toot(&bo, "marker again").await;
        for stream in [json!(["user"]), json!(["public"])] {
            assert_eq!(
                next_event(&mut socket).await,
                (stream, "update".to_owned(), back.clone()),
                "{kind:?}: the mute ended by the server's clock"
            );
        }
        server.stop().await;
    }
}
