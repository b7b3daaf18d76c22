//! The operations endpoints over HTTP.

use reqwest::StatusCode;
use serde_json::{Value, json};

use super::server;
use crate::common::{Kind, kinds};

#[tokio::test]
async fn operations_endpoints() {
    for kind in kinds("operations_endpoints") {
        let server = server(kind).await;
        let api = server.api();
        assert_eq!(
            api.get("/healthz").await,
            (StatusCode::OK, json!({"status": "ok"}))
        );
        assert_eq!(
            api.get("/readyz").await,
            (StatusCode::OK, json!({"status": "ok"}))
        );
        let (_, meta) = api.get("/v1/meta").await;
        assert_eq!(
            meta["storage"],
            if kind == Kind::Mongo {
                "mongodb"
            } else {
                "embedded"
            }
        );
        assert_eq!(meta["feed_strategy"], "cache");
        assert_eq!(meta["version"], env!("CARGO_PKG_VERSION"));

        api.user("m1").await;
        api.user("m2").await;
        api.put("/v1/users/m2/following/m1").await;
        api.get("/v1/users/m2/timeline").await;
        api.say("m1", "counted").await;
        let metrics = server
            .client
            .get(server.url("/metrics"))
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        for needle in [
            "http_requests_total{method=\"POST\",route=\"/v1/users\",status=\"201\"}",
            "http_request_duration_seconds_bucket{method=\"GET\",route=\"/v1/users/{id}/timeline\"",
            "socialite_fanout_posts_total{strategy=\"cache\"}",
            "socialite_fanout_timelines_total{strategy=\"cache\"}",
            "socialite_cache_builds_total",
        ] {
            assert!(metrics.contains(needle), "missing {needle} in\n{metrics}");
        }

        let served: Value = server
            .client
            .get(server.url("/openapi.json"))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let committed: Value =
            serde_json::from_str(&std::fs::read_to_string("openapi/openapi.json").unwrap())
                .unwrap();
        assert_eq!(
            served, committed,
            "openapi/openapi.json is stale: run `cargo run -- openapi > openapi/openapi.json`"
        );
        server.stop().await;
    }
}
