//! The live stream stops carrying a muted or blocked author's posts from the 2xx on,
//! and carries them again after an unmute.

use reqwest::StatusCode;

use crate::common::{TestServer, event_log_kinds, fresh_config};
use crate::sse::Client;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_stream_stops_carrying_a_muted_or_blocked_author() {
    for kind in event_log_kinds("the_stream_stops_carrying").await {
        let server = TestServer::start(fresh_config(kind)).await;
        let api = server.api();
        for id in ["ann", "bob", "cat"] {
            api.user(id).await;
        }
        for author in ["bob", "cat"] {
            let path = format!("/v1/users/ann/following/{author}");
            assert_eq!(api.put(&path).await.0, StatusCode::NO_CONTENT);
        }
        let token = api.token("ann");
        let mut stream = Client::open(&server.client, &server.base, "ann", Some(token), None).await;
        let first = api.say("bob", "before").await;
        assert_eq!(stream.next().await.unwrap().data["id"], first.as_str());

        assert_eq!(
            api.put("/v1/users/ann/mutes/bob").await.0,
            StatusCode::NO_CONTENT
        );
        api.say("bob", "muted").await;
        let cat = api.say("cat", "shown").await;
        let message = stream.next().await.unwrap();
        assert_eq!(
            message.data["id"],
            cat.as_str(),
            "{kind:?}: no muted item first"
        );

        assert_eq!(
            api.delete("/v1/users/ann/mutes/bob").await.0,
            StatusCode::NO_CONTENT
        );
        let again = api.say("bob", "unmuted").await;
        assert_eq!(stream.next().await.unwrap().data["id"], again.as_str());

        // cat blocks ann: the follow goes (a delete), and nothing of cat's follows.
        assert_eq!(
            api.put("/v1/users/cat/blocks/ann").await.0,
            StatusCode::NO_CONTENT
        );
        api.say("cat", "blocked").await;
        let last = api.say("bob", "last").await;
        loop {
            let message = stream.next().await.unwrap();
            if message.event == "item" {
                assert_eq!(message.data["id"], last.as_str(), "{kind:?}: {message:?}");
                break;
            }
        }
        server.stop().await;
    }
}
