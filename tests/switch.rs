//! Restarting a store under another `feed.strategy` (see `feed::switch`): every
//! timeline, walked to its end, is what `src/derived.rs` says the new strategy serves;
//! a rebuild cut short is done again at the next start; a process configured
//! differently from the one serving the store refuses to start.

mod common;
#[path = "switch/crashing.rs"]
mod crashing;

use std::collections::BTreeSet;
use std::sync::Arc;

use common::{Api, Kind, TestConfig, fresh_config, kinds};
use crashing::CrashingRebuild;
use reqwest::StatusCode;
use socialite::app::{RunningServer, open_store, spawn, spawn_with_store};
use socialite::derived::{FollowSource, PostSource, Sources, TimelineRules, Window, bucket_faults};
use socialite::domain::{FeedStrategy, PostId, now_ms};
use socialite::feed::FeedSettings;
use socialite::store::Store;

use FeedStrategy::{Cache, FanoutOnRead, Hybrid, SizedBuckets, TimedBuckets};

const USERS: [&str; 6] = ["star", "ann", "bob", "cy", "dee", "eve"];
/// Low enough that `star`, followed by everyone, is a celebrity under `hybrid`.
const THRESHOLD: u64 = 2;

/// The sources as the test wrote them, each write in the window of its request.
struct World {
    api: Api,
    sources: Sources,
    phase: usize,
}

impl World {
    fn new(api: Api) -> World {
        World {
            api,
            sources: Sources::default(),
            phase: 0,
        }
    }

    async fn say(&mut self, user: &str) {
        let text = format!("{user} in phase {}", self.phase);
        let from = now_ms();
        let id = self.api.say(user, &text).await;
        let created = Window { from, to: now_ms() };
        let post = PostSource {
            author: user.to_owned(),
            text,
            created,
            deleted: None,
            reply_to: None,
        };
        self.sources.posts.insert(id.parse().unwrap(), post);
    }

    async fn follow(&mut self, follower: &str, followee: &str) {
        let from = now_ms();
        let (status, body) = self
            .api
            .put(&format!("/v1/users/{follower}/following/{followee}"))
            .await;
        assert_eq!(status, StatusCode::NO_CONTENT, "{body}");
        let edge = FollowSource {
            created: Window { from, to: now_ms() },
        };
        let key = (follower.to_owned(), followee.to_owned());
        self.sources.follows.insert(key, edge);
    }

    /// Writes of one phase: the first makes the users and the graph (everyone follows
    /// `star`, a ring of follows besides), a delete and an unfollow; every phase has
    /// everyone post, `star` twice; then every timeline is read, so that caches exist.
    async fn phase(&mut self, server: &RunningServer) {
        if self.phase == 0 {
            for user in USERS {
                self.api.user(user).await;
                self.sources.users.insert(user.to_owned(), user.to_owned());
            }
            for (i, user) in USERS.iter().enumerate().skip(1) {
                self.follow(user, "star").await;
                self.follow(user, USERS[1 + i % (USERS.len() - 1)]).await;
            }
            settle(server).await;
        }
        for user in USERS {
            self.say(user).await;
        }
        self.say("star").await;
        if self.phase == 0 {
            let (id, _) = self.sources.posts.iter().next_back().unwrap();
            let (id, from) = (*id, now_ms());
            let (status, _) = self.api.delete(&format!("/v1/posts/{id}")).await;
            assert_eq!(status, StatusCode::NO_CONTENT);
            let deleted = Some(Window { from, to: now_ms() });
            self.sources.posts.get_mut(&id).unwrap().deleted = deleted;
            let (status, _) = self.api.delete("/v1/users/ann/following/bob").await;
            assert_eq!(status, StatusCode::NO_CONTENT);
            self.sources
                .follows
                .remove(&("ann".to_owned(), "bob".to_owned()));
        }
        settle(server).await;
        for user in USERS {
            self.timeline(user).await;
        }
        // Written after the caches were built: only upkeep brings them in.
        self.say("star").await;
        self.say("bob").await;
        settle(server).await;
        self.phase += 1;
    }

    async fn timeline(&self, user: &str) -> BTreeSet<PostId> {
        let items = self
            .api
            .walk(&format!("/v1/users/{user}/timeline?limit=3"), "before")
            .await;
        items
            .iter()
            .map(|item| item["id"].as_str().unwrap().parse().unwrap())
            .collect()
    }

