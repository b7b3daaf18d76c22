//! Newer-than pages of home timelines (issue 36, Mastodon's `min_id`), on both stores
//! and under every strategy: the page just above an id is exactly what a walk with
//! `before` serves there (blocks and mutes, the reply rule, deleted posts, reposts seen
//! once, `hybrid`'s merge), its oldest items, newest first; and `/v1` takes `after`.

mod common;

use std::sync::Arc;

use reqwest::StatusCode;
use socialite::domain::{FeedStrategy, PostId};
use socialite::feed::{FeedSettings, TimelineItem};
use socialite::service::{MuteRequest, Social};
use socialite::store::Store;

use common::{TestServer, fresh_config, fresh_store, kinds};

fn settings(strategy: FeedStrategy) -> FeedSettings {
    FeedSettings {
        strategy,
        // Small, so that a timeline runs past the cache and spans buckets.
        cache_size: 6,
        bucket_size: 4,
        bucket_span_ms: 5,
        inline_fanout_max: u64::MAX,
        // `celeb` becomes a celebrity once the worker classifies authors.
        hybrid_threshold: 2,
        ..FeedSettings::default()
    }
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

/// `reader`'s whole timeline walked with `before`, in pages of 3.
async fn walk(social: &Social, reader: &str) -> Vec<TimelineItem> {
    let (mut before, mut items) = (None, Vec::new());
    loop {
        let page = social.timeline(reader, before, 3).await.unwrap();
        items.extend(page.items);
        match page.next_cursor {
            Some(next) => before = Some(next),
            None => return items,
        }
    }
}

/// A timeline with everything a page filters: a block, a mute, a reply the home rule
/// hides and one it shows, a deleted post, reposts that lose to their original and to
/// an earlier repost, a celebrity's posts (merged under `hybrid`), and enough posts to
/// run past the cache. Returns the ids of entries that must never be served.
async fn scenario(social: &Social) -> Vec<PostId> {
    for id in [
        "reader", "a", "b", "c", "celeb", "muted", "blocked", "stranger",
    ] {
        social.create_user(id, id).await.unwrap();
    }
    for followee in ["a", "b", "c", "celeb", "muted", "blocked"] {
        social.follow("reader", followee).await.unwrap();
    }
    social.follow("a", "celeb").await.unwrap();
    social.follow("b", "celeb").await.unwrap();
    let mut never = Vec::new();
    let s1 = social.post("stranger", "s1").await.unwrap().id;
    never.push(s1);
    let a1 = social.post("a", "a1").await.unwrap().id;
    // b's repost of a stranger's post is served; c's later one is not (seen once).
    social.repost("b", s1).await.unwrap();
    let (late, _) = social.repost("c", s1).await.unwrap();
    never.push(late.repost.id);
    // A repost of a post the reader is served itself loses to the original.
    let (lost, _) = social.repost("c", a1).await.unwrap();
    never.push(lost.repost.id);
    never.push(social.post("muted", "m1").await.unwrap().id);
    never.push(social.post("blocked", "x1").await.unwrap().id);
    // b answering the stranger: hidden by the home rule; a's self-thread: shown.
    never.push(social.post_reply("b", "to s", Some(s1)).await.unwrap().id);
    social.post_reply("a", "more", Some(a1)).await.unwrap();
    let gone = social.post("b", "deleted").await.unwrap().id;
    never.push(gone);
    for i in 0..12 {
        let author = ["a", "b", "c", "celeb"][i % 4];
        social.post(author, &format!("p{i}")).await.unwrap();
        if i == 5 {
            social.post("reader", "mine").await.unwrap();
        }
    }
    social.delete_post(gone).await.unwrap();
    let forever = MuteRequest {
        notifications: true,
        duration_ms: None,
    };
    social.mute("reader", "muted", forever).await.unwrap();
    social.block("reader", "blocked").await.unwrap();
    never
}

/// Every page above every cut, of several sizes, against the walk.
async fn check_pages(social: &Social, label: &str, full: &[TimelineItem], cuts: &[PostId]) {
    for &after in cuts {
        for limit in [1, 4] {
            let above: Vec<&TimelineItem> = full.iter().filter(|i| i.id > after).collect();
            let start = above.len().saturating_sub(limit);
            let expected: Vec<TimelineItem> = above[start..].iter().map(|i| (*i).clone()).collect();
            let page = social.timeline_after("reader", after, limit).await.unwrap();
            assert_eq!(
                page.items, expected,
                "{label}: after {after}, limit {limit}"
            );
            assert_eq!(
                page.more_newer,
                above.len() > limit,
                "{label}: after {after}, limit {limit}: more newer"
            );
        }
    }
}

#[tokio::test]
async fn a_newer_page_serves_what_a_walk_serves_there() {
    for kind in kinds("a_newer_page_serves_what_a_walk_serves_there") {
        for strategy in FeedStrategy::ALL {
            let label = format!("{kind:?}/{strategy}");
            let t = fresh_store(kind).await;
            let feed = settings(strategy);
            let social = common::social(t.store.clone(), &feed);
            let never = scenario(&social).await;
            catch_up(&t.store, &feed).await;
            let full = walk(&social, "reader").await;
            // The walk itself holds the rules this page must agree with.
            let served: Vec<PostId> = full.iter().map(|i| i.id).collect();
            assert!(full.len() >= 15, "{label}: {served:?}");
            for id in &never {
                assert!(!served.contains(id), "{label}: {id} served");
            }
            let reposts = full.iter().filter(|i| i.repost_of.is_some()).count();
            assert_eq!(reposts, 1, "{label}: one repost served");
            let mut cuts = vec![PostId::MIN, PostId::MAX];
            cuts.extend(served.iter().copied());
            cuts.extend(never.iter().copied());
            check_pages(&social, &label, &full, &cuts).await;
            // Walking up from the bottom with `after` meets every item once, in order.
            let mut up: Vec<TimelineItem> = Vec::new();
            let mut after = PostId::MIN;
            loop {
                let page = social.timeline_after("reader", after, 2).await.unwrap();
                let mut items = page.items;
                items.reverse();
                up.extend(items);
                match page.more_newer {
                    true => after = up.last().unwrap().id,
                    false => break,
                }
            }
            up.reverse();
            assert_eq!(up, full, "{label}: a walk up");
            let unknown = social.timeline_after("nobody", PostId::MIN, 5).await;
            assert!(
                matches!(unknown, Err(socialite::store::StoreError::NotFound(_))),
                "{label}: {unknown:?}"
            );
        }
    }
}

#[tokio::test]
async fn v1_takes_after_and_refuses_it_with_before() {
    for kind in kinds("v1_takes_after_and_refuses_it_with_before") {
        let server = TestServer::start(fresh_config(kind)).await;
        let api = server.api();
        api.user("alice").await;
        let mut ids = Vec::new();
        for i in 0..5 {
            ids.push(api.say("alice", &format!("n{i}")).await);
        }
        let path = "/v1/users/alice/timeline";
        let (status, body) = api.get(&format!("{path}?after={}&limit=2", ids[1])).await;
        assert_eq!(status, StatusCode::OK, "{kind:?}: {body}");
        let served: Vec<&str> = body["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i["id"].as_str().unwrap())
            .collect();
        assert_eq!(served, [ids[3].as_str(), ids[2].as_str()], "{kind:?}");
        assert_eq!(body["next_cursor"], ids[2].as_str(), "{kind:?}");
        assert_eq!(body["prev_cursor"], ids[3].as_str(), "{kind:?}");
        let (_, top) = api.get(&format!("{path}?after={}", ids[3])).await;
        assert_eq!(top["items"].as_array().unwrap().len(), 1, "{kind:?}");
        assert!(top["prev_cursor"].is_null(), "{kind:?}: {top}");
        // `send` checks that every 4xx is a complete problem+json.
        let both = format!("{path}?after={}&before={}", ids[1], ids[4]);
        let (status, _) = api.get(&both).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{kind:?}");
        let (status, _) = api.get(&format!("{path}?after=nope")).await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{kind:?}");
        // A `before` page has no prev_cursor.
        let (_, older) = api.get(path).await;
        assert!(older.get("prev_cursor").is_none(), "{kind:?}: {older}");
        server.stop().await;
    }
}
