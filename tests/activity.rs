//! The activity log: race-free overflow under concurrent writers, pagination across the
//! primary document and the pages, and bad input over HTTP. Runs on every backend.

mod common;

use std::sync::Arc;

use common::{TestServer, fresh_config, fresh_store, kinds};
use reqwest::StatusCode;
use serde_json::Value;
use socialite::domain::{ActivityLimits, ActivityType, NewUser, now_ms};
use socialite::feed::FeedSettings;
use socialite::seed::{SeedArgs, plan, user_id};
use socialite::service::{ActivityLog, Social};
use socialite::workers::activity::ActivityWorker;
use socialite::workers::{Runner, RunnerSettings, Step, SystemClock};

async fn log_with_user(
    kind: common::Kind,
    limits: ActivityLimits,
) -> (common::TestStore, Arc<ActivityLog>) {
    let t = fresh_store(kind).await;
    t.store
        .users
        .create_user(&NewUser {
            id: "power".into(),
            display_name: "Power".into(),
            created_at_ms: now_ms(),
        })
        .await
        .unwrap();
    let log = Arc::new(ActivityLog::new(
        t.store.clone(),
        limits,
        Default::default(),
    ));
    (t, log)
}

#[tokio::test]
async fn concurrent_writers_overflow_without_races() {
    const START: usize = 990;
    const WRITERS: usize = 64;
    const TOTAL: usize = 2500;
    let limits = ActivityLimits {
        primary_limit: 1000,
        page_size: 250,
    };
    for kind in kinds("concurrent_writers_overflow_without_races") {
        let (t, log) = log_with_user(kind, limits).await;
        for i in 0..START {
            log.record("power", ActivityType::Post, &format!("seed{i}"))
                .await
                .unwrap();
        }
        let mut tasks = Vec::new();
        for w in 0..WRITERS {
            let log = log.clone();
            tasks.push(tokio::spawn(async move {
                let mut seqs = Vec::new();
                for i in (w..TOTAL).step_by(WRITERS) {
                    seqs.push(
                        log.record("power", ActivityType::Like, &format!("c{i}"))
                            .await
                            .unwrap()
                            .seq,
                    );
                }
                seqs
            }));
        }
        let mut seqs = Vec::new();
        for task in tasks {
            seqs.extend(task.await.unwrap());
        }
        seqs.sort_unstable();
        let expected: Vec<u64> = (START as u64..(START + TOTAL) as u64).collect();
        assert_eq!(
            seqs, expected,
            "{kind:?}: every sequence number handed out exactly once"
        );

        let layout = t.store.activity.activity_layout("power").await.unwrap();
        assert_eq!(
            layout.primary, 1000,
            "{kind:?}: the primary document holds exactly the limit"
        );
        assert!(
            layout.pages.iter().all(|&(_, n)| n <= 250),
            "{kind:?}: a page over size: {layout:?}"
        );
        let stored: u64 = layout.primary + layout.pages.iter().map(|p| p.1).sum::<u64>();
        assert_eq!(stored, (START + TOTAL) as u64, "{kind:?}: {layout:?}");
        assert_eq!(
            layout.pages.len(),
            (START + TOTAL - 1000).div_ceil(250),
            "{kind:?}"
        );

        // Reading every page returns each activity once, newest first.
        let mut refs = Vec::new();
        let mut skip = 0;
        loop {
            let page = log.page("power", skip, 100).await.unwrap();
            assert_eq!(page.total, (START + TOTAL) as u64);
            if page.items.is_empty() {
                break;
            }
            skip += page.items.len() as u64;
            refs.extend(page.items.into_iter().map(|a| (a.seq, a.reference)));
        }
        assert_eq!(refs.len(), START + TOTAL);
        assert!(
            refs.windows(2).all(|w| w[0].0 == w[1].0 + 1),
            "{kind:?}: contiguous, newest first"
        );
        let mut names: Vec<&str> = refs.iter().map(|r| r.1.as_str()).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(
            names.len(),
            START + TOTAL,
            "{kind:?}: every activity exactly once"
        );
    }
}