    /// Every timeline walked to its end against `src/derived.rs`'s bounds for
    /// `strategy`.
    async fn check(&self, strategy: FeedStrategy, label: &str) {
        let rules = TimelineRules {
            strategy,
            backfill_on_follow: FeedSettings::default().backfill_on_follow,
        };
        for user in USERS {
            let served = self.timeline(user).await;
            let bounds = self.sources.served_timeline(user, rules);
            let faults = bucket_faults(&bounds, &served);
            assert!(
                faults.is_empty(),
                "{label}: {user}'s timeline under {strategy}: missing {:?}, extra {:?} \
                 (served {} entries, at least {} due)",
                faults.missing,
                faults.extra,
                served.len(),
                bounds.lower.len()
            );
        }
    }
}

async fn settle(server: &RunningServer) {
    server
        .state
        .workers
        .settle(std::time::Duration::from_secs(30))
        .await
        .expect("the workers catch up");
}

fn configured(test: &TestConfig, strategy: FeedStrategy) -> socialite::config::Config {
    let mut config = test.config.clone();
    config.feed.strategy = strategy;
    config.feed.hybrid_threshold = THRESHOLD;
    config.feed.cache_size = 4;
    config.feed.bucket_size = 3;
    config
}

/// Serves a phase of writes under each of `strategies` in turn, on one store, then
/// starts under the last and checks every timeline.
async fn switch_through(kind: Kind, strategies: &[FeedStrategy]) {
    let test = fresh_config(kind);
    let (last, earlier) = strategies.split_last().unwrap();
    let mut world: Option<World> = None;
    for &strategy in earlier {
        let server = spawn(&configured(&test, strategy)).await.expect("starts");
        let api = match &world {
            Some(world) => world.api.at(format!("http://{}", server.addr)),
            None => Api::new(reqwest::Client::new(), format!("http://{}", server.addr)),
        };
        let world = world.get_or_insert_with(|| World::new(api.at(api.base())));
        world.api = api;
        world.phase(&server).await;
        // What the strategy served before the switch is right too.
        world
            .check(strategy, &format!("{kind:?} before the switch"))
            .await;
        server.stop().await.expect("stops");
    }
    let mut world = world.unwrap();
    let server = spawn(&configured(&test, *last)).await.expect("starts");
    world.api = world.api.at(format!("http://{}", server.addr));
    let label = format!("{kind:?}, {strategies:?}");
    world.check(*last, &format!("{label}, at start")).await;
    // And it stays right as the new strategy keeps it.
    world.phase(&server).await;
    world
        .check(*last, &format!("{label}, after more writes"))
        .await;
    server.stop().await.expect("stops");
}

#[tokio::test]
async fn hybrid_to_cache_serves_the_celebrities_posts() {
    for kind in kinds("hybrid_to_cache") {
        switch_through(kind, &[Hybrid, Cache]).await;
    }
}

#[tokio::test]
async fn cache_to_sized_buckets_materialises_the_buckets() {
    for kind in kinds("cache_to_sized_buckets") {
        switch_through(kind, &[Cache, SizedBuckets]).await;
    }
}

#[tokio::test]
async fn cache_to_timed_buckets_materialises_the_buckets() {
    for kind in kinds("cache_to_timed_buckets") {
        switch_through(kind, &[Cache, TimedBuckets]).await;
    }
}

/// Back to the cache after buckets: caches of the first period must not be served.
#[tokio::test]
async fn sized_buckets_to_cache_serves_no_cache_of_before() {
    for kind in kinds("sized_buckets_to_cache") {
        switch_through(kind, &[Cache, SizedBuckets, Cache]).await;
    }
}

/// Back to `hybrid` after `fanout_on_read`, which kept no cache up to date.
#[tokio::test]
async fn fanout_on_read_to_hybrid_serves_no_cache_of_before() {
    for kind in kinds("fanout_on_read_to_hybrid") {
        switch_through(kind, &[Hybrid, FanoutOnRead, Hybrid]).await;
    }
}

