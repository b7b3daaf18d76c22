//! The timelines worker, through `step()` on every backend: a large audience is fanned
//! out by the worker, not the request; a post whose request died after the insert or in
//! the middle of its fan-out reaches every follower exactly once after the workers catch
//! up, with the activity log and the counters exact.

mod common;

use std::sync::Arc;

use common::faults::FaultyTimelines;
use common::{fresh_store, kinds};
use socialite::domain::{ActivityLimits, FeedStrategy, PostId};
use socialite::feed::FeedSettings;
use socialite::service::Social;
use socialite::store::Store;
use socialite::workers::activity::ActivityWorker;
use socialite::workers::timelines::TimelinesWorker;
use socialite::workers::{ManualClock, Runner, RunnerSettings, Step, Worker};

fn settings(strategy: FeedStrategy, inline_fanout_max: u64) -> FeedSettings {
    FeedSettings {
        strategy,
        cache_size: 20,
        bucket_size: 4,
        inline_fanout_max,
        ..FeedSettings::default()
    }
}

/// Runs `worker` over `store` until it has nothing left to do.
async fn catch_up(store: &Store, worker: Arc<dyn Worker>) {
    let clock = Arc::new(ManualClock::at(socialite::domain::now_ms()));
    let settings = RunnerSettings {
        lease_ttl_ms: 60_000,
        batch_size: 50,
        refresh_ms: 1_000,
    };
    let mut runner = Runner::new(
        worker,
        store.leases.clone(),
        store.change_feed.clone(),
        clock,
        "test",
        settings,
    );
    while let Step::Applied(_) = runner.step().await.unwrap() {}
}

/// How many times each follower's first timeline page shows `post`.
async fn copies(social: &Social, followers: &[String], post: PostId) -> Vec<usize> {
    let mut seen = Vec::new();
    for follower in followers {
        let page = social.timeline(follower, None, 100).await.unwrap();
        seen.push(page.items.iter().filter(|i| i.id == post).count());
    }
    seen
}

async fn audience(social: &Social, author: &str, n: usize) -> Vec<String> {
    social.create_user(author, author).await.unwrap();
    let mut followers = Vec::new();
    for i in 0..n {
        let id = format!("{author}_fan{i}");
        social.create_user(&id, &id).await.unwrap();
        social.follow(&id, author).await.unwrap();
        // A first read builds the follower's cache, so the fan-out has somewhere to go.
        social.timeline(&id, None, 10).await.unwrap();
        followers.push(id);
    }
    followers
}

#[tokio::test]
async fn a_large_audience_is_fanned_out_by_the_worker_not_the_request() {
    for kind in kinds("a_large_audience_is_fanned_out_by_the_worker_not_the_request") {
        for strategy in [FeedStrategy::Cache, FeedStrategy::SizedBuckets] {
            let t = fresh_store(kind).await;
            let feed = settings(strategy, 3);
            let social = Social::new(
                t.store.clone(),
                &feed,
                ActivityLimits::default(),
                Default::default(),
            );
            let followers = audience(&social, "star", 8).await;
            let post = social.post("star", "to many").await.unwrap();
            let own = social.timeline("star", None, 10).await.unwrap();
            assert_eq!(
                own.items[0].id, post.id,
                "{kind:?} {strategy}: read-your-writes"
            );
            // Followers lack it until the worker runs: the request did not fan out.
            // (Cache readers would fall back to a read-through for missing entries, so look
            // at the materialised data itself.)
            let delivered = t.store.deliveries.delivered(&[post.id]).await.unwrap();
            assert!(
                delivered.is_empty(),
                "{kind:?} {strategy}: not delivered yet"
            );
            catch_up(
                &t.store,
                Arc::new(TimelinesWorker::new(t.store.clone(), &feed)),
            )
            .await;
            assert_eq!(
                t.store.deliveries.delivered(&[post.id]).await.unwrap(),
                vec![post.id]
            );
            assert_eq!(
                copies(&social, &followers, post.id).await,
                vec![1; 8],
                "{kind:?} {strategy}"
            );
            if strategy == FeedStrategy::Cache {
                for follower in &followers {
                    let cache = t.store.timelines.cache(follower).await.unwrap().unwrap();
                    assert_eq!(cache.entries.iter().filter(|e| e.id == post.id).count(), 1);
                }
            }
        }
    }
}

#[tokio::test]
async fn a_post_cut_short_after_the_insert_or_mid_fan_out_is_finished_by_the_workers() {
    for kind in kinds("a_post_cut_short_after_the_insert_or_mid_fan_out") {
        // "after the insert": every timeline write fails; "mid fan-out": writes for one
        // follower fail, so some batches land and one does not.
        for (label, victim) in [
            ("after the insert", None),
            ("mid fan-out", Some("poet_fan3")),
        ] {
            let t = fresh_store(kind).await;
            let feed = settings(FeedStrategy::SizedBuckets, 1000);
            let faulty = FaultyTimelines::new(t.store.timelines.clone());
            let mut broken = t.store.clone();
            broken.timelines = faulty.clone();
            let social = Social::new(broken, &feed, ActivityLimits::default(), Default::default());
            let followers = audience(&social, "poet", 6).await;
            let victim = victim.map(str::to_owned);
            faulty.set(Box::new(move |method, users| {
                method == "sized_push"
                    && victim.as_ref().is_none_or(|v| users.iter().any(|u| u == v))
            }));
            let failed = social.post("poet", "interrupted").await;
            assert!(failed.is_err(), "{kind:?} {label}: the request fails");
            faulty.set(Box::new(|_, _| false));

            // "Restart": the workers catch up over the healthy store.
            let post = social.posts("poet", None, 1).await.unwrap().items[0].clone();
            catch_up(
                &t.store,
                Arc::new(TimelinesWorker::new(t.store.clone(), &feed)),
            )
            .await;
            catch_up(
                &t.store,
                Arc::new(ActivityWorker::new(
                    t.store.activity.clone(),
                    ActivityLimits::default(),
                )),
            )
            .await;
            assert_eq!(
                copies(&social, &followers, post.id).await,
                vec![1; 6],
                "{kind:?} {label}"
            );
            let log = t.store.activity.activities("poet", 0, 100).await.unwrap();
            let posted: Vec<_> = log
                .items
                .iter()
                .filter(|a| a.reference == post.id.to_string())
                .collect();
            assert_eq!(posted.len(), 1, "{kind:?} {label}: logged once");
            let poet = t.store.users.user("poet").await.unwrap().unwrap();
            assert_eq!(
                (poet.posts_count, poet.followers_count),
                (1, 6),
                "{kind:?} {label}"
            );
        }
    }
}
