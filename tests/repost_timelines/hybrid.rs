//! `hybrid` treats a celebrity's reposts as it treats their posts (issue 35, "Performance:
//! Reposts"): no fan-out beyond the reposter's own cache, by the request or by the
//! timelines worker, and every follower's page merges them at read time, so a repost by
//! the largest account is served from its 2xx on, with no fan-out at all. The unrepost
//! and the original's delete take it away at once, kept pages included, and each post is
//! still served once (the original wins).

use std::sync::Arc;

use reqwest::StatusCode;
use serde_json::Value;
use socialite::domain::{FeedStrategy, PostId};
use socialite::feed::FeedSettings;
use socialite::store::Store;

use super::common::{Api, fresh_config, fresh_store, kinds};
use super::{kept, post_line, repost_line, social, walk};

/// A celebrity above 2 followers; the request fans out to any audience, so only the
/// strategy's own decision keeps a celebrity's repost out of their followers' caches.
fn settings() -> FeedSettings {
    FeedSettings {
        strategy: FeedStrategy::Hybrid,
        cache_size: 5,
        hybrid_threshold: 2,
        inline_fanout_max: u64::MAX,
        ..FeedSettings::default()
    }
}

/// Whether `user`'s cache holds `entry`.
async fn cached(store: &Store, user: &str, entry: PostId) -> bool {
    let cache = store.timelines.cache(user).await.unwrap().unwrap();
    cache.entries.iter().any(|e| e.id == entry)
}

/// Runs the timelines worker over everything in the change feed.
async fn catch_up(store: &Store, settings: &FeedSettings) {
    use socialite::workers::timelines::TimelinesWorker;
    use socialite::workers::{ManualClock, Runner, RunnerSettings, Step};
    let worker = Arc::new(TimelinesWorker::new(store.clone(), settings));
    let clock = Arc::new(ManualClock::at(socialite::domain::now_ms()));
    let runner_settings = RunnerSettings {
        lease_ttl_ms: 60_000,
        batch_size: 50,
        refresh_ms: 1_000,
    };
    let (leases, feed) = (store.leases.clone(), store.change_feed.clone());
    let mut runner = Runner::new(worker, leases, feed, clock, "test", runner_settings);
    while let Step::Applied(_) = runner.step().await.unwrap() {}
}

#[tokio::test]
async fn a_celebritys_repost_is_merged_into_pages_and_never_fanned_out() {
    for kind in kinds("a_celebritys_repost_is_merged_into_pages_and_never_fanned_out") {
        let t = fresh_store(kind).await;
        let settings = settings();
        let social = social(&t.store, &settings);
        let at = format!("{kind:?}");
        let fans = ["f0", "f1", "f2"];
        for id in ["star", "ann", "pal"].iter().chain(&fans) {
            social.create_user(id, &id.to_uppercase()).await.unwrap();
        }
        // The reposter's own cache exists: the one a celebrity's repost is pushed to.
        walk(&social, "star").await;
        for fan in fans {
            social.follow(fan, "star").await.unwrap();
            walk(&social, fan).await;
        }
        // f0 also follows pal, who is no celebrity: f0's first page of 2 is then read
        // whole from the cache, so it may be kept.
        social.follow("f0", "pal").await.unwrap();
        catch_up(&t.store, &settings).await;
        assert!(
            t.store.graph.celebrity("star").await.unwrap(),
            "{at}: 3 > 2"
        );
        assert!(!t.store.graph.celebrity("pal").await.unwrap(), "{at}");
        let mut fillers = Vec::new();
        for n in 0..3 {
            let id = social.post("pal", &format!("filler {n}")).await.unwrap().id;
            fillers.insert(0, post_line(id, "pal"));
        }
        assert_eq!(kept(&social, "f0", &at).await, fillers[..2], "{at}");

        let original = social.post("ann", "passed on").await.unwrap().id;
        let (reposted, _) = social.repost("star", original).await.unwrap();
        let line = repost_line(reposted.repost.id, original, "star");
        // The request delivered it to the reposter's own cache only.
        assert!(cached(&t.store, "star", reposted.repost.id).await, "{at}");
        for fan in fans {
            let held = cached(&t.store, fan, reposted.repost.id).await;
            assert!(!held, "{at} {fan}: not fanned out by the request");
        }
        // Every follower's page merges it at once; a page kept before it is not served.
        let page = kept(&social, "f0", &at).await;
        assert_eq!(page, [line.clone(), fillers[0].clone()], "{at}: kept");
        let merged = walk(&social, "f1").await;
        assert_eq!(merged, std::slice::from_ref(&line), "{at}: merged");
        // The timelines worker does not fan it out either.
        catch_up(&t.store, &settings).await;
        for fan in fans {
            let held = cached(&t.store, fan, reposted.repost.id).await;
            assert!(!held, "{at} {fan}: not fanned out by the worker");
        }
        assert_eq!(walk(&social, "f2").await, [line], "{at}: still merged");

        // Seen once: a follower of the original's author is served the original only.
        social.follow("f1", "ann").await.unwrap();
        let alone = [post_line(original, "ann")];
        assert_eq!(walk(&social, "f1").await, alone, "{at}: seen once");

        // The unrepost takes it away at once, from kept pages too.
        social.unrepost("star", original).await.unwrap();
        assert_eq!(kept(&social, "f0", &at).await, fillers[..2], "{at}");
        assert!(walk(&social, "f2").await.is_empty(), "{at}: unreposted");
        assert_eq!(walk(&social, "f1").await, alone, "{at}: the original stays");
        // So does the original's delete.
        let (again, _) = social.repost("star", original).await.unwrap();
        let line = repost_line(again.repost.id, original, "star");
        let page = kept(&social, "f0", &at).await;
        assert_eq!(page, [line, fillers[0].clone()], "{at}: reposted again");
        social.delete_post(original).await.unwrap();
        assert_eq!(kept(&social, "f0", &at).await, fillers[..2], "{at}");
        assert!(
            walk(&social, "f2").await.is_empty(),
            "{at}: original deleted"
        );
    }
}

