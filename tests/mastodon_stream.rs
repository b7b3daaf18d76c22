//! Mastodon's streaming API on real servers: the SSE user stream and the WebSocket
//! deliver a followee's post as `update` (a Status) and a like as `notification`,
//! never what a block or mute hides; tokens, scopes and the WebSocket protocol echo.
//! The public and hashtag streams (`mastodon_stream/listings.rs`), blocks and mutes on
//! every stream (`mastodon_stream/hidden.rs`), and the refusals of bad tokens, missing
//! scopes and a store without an event log (`mastodon_stream/refusals.rs`).
//! The event log is needed, so MongoDB runs only where it has capped collections.

#[allow(dead_code)] // shared with tests/mastodon.rs, which uses all of it
#[path = "mastodon/client.rs"]
mod client;
mod common;
#[path = "mastodon_stream/hidden.rs"]
mod hidden;
#[path = "mastodon_stream/listings.rs"]
mod listings;
#[path = "mastodon_stream/refusals.rs"]
mod refusals;

use client::Masto;
use common::{TestServer, event_log_kinds, fresh_config};
use futures::{SinkExt, StreamExt};
use reqwest::StatusCode;
use serde_json::{Value, json};
use tokio_tungstenite::tungstenite::Message as WsMessage;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;

/// Tokens of al (the reader), bo and cy (followed; cy muted), dy (blocked by al, whose
/// post bo reposts), and the id of a post of al's for bo to like.
struct Cast {
    al: String,
    bo: String,
    cy: String,
    dy_post: String,
    al_post: String,
}