/// A start whose rebuild died leaves the store recorded as switching, not as the new
/// strategy: the next start rebuilds, and serves complete timelines.
#[tokio::test]
async fn a_rebuild_cut_short_is_done_again_at_the_next_start() {
    for kind in kinds("a_rebuild_cut_short") {
        let test = fresh_config(kind);
        let server = spawn(&configured(&test, Cache)).await.expect("starts");
        let mut world = World::new(Api::new(
            reqwest::Client::new(),
            format!("http://{}", server.addr),
        ));
        world.phase(&server).await;
        server.stop().await.expect("stops");

        let config = configured(&test, SizedBuckets);
        let store = open_store(&config).await.unwrap();
        let crashing = Store {
            bulk: Arc::new(CrashingRebuild(store.bulk.clone())),
            ..store.clone()
        };
        let refused = spawn_with_store(&config, crashing).await;
        let error = format!("{:#}", refused.err().expect("the start fails"));
        assert!(error.contains("killed mid-rebuild"), "{error}");
        let record = store.bulk.feed_record().await.unwrap().unwrap();
        assert!(
            record.contains("\"switching\":true") && record.contains("sized_buckets"),
            "{kind:?}: recorded {record}"
        );

        let server = spawn_with_store(&config, store).await.expect("starts");
        world.api = world.api.at(format!("http://{}", server.addr));
        world
            .check(SizedBuckets, &format!("{kind:?} after a cut rebuild"))
            .await;
        server.stop().await.expect("stops");
    }
}

/// A process configured with another strategy than the one serving the store refuses
/// to start, and says how to fix it; so does any that finds a load or rebuild under way.
#[tokio::test]
async fn a_second_process_with_another_strategy_refuses() {
    for kind in kinds("a_second_process_refuses") {
        let test = fresh_config(kind);
        let first = spawn(&configured(&test, Cache)).await.expect("starts");
        let mut world = World::new(Api::new(
            reqwest::Client::new(),
            format!("http://{}", first.addr),
        ));
        world.phase(&first).await;

        let refused = spawn(&configured(&test, SizedBuckets)).await;
        let error = format!("{:#}", refused.err().expect("the second start fails"));
        assert!(
            error.contains("feed.strategy = cache")
                && error.contains("feed.strategy = sized_buckets")
                && error.contains("another process serves it")
                && error.contains("Stop every other process"),
            "{kind:?}: {error}"
        );
        // The first is unaffected.
        world
            .check(Cache, &format!("{kind:?}, beside a refused start"))
            .await;
        // The same settings start beside it.
        let second = spawn(&configured(&test, Cache)).await.expect("starts");
        second.stop().await.expect("stops");
        first.stop().await.expect("stops");

        // A load or a rebuild under way in another process (it holds the store as a load
        // does) refuses a start too, whatever its settings.
        let config = configured(&test, SizedBuckets);
        let other = open_store(&config).await.unwrap();
        assert!(other.bulk.begin_load(now_ms()).await.unwrap().is_ok());
        for strategy in [Cache, SizedBuckets] {
            let refused = spawn(&configured(&test, strategy)).await;
            let error = format!("{:#}", refused.err().expect("the start fails"));
            assert!(
                error.contains("bulk load"),
                "{kind:?}, {strategy:?}: {error}"
            );
        }
        other.bulk.finish_load().await.unwrap();
        drop(other);
        let store = open_store(&config).await.unwrap();
        let server = spawn_with_store(&config, store).await.expect("starts");
        world.api = world.api.at(format!("http://{}", server.addr));
        world
            .check(SizedBuckets, &format!("{kind:?} once released"))
            .await;
        server.stop().await.expect("stops");
    }
}

/// A server with its workers off holds no lease, yet a start under other settings sees
/// it and refuses: the check is the store's serve registration, not the leases.
#[tokio::test]
async fn a_server_without_workers_keeps_a_switch_out() {
    for kind in kinds("a_server_without_workers") {
        let test = fresh_config(kind);
        let mut quiet = configured(&test, Cache);
        quiet.workers.enabled = false;
        let first = spawn(&quiet).await.expect("starts");
        let refused = spawn(&configured(&test, SizedBuckets)).await;
        let error = format!("{:#}", refused.err().expect("the second start fails"));
        assert!(
            error.contains("another process serves it"),
            "{kind:?}: {error}"
        );
        first.stop().await.expect("stops");
        let second = spawn(&configured(&test, SizedBuckets))
            .await
            .expect("starts once alone");
        second.stop().await.expect("stops");
    }
}