/// `reader`'s whole timeline over HTTP, as `(id, reposted_by, original id)` per item
/// (`reposted_by` and the original empty for a post).
async fn served(api: &Api, reader: &str) -> Vec<(String, String, String)> {
    let path = format!("/v1/users/{reader}/timeline");
    let text = |v: &Value| v.as_str().unwrap_or_default().to_owned();
    let items = api.walk(&path, "before").await;
    items
        .iter()
        .map(|i| {
            (
                text(&i["id"]),
                text(&i["reposted_by"]),
                text(&i["post"]["id"]),
            )
        })
        .collect()
}

/// Over HTTP, with no fan-out at all after the promotion: the first server is stopped,
/// the celebrity promoted, and a server that runs no workers (`workers.enabled = false`) and
/// fans out nothing in its requests (`inline_fanout_max` 0) serves the rest. A
/// celebrity's repost is in every follower's page from its 201 on, and out of them from
/// the 2xx of its unrepost, and of its original's delete.
#[tokio::test]
async fn a_celebritys_repost_reaches_followers_at_once_with_no_fan_out() {
    for kind in kinds("a_celebritys_repost_reaches_followers_at_once_with_no_fan_out") {
        let mut test = fresh_config(kind);
        test.config.rate.writes_per_min = 1_000_000;
        test.config.feed.strategy = FeedStrategy::Hybrid;
        test.config.feed.hybrid_threshold = 2;
        test.config.feed.inline_fanout_max = 0;
        let at = format!("{kind:?}");
        let server = socialite::app::spawn(&test.config).await.unwrap();
        let api = Api::new(reqwest::Client::new(), format!("http://{}", server.addr));
        let readers = ["r0", "r1", "r2"];
        for user in ["star", "ann"].iter().chain(&readers) {
            api.user(user).await;
        }
        for reader in readers {
            let (status, _) = api.put(&format!("/v1/users/{reader}/following/star")).await;
            assert!(status.is_success(), "{at}: {status}");
            // The reader's cache exists: without the merge only a fan-out could bring
            // the repost in.
            api.get(&format!("/v1/users/{reader}/timeline")).await;
        }
        server.stop().await.unwrap();
        // star is promoted (3 followers > 2) as the timelines worker does on the follows'
        // changes, unless its worker did so already: at the port, so no wait.
        let store = socialite::app::open_store(&test.config).await.unwrap();
        let leave = socialite::feed::leave_below(2);
        store.graph.reclassify("star", 2, leave).await.unwrap();
        assert!(store.graph.celebrity("star").await.unwrap(), "{at}");
        drop(store);

        test.config.workers.enabled = false;
        let server = socialite::app::spawn(&test.config).await.unwrap();
        let api = api.at(format!("http://{}", server.addr));
        let original = api.say("ann", "passed on").await;
        let (status, repost) = api.put(&format!("/v1/users/star/reposts/{original}")).await;
        assert_eq!(status, StatusCode::CREATED, "{at}: {repost}");
        let id = repost["id"].as_str().unwrap().to_owned();
        let item = (id, "star".to_owned(), original.clone());
        for reader in readers {
            let page = served(&api, reader).await;
            assert_eq!(
                page,
                std::slice::from_ref(&item),
                "{at} {reader}: merged at once"
            );
        }
        // Seen once: a follower of the original's author is served the original only.
        let (status, _) = api.put("/v1/users/r1/following/ann").await;
        assert!(status.is_success(), "{at}: {status}");
        let post = (original.clone(), String::new(), String::new());
        assert_eq!(
            served(&api, "r1").await,
            std::slice::from_ref(&post),
            "{at}: the original"
        );

        let (status, body) = api
            .delete(&format!("/v1/users/star/reposts/{original}"))
            .await;
        assert!(status.is_success(), "{at}: {status} {body}");
        assert!(served(&api, "r0").await.is_empty(), "{at}: unreposted");
        assert_eq!(served(&api, "r1").await, [post], "{at}: the original stays");

        let (status, repost) = api.put(&format!("/v1/users/star/reposts/{original}")).await;
        assert_eq!(status, StatusCode::CREATED, "{at}: {repost}");
        let id = repost["id"].as_str().unwrap().to_owned();
        let item = (id, "star".to_owned(), original.clone());
        assert_eq!(served(&api, "r2").await, [item], "{at}: reposted again");
        let (status, body) = api.delete(&format!("/v1/posts/{original}")).await;
        assert!(status.is_success(), "{at}: {status} {body}");
        for reader in readers {
            let page = served(&api, reader).await;
            assert!(page.is_empty(), "{at} {reader}: deleted: {page:?}");
        }
        server.stop().await.unwrap();
    }
}