async fn cast(server: &TestServer) -> Cast {
    let api = server.api();
    for user in ["al", "bo", "cy", "dy"] {
        api.user(user).await;
    }
    for followee in ["bo", "cy", "dy"] {
        let path = format!("/v1/users/al/following/{followee}");
        assert_eq!(api.put(&path).await.0, StatusCode::NO_CONTENT);
    }
    let masto = Masto::of(server);
    let (al, bo, cy, dy) = (
        api.token("al"),
        api.token("bo"),
        api.token("cy"),
        api.token("dy"),
    );
    let dy_post = masto.toot(&dy, "from dy").await["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let al_post = masto.toot(&al, "from al").await["id"]
        .as_str()
        .unwrap()
        .to_owned();
    for (path, why) in [
        ("/api/v1/accounts/dy/block", "block"),
        ("/api/v1/accounts/cy/mute", "mute"),
    ] {
        let answer = masto.form(path, &al, &[]).await;
        assert_eq!(answer.status, StatusCode::OK, "{why}: {}", answer.body);
    }
    Cast {
        al,
        bo,
        cy,
        dy_post,
        al_post,
    }
}

/// What the hidden users do, then bo's post and bo's like of al's post: the ids of
/// bo's status and al's liked post.
async fn act(server: &TestServer, cast: &Cast) -> String {
    let masto = Masto::of(server);
    masto.toot(&cast.cy, "muted, not for al").await;
    let boost = masto
        .form(
            &format!("/api/v1/statuses/{}/reblog", cast.dy_post),
            &cast.bo,
            &[],
        )
        .await;
    assert_eq!(boost.status, StatusCode::OK, "{}", boost.body);
    let post = masto.toot(&cast.bo, "hello al").await["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let like = masto
        .form(
            &format!("/api/v1/statuses/{}/favourite", cast.al_post),
            &cast.bo,
            &[],
        )
        .await;
    assert_eq!(like.status, StatusCode::OK, "{}", like.body);
    post
}

/// A guard, not a measure: an event due on a stream that has not come in this long is
/// taken as never coming, so that a missing event fails the test rather than hangs it.
const PATIENCE: std::time::Duration = std::time::Duration::from_secs(60);

async fn within<F: std::future::Future>(read: F) -> F::Output {
    tokio::time::timeout(PATIENCE, read)
        .await
        .expect("nothing more came on the stream within a minute")
}

/// Mastodon's SSE: `event:` and `data:` lines (data a Status, a Notification, or a
/// bare id), `:thump` comments when idle.
struct Sse {
    body: futures::stream::BoxStream<'static, reqwest::Result<Vec<u8>>>,
    buffer: String,
}

impl Sse {
    fn of(response: reqwest::Response) -> Sse {
        assert_eq!(response.status(), StatusCode::OK);
        let content_type = response.headers()["content-type"].to_str().unwrap();
        assert_eq!(content_type, "text/event-stream");
        Sse {
            body: response
                .bytes_stream()
                .map(|r| r.map(|b| b.to_vec()))
                .boxed(),
            buffer: String::new(),
        }
    }

    /// The next event's name and data (comments skipped).
    async fn next(&mut self) -> (String, String) {
        within(self.next_unguarded()).await
    }

    async fn next_unguarded(&mut self) -> (String, String) {
        loop {
            if let Some(end) = self.buffer.find("\n\n") {
                let block: String = self.buffer.drain(..end + 2).collect();
                let (mut event, mut data) = (String::new(), String::new());
                for line in block.lines() {
                    match line.split_once(": ") {
                        Some(("event", value)) => event = value.to_owned(),
                        Some(("data", value)) => data.push_str(value),
                        _ => {}
                    }
                }
                if !event.is_empty() {
                    return (event, data);
                }
                continue;
            }
            let chunk = self.body.next().await.expect("the stream ended").unwrap();
            self.buffer.push_str(std::str::from_utf8(&chunk).unwrap());
        }
    }
}

fn check_update(status: &Value, post: &str) {
    assert_eq!(
        status["id"], post,
        "the first update is bo's post: {status}"
    );
    assert_eq!(status["account"]["id"], "bo");
    assert!(status["content"].as_str().unwrap().contains("hello al"));
}

fn check_notification(notification: &Value, cast: &Cast) {
    assert_eq!(notification["type"], "favourite", "{notification}");
    assert_eq!(notification["account"]["id"], "bo");
    assert_eq!(notification["status"]["id"], cast.al_post.as_str());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_sse_user_stream_sends_updates_and_notifications_but_nothing_hidden() {
    for kind in event_log_kinds("the_sse_user_stream").await {
        let server = TestServer::start(fresh_config(kind)).await;
        let cast = cast(&server).await;
        let response = server
            .client
            .get(server.url(&format!("/api/v1/streaming/user?access_token={}", cast.al)))
            .send()
            .await
            .unwrap();
        let mut stream = Sse::of(response);
        let post = act(&server, &cast).await;
        let (event, data) = stream.next().await;
        assert_eq!(event, "update", "{kind:?}: {data}");
        check_update(&serde_json::from_str(&data).unwrap(), &post);
        let (event, data) = stream.next().await;
        assert_eq!(event, "notification", "{kind:?}: {data}");
        check_notification(&serde_json::from_str(&data).unwrap(), &cast);
        // A deletion: the id as a JSON string (Mastodon.py parses SSE data as JSON).
        let masto = Masto::of(&server);
        let gone = masto
            .delete(&format!("/api/v1/statuses/{post}"), &cast.bo)
            .await;
        assert_eq!(gone.status, StatusCode::OK);
        assert_eq!(
            stream.next().await,
            ("delete".to_owned(), format!("\"{post}\""))
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_sse_notification_stream_sends_only_notifications() {
    for kind in event_log_kinds("the_sse_notification_stream").await {
        let server = TestServer::start(fresh_config(kind)).await;
        let cast = cast(&server).await;
        let response = server
            .client
            .get(server.url("/api/v1/streaming/user/notification"))
            .bearer_auth(&cast.al)
            .send()
            .await
            .unwrap();
        let mut stream = Sse::of(response);
        act(&server, &cast).await;
        let (event, data) = stream.next().await;
        assert_eq!(event, "notification", "{kind:?}: {data}");
        check_notification(&serde_json::from_str(&data).unwrap(), &cast);
    }
}

fn ws_base(server: &TestServer) -> String {
    server.base.replacen("http://", "ws://", 1)
}

type Socket =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

/// A WebSocket to the streaming API, signed in with `token` as the protocol.
async fn connect(server: &TestServer, token: &str) -> Socket {
    let mut request = format!("{}/api/v1/streaming", ws_base(server))
        .into_client_request()
        .unwrap();
    request
        .headers_mut()
        .insert("sec-websocket-protocol", token.parse().unwrap());
    tokio_tungstenite::connect_async(request).await.unwrap().0
}

/// Sends `command`, then a message the server refuses, and waits for that refusal:
/// messages are handled in order, so `command` has taken effect by then. Answers what
/// `command` itself answered, if anything.
async fn command(socket: &mut Socket, command: Value) -> Option<Value> {
    socket
        .send(WsMessage::text(command.to_string()))
        .await
        .unwrap();
    let probe = json!({"type": "subscribe", "stream": "probe"}).to_string();
    socket.send(WsMessage::text(probe)).await.unwrap();
    let first = next_text(socket).await;
    if first["error"] == "Unknown stream type" {
        return None;
    }
    let probe = next_text(socket).await;
    assert_eq!(probe["error"], "Unknown stream type", "{probe}");
    Some(first)
}

/// The next message's `stream`, `event` and payload (a Status's id, or a deletion's id).
async fn next_event(socket: &mut Socket) -> (Value, String, String) {
    let message = next_text(socket).await;
    let event = message["event"].as_str().expect("an event").to_owned();
    let payload = message["payload"].as_str().unwrap();
    let id = match event.as_str() {
        "delete" => payload.to_owned(),
        _ => {
            let status: Value = serde_json::from_str(payload).unwrap();
            status["id"].as_str().unwrap().to_owned()
        }
    };
    (message["stream"].clone(), event, id)
}

/// The next text message as JSON (pings skipped).
async fn next_text(socket: &mut Socket) -> Value {
    within(next_text_unguarded(socket)).await
}

async fn next_text_unguarded(socket: &mut Socket) -> Value {
    loop {
        match socket.next().await.unwrap().unwrap() {
            WsMessage::Text(text) => return serde_json::from_str(text.as_str()).unwrap(),
            WsMessage::Ping(_) | WsMessage::Pong(_) => {}
            other => panic!("unexpected {other:?}"),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_websocket_subscription_gets_updates_and_notifications_but_nothing_hidden() {
    for kind in event_log_kinds("a_websocket_subscription").await {
        let server = TestServer::start(fresh_config(kind)).await;
        let cast = cast(&server).await;
        let mut request = format!("{}/api/v1/streaming", ws_base(&server))
            .into_client_request()
            .unwrap();
        request
            .headers_mut()
            .insert("sec-websocket-protocol", cast.al.parse().unwrap());
        let (mut socket, response) = tokio_tungstenite::connect_async(request).await.unwrap();
        assert_eq!(
            response.headers()["sec-websocket-protocol"],
            cast.al.as_str(),
            "the token is echoed as the protocol"
        );
        let subscribe = json!({"type": "subscribe", "stream": "user"}).to_string();
        socket.send(WsMessage::text(subscribe)).await.unwrap();
        // Messages are handled in order: once this one's error arrives, the
        // subscription is in place.
        let probe = json!({"type": "subscribe", "stream": "nonsense"}).to_string();
        socket.send(WsMessage::text(probe)).await.unwrap();
        let error = next_text(&mut socket).await;
        assert_eq!(error["status"], 400, "{error}");
        let post = act(&server, &cast).await;
        let update = next_text(&mut socket).await;
        assert_eq!(update["stream"], json!(["user"]), "{kind:?}: {update}");
        assert_eq!(update["event"], "update", "{kind:?}: {update}");
        let payload: Value = serde_json::from_str(update["payload"].as_str().unwrap()).unwrap();
        check_update(&payload, &post);
        let notification = next_text(&mut socket).await;
        assert_eq!(notification["event"], "notification", "{notification}");
        let payload: Value =
            serde_json::from_str(notification["payload"].as_str().unwrap()).unwrap();
        check_notification(&payload, &cast);
        let masto = Masto::of(&server);
        masto
            .delete(&format!("/api/v1/statuses/{post}"), &cast.bo)
            .await;
        let delete = next_text(&mut socket).await;
        assert_eq!(delete["event"], "delete");
        assert_eq!(delete["payload"], post.as_str(), "the bare id, as a string");
        socket.close(None).await.unwrap();
    }
}