#[tokio::test]
async fn pages_cross_the_primary_document_and_page_boundaries() {
    let limits = ActivityLimits {
        primary_limit: 5,
        page_size: 3,
    };
    for kind in kinds("pages_cross_the_primary_document_and_page_boundaries") {
        let (t, log) = log_with_user(kind, limits).await;
        let empty = log.page("power", 0, 10).await.unwrap();
        assert_eq!((empty.items.len(), empty.total), (0, 0));
        for i in 0..12 {
            let kind = [ActivityType::Post, ActivityType::Like, ActivityType::Follow][i % 3];
            assert_eq!(
                log.record("power", kind, &format!("r{i}"))
                    .await
                    .unwrap()
                    .seq,
                i as u64
            );
        }
        let layout = t.store.activity.activity_layout("power").await.unwrap();
        assert_eq!(
            (layout.primary, layout.pages.clone()),
            (5, vec![(0, 3), (1, 3), (2, 1)]),
            "{kind:?}"
        );
        for (skip, limit) in [
            (0, 1),
            (0, 7),
            (1, 3),
            (4, 3),
            (6, 2),
            (6, 6),
            (7, 5),
            (10, 5),
            (11, 1),
            (12, 1),
            (0, 12),
        ] {
            let page = log.page("power", skip, limit).await.unwrap();
            let got: Vec<String> = page.items.iter().map(|a| a.reference.clone()).collect();
            let want: Vec<String> = (0..12u64)
                .rev()
                .skip(skip as usize)
                .take(limit as usize)
                .map(|i| format!("r{i}"))
                .collect();
            assert_eq!(got, want, "{kind:?} skip={skip} limit={limit}");
            assert_eq!(page.total, 12);
        }
        let newest = &log.page("power", 0, 1).await.unwrap().items[0];
        assert_eq!((newest.kind, newest.seq), (ActivityType::Follow, 11));
        // A new log takes the configured layout; an existing one keeps its own.
        let other = ActivityLog::new(
            t.store.clone(),
            ActivityLimits {
                primary_limit: 100,
                page_size: 100,
            },
            Default::default(),
        );
        assert_eq!(
            other
                .record("power", ActivityType::Post, "r12")
                .await
                .unwrap()
                .seq,
            12
        );
        let layout = t.store.activity.activity_layout("power").await.unwrap();
        assert_eq!(layout.pages.last(), Some(&(2, 2)), "{kind:?}");
    }
}

/// The seeder writes through the same service operations as the API, so every seeded
/// follow and post is in its user's activity log, newest first.
#[tokio::test]
async fn seeding_records_the_same_activities_as_the_api() {
    for kind in kinds("seeding_records_the_same_activities_as_the_api") {
        let t = fresh_store(kind).await;
        let social = Arc::new(Social::new(
            t.store.clone(),
            &FeedSettings::default(),
            ActivityLimits::default(),
            Default::default(),
        ));
        let plan = plan(&SeedArgs {
            users: 30,
            max_follows: 5,
            posts_per_user: 2,
            seed: 3,
        });
        socialite::seed::run(social.clone(), &plan).await.unwrap();
        // Activities are recorded from the change feed, as the server's worker would.
        let worker = Arc::new(ActivityWorker::new(
            t.store.activity.clone(),
            ActivityLimits::default(),
        ));
        let mut runner = Runner::new(
            worker,
            t.store.leases.clone(),
            t.store.change_feed.clone(),
            Arc::new(SystemClock),
            "test",
            RunnerSettings {
                lease_ttl_ms: 60_000,
                batch_size: 100,
                refresh_ms: 1_000,
            },
        );
        while let Step::Applied(_) = runner.step().await.unwrap() {}
        let mut seen = 0;
        for (index, id) in plan.users.iter().enumerate() {
            let mut want: Vec<String> = plan
                .follows
                .iter()
                .filter(|(follower, _)| *follower == index)
                .map(|(_, followee)| user_id(*followee))
                .collect();
            let posts = plan
                .posts
                .iter()
                .filter(|(author, _)| *author == index)
                .count();
            let page = social.activity().page(id, 0, 100).await.unwrap();
            assert_eq!(page.total as usize, want.len() + posts, "{kind:?} {id}");
            let mut got: Vec<String> = page
                .items
                .iter()
                .filter(|a| a.kind == ActivityType::Follow)
                .map(|a| a.reference.clone())
                .collect();
            got.sort();
            want.sort();
            assert_eq!(got, want, "{kind:?} {id}");
            let own_posts = social.posts(id, None, 100).await.unwrap().items;
            for post in own_posts {
                assert!(
                    page.items.iter().any(|a| a.kind == ActivityType::Post
                        && a.reference == post.id.to_string()),
                    "{kind:?} {id}: post {} is in the log",
                    post.id
                );
            }
            seen += page.items.len();
        }
        assert_eq!(seen, plan.follows.len() + plan.posts.len(), "{kind:?}");
    }
}

