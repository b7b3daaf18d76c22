//! Reposts in the live stream: seen once as pages apply it (docs/timelines.md, "The live
//! stream"). A stream sends a post at its first repost by a followee, whether the stream
//! sent that repost itself or it came before the stream was opened, and nothing for the
//! later ones.

use reqwest::StatusCode;

use crate::common::event_log_kinds;
use crate::{open_as, server};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_sends_a_post_at_its_first_repost_only() {
    for kind in event_log_kinds("a_stream_sends_a_post_at_its_first_repost_only").await {
        let server = server(kind, |c| c.rate.writes_per_min = 1_000_000).await;
        let api = server.api();
        for user in ["ann", "bob", "cat", "dan"] {
            api.user(user).await;
        }
        for followee in ["bob", "cat"] {
            let path = format!("/v1/users/ann/following/{followee}");
            assert_eq!(api.put(&path).await.0, StatusCode::NO_CONTENT);
        }
        // ann does not follow dan: his post reaches her only as a repost.
        let original = api.say("dan", "worth passing on").await;
        let mut early = open_as(&server, "ann", None).await;
        let (status, first) = api.put(&format!("/v1/users/bob/reposts/{original}")).await;
        assert_eq!(status, StatusCode::CREATED, "{kind:?}: {first}");
        let message = early.next().await.unwrap();
        assert_eq!(message.event, "item", "{kind:?}: {message:?}");
        assert_eq!(message.data["id"], first["id"], "{kind:?}: {message:?}");
        assert_eq!(message.data["reposted_by"], "bob", "{kind:?}: {message:?}");
        assert_eq!(message.data["post"]["id"], original.as_str());
        // Opened once the first repost was broadcast (the events worker appends to the
        // log after the write): it is not this stream's to send.
        let mut late = open_as(&server, "ann", None).await;
        let (status, second) = api.put(&format!("/v1/users/cat/reposts/{original}")).await;
        assert_eq!(status, StatusCode::CREATED, "{kind:?}: {second}");
        // ann's own repost is an occurrence like a followee's: not her first either.
        let (status, own) = api.put(&format!("/v1/users/ann/reposts/{original}")).await;
        assert_eq!(status, StatusCode::CREATED, "{kind:?}: {own}");
        let marker = api.say("bob", "after the reposts").await;

        let message = early.next().await.unwrap();
        assert_eq!(
            message.data["id"],
            marker.as_str(),
            "{kind:?}: the stream opened before both reposts sent a later one: {message:?}"
        );
        let message = late.next().await.unwrap();
        assert_eq!(
            message.data["id"],
            marker.as_str(),
            "{kind:?}: the stream opened after the first repost sent a later one: {message:?}"
        );

        // A page serves the post once, at the same repost.
        let (status, page) = api.get("/v1/users/ann/timeline").await;
        assert_eq!(status, StatusCode::OK, "{kind:?}: {page}");
        let ids: Vec<&str> = page["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i["id"].as_str().unwrap())
            .collect();
        assert_eq!(
            ids,
            [marker.as_str(), first["id"].as_str().unwrap()],
            "{kind:?}: {page}"
        );

        // bob's repost undone: its delete (to both: a removal of what a client does not
        // hold is harmless), and then cat's is the first; a repost by a newcomer to
        // ann's follows, newer than cat's, is not sent (the store says so: the early
        // stream forgot bob's with its undoing).
        let path = format!("/v1/users/bob/reposts/{original}");
        assert_eq!(api.delete(&path).await.0, StatusCode::NO_CONTENT);
        for stream in [&mut early, &mut late] {
            let message = stream.next().await.unwrap();
            assert_eq!(message.event, "delete", "{kind:?}: {message:?}");
            assert_eq!(message.data["ids"][0], first["id"], "{kind:?}: {message:?}");
        }
        api.user("eve").await;
        let path = "/v1/users/ann/following/eve";
        assert_eq!(api.put(path).await.0, StatusCode::NO_CONTENT);
        let path = format!("/v1/users/eve/reposts/{original}");
        assert_eq!(api.put(&path).await.0, StatusCode::CREATED);
        let marker = api.say("bob", "after eve's repost").await;
        for stream in [&mut early, &mut late] {
            let message = stream.next().await.unwrap();
            assert_eq!(
                message.data["id"],
                marker.as_str(),
                "{kind:?}: cat's repost stands, older than eve's: {message:?}"
            );
        }
        server.stop().await;
    }
}
