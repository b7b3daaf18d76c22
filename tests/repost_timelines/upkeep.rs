//! Reposts laid out beyond the request that made them: a large audience gets the
//! repost from the timelines worker, an entry a race left in a materialised timeline is
//! never served, and a strategy switch lays the reposts out again.

use reqwest::StatusCode;
use socialite::domain::FeedStrategy;
use socialite::store::Store;

use super::common::{self, TestServer, fresh_config, fresh_store, kinds};
use super::{cast, settings, social, walk};

/// Over HTTP: a repost item's shape, and a large audience served by the timelines
/// worker (`inline_fanout_max` 0: only the reposter's own timeline in the request).
#[tokio::test]
async fn a_large_audience_gets_the_repost_from_the_worker_as_a_repost_item() {
    for kind in kinds("a_large_audience_gets_the_repost_from_the_worker") {
        for strategy in FeedStrategy::ALL {
            let mut test = fresh_config(kind);
            test.config.rate.writes_per_min = 1_000_000;
            test.config.feed.strategy = strategy;
            test.config.feed.inline_fanout_max = 0;
            let server = TestServer::start(test).await;
            let api = server.api();
            let at = format!("{kind:?} {strategy}");
            for user in ["reader", "ann", "bob"] {
                api.user(user).await;
            }
            let (status, _) = api.put("/v1/users/reader/following/bob").await;
            assert!(status.is_success(), "{at}: {status}");
            // The reader's cache exists, so only a fan-out can bring the repost in.
            api.get("/v1/users/reader/timeline").await;
            let original = api.say("ann", "for a crowd").await;
            let (status, repost) = api.put(&format!("/v1/users/bob/reposts/{original}")).await;
            assert_eq!(status, StatusCode::CREATED, "{at}: {repost}");
            server.settle().await;
            let (status, page) = api.get("/v1/users/reader/timeline").await;
            assert_eq!(status, StatusCode::OK, "{at}: {page}");
            let items = page["items"].as_array().unwrap();
            assert_eq!(items.len(), 1, "{at}: {page}");
            let item = &items[0];
            assert_eq!(item["id"], repost["id"], "{at}: {item}");
            assert_eq!(item["reposted_by"], "bob", "{at}: {item}");
            assert_eq!(item["reposted_by_display_name"], "bob", "{at}: {item}");
            assert!(item["created_at"].is_string(), "{at}: {item}");
            assert_eq!(item["post"]["id"], original.as_str(), "{at}: {item}");
            assert_eq!(item["post"]["author"], "ann", "{at}: {item}");
            assert_eq!(item["post"]["text"], "for a crowd", "{at}: {item}");
            assert!(item.get("author").is_none(), "{at}: {item}");
            server.stop().await;
        }
    }
}

/// A repost entry that outlived its repost (a fan-out racing the unrepost, pushed
/// after its retraction) or whose original is gone is never served: reads check the
/// reposts and their originals, whatever the materialised timeline holds.
#[tokio::test]
async fn a_repost_entry_left_behind_by_a_race_is_never_served() {
    for kind in kinds("a_repost_entry_left_behind_by_a_race_is_never_served") {
        for strategy in [
            FeedStrategy::TimedBuckets,
            FeedStrategy::SizedBuckets,
            FeedStrategy::Cache,
        ] {
            let t = fresh_store(kind).await;
            let settings = settings(strategy);
            let social = social(&t.store, &settings);
            cast(&social).await;
            let at = format!("{kind:?} {strategy}");
            walk(&social, "reader").await;
            let original = social.post("ann", "passed on").await.unwrap().id;
            let (reposted, text) = social.repost("bob", original).await.unwrap();
            let entry = reposted.repost.entry(Some(&text.text), true, None);
            let stale = async |store: &Store| {
                let reader = ["reader".to_owned()];
                let timelines = &store.timelines;
                match strategy {
                    FeedStrategy::TimedBuckets => {
                        let key = entry.id.timestamp_ms().div_euclid(settings.bucket_span_ms);
                        timelines
                            .timed_push(&reader, key, std::slice::from_ref(&entry), 1000)
                            .await
                    }
                    FeedStrategy::SizedBuckets => {
                        timelines
                            .sized_push(&reader, std::slice::from_ref(&entry), 50)
                            .await
                    }
                    _ => timelines
                        .cache_push(&reader, std::slice::from_ref(&entry), 50)
                        .await
                        .map(|_| ()),
                }
                .unwrap();
            };
            social.unrepost("bob", original).await.unwrap();
            stale(&t.store).await;
            assert_eq!(
                walk(&social, "reader").await,
                Vec::<String>::new(),
                "{at}: unreposted"
            );
            social.repost("bob", original).await.unwrap();
            social.delete_post(original).await.unwrap();
            stale(&t.store).await;
            assert_eq!(
                walk(&social, "reader").await,
                Vec::<String>::new(),
                "{at}: original deleted"
            );
        }
    }
}

/// A strategy switch rebuilds the timelines from the sources, reposts included: each
/// bucket strategy, started over a store written under `cache`, serves the repost.
#[tokio::test]
async fn a_strategy_switch_lays_out_reposts_too() {
    for kind in kinds("a_strategy_switch_lays_out_reposts_too") {
        for strategy in [FeedStrategy::SizedBuckets, FeedStrategy::TimedBuckets] {
            let mut test = fresh_config(kind);
            test.config.rate.writes_per_min = 1_000_000;
            let at = format!("{kind:?} {strategy}");
            let server = socialite::app::spawn(&test.config).await.unwrap();
            let api = common::Api::new(reqwest::Client::new(), format!("http://{}", server.addr));
            for user in ["reader", "ann", "bob"] {
                api.user(user).await;
            }
            let (status, _) = api.put("/v1/users/reader/following/bob").await;
            assert!(status.is_success(), "{at}: {status}");
            let original = api.say("ann", "before the switch").await;
            let (status, repost) = api.put(&format!("/v1/users/bob/reposts/{original}")).await;
            assert_eq!(status, StatusCode::CREATED, "{at}: {repost}");
            server.stop().await.unwrap();

            test.config.feed.strategy = strategy;
            let server = socialite::app::spawn(&test.config).await.unwrap();
            let api = api.at(format!("http://{}", server.addr));
            let items = api.walk("/v1/users/reader/timeline", "before").await;
            assert_eq!(items.len(), 1, "{at}: {items:?}");
            assert_eq!(items[0]["id"], repost["id"], "{at}: {items:?}");
            assert_eq!(items[0]["post"]["id"], original.as_str(), "{at}: {items:?}");
            server.stop().await.unwrap();
        }
    }
}