#[tokio::test]
async fn activity_over_http() {
    for kind in kinds("activity_over_http") {
        let mut config = fresh_config(kind);
        config.config.activity.primary_limit = 3;
        config.config.activity.page_size = 2;
        let server = TestServer::start(config).await;
        let api = server.api();
        for id in ["ann", "ben"] {
            api.user(id).await;
        }
        let post_id = api.say("ben", "like me").await;
        let like = format!("/v1/users/ann/likes/{post_id}");
        assert_eq!(
            api.put("/v1/users/ann/following/ben").await.0,
            StatusCode::NO_CONTENT
        );
        assert_eq!(api.put(&like).await.0, StatusCode::NO_CONTENT);
        assert_eq!(api.put(&like).await.0, StatusCode::NO_CONTENT, "idempotent");
        for i in 0..3 {
            api.say("ann", &format!("p{i}")).await;
        }
        // Activities are recorded from the change feed: let the workers catch up.
        server.settle().await;
        let (_, log) = api.get("/v1/users/ann/activity?limit=10").await;
        assert_eq!(
            log["total"], 5,
            "a repeated like is not recorded twice: {log}"
        );
        assert_eq!(types(&log), ["post", "post", "post", "like", "follow"]);
        assert_eq!(log["items"][3]["ref"], post_id);
        assert_eq!(log["items"][4]["ref"], "ben");
        assert!(log["items"][0]["ts"].as_str().unwrap().ends_with('Z'));
        let (_, deep) = api.get("/v1/users/ann/activity?skip=3&limit=2").await;
        assert_eq!(types(&deep), ["like", "follow"]);
        assert_eq!(api.delete(&like).await.0, StatusCode::NO_CONTENT);
        assert_eq!(
            api.delete(&like).await.0,
            StatusCode::NO_CONTENT,
            "idempotent"
        );

        // `Api` also checks that each of these is a complete problem+json body.
        for (path, code) in [
            // Acting for a user nobody holds a token of: unauthenticated.
            ("/v1/users/ghost/activity", 401),
            ("/v1/users/ann/activity?skip=-1", 422),
            ("/v1/users/ann/activity?skip=x", 422),
            ("/v1/users/ann/activity?skip=10000001", 422),
            ("/v1/users/ann/activity?limit=0", 422),
            ("/v1/users/ann/activity?limit=101", 422),
        ] {
            assert_eq!(api.get(path).await.0.as_u16(), code, "{path}");
        }
        let (_, beyond) = api.get("/v1/users/ann/activity?skip=50").await;
        assert_eq!(
            (
                beyond["items"].as_array().unwrap().len(),
                beyond["total"].as_u64()
            ),
            (0, Some(5))
        );
        for (method, path, expected) in [
            (
                reqwest::Method::PUT,
                "/v1/users/ghost/likes/000000000000000000000000".to_owned(),
                StatusCode::UNAUTHORIZED,
            ),
            (
                reqwest::Method::PUT,
                "/v1/users/ann/likes/000000000000000000000000".to_owned(),
                StatusCode::NOT_FOUND,
            ),
            (
                reqwest::Method::PUT,
                "/v1/users/ann/likes/nope".to_owned(),
                StatusCode::NOT_FOUND,
            ),
            (
                reqwest::Method::DELETE,
                format!("/v1/users/ghost/likes/{post_id}"),
                StatusCode::UNAUTHORIZED,
            ),
        ] {
            let (status, _) = api.send(method.clone(), &path, None).await;
            assert_eq!(status, expected, "{method} {path}");
        }
        server.stop().await;
    }
}

/// The `type` of each item of an activity page, in order.
fn types(page: &Value) -> Vec<&str> {
    page["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["type"].as_str().unwrap())
        .collect()
}

/// Sixteen concurrent posts by one author: the log, written by the worker in feed
/// order, is newest first by time and holds each post once.
#[tokio::test]
async fn concurrent_posts_give_a_newest_first_log_with_each_post_once() {
    for kind in kinds("concurrent_posts_give_a_newest_first_log_with_each_post_once") {
        let server = TestServer::start(fresh_config(kind)).await;
        let api = server.api();
        api.user("busy").await;
        let mut tasks = Vec::new();
        for i in 0..16 {
            let api = server.api();
            tasks.push(tokio::spawn(async move {
                api.say("busy", &format!("burst {i}")).await
            }));
        }
        let mut posted = Vec::new();
        for task in tasks {
            posted.push(task.await.unwrap());
        }
        server.settle().await;
        let (_, log) = api.get("/v1/users/busy/activity?limit=100").await;
        let items = log["items"].as_array().unwrap();
        let mut refs: Vec<&str> = items.iter().map(|i| i["ref"].as_str().unwrap()).collect();
        let times: Vec<&str> = items.iter().map(|i| i["ts"].as_str().unwrap()).collect();
        assert!(
            times.windows(2).all(|w| w[0] >= w[1]),
            "{kind:?}: newest first by time: {times:?}"
        );
        refs.sort_unstable();
        posted.sort_unstable();
        assert_eq!(refs, posted, "{kind:?}: each post once");
        server.stop().await;
    }
}
