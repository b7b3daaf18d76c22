//! `socialite audit`: a store whose derived data agrees with its sources audits clean;
//! each derived datum corrupted directly in the store is named as exactly its kind, and
//! `--repair` mends it; beside a live server under writes nothing is reported wrong.
//!
//! This file holds the world the audits run on and the in-process corruptions (their
//! writes past the ports in `audit/raw.rs`); the command line (exit statuses, repair)
//! and the live server are in `audit/cli.rs`, the fields of timeline entries in
//! `audit/entries.rs`, notifications, reply counts and blocked authors in
//! `audit/social.rs`, the reposts a timeline must hold in `audit/reposts.rs`, what the
//! audit refuses and that it only reads in `audit/readonly.rs`, the display-name word
//! index in `audit/names.rs`.

#[path = "audit/cli.rs"]
mod cli;
mod common;
#[path = "audit/entries.rs"]
mod entries;
#[path = "audit/names.rs"]
mod names;
#[path = "audit/raw.rs"]
mod raw;
#[path = "audit/readonly.rs"]
mod readonly;
#[path = "audit/reposts.rs"]
mod reposts;
#[path = "audit/social.rs"]
mod social;
#[path = "audit/window.rs"]
mod window;

use std::time::Duration;

use common::{Kind, fresh_config, fresh_name, kinds, mongo_base_uri, mongo_uri_with_database};
use socialite::app::{build_state, open_store};
use socialite::audit::{self, Kind as Audited, Report, Settings};
use socialite::config::Config;
use socialite::domain::{BucketKind, FeedStrategy, TimelineEntry, TimelineKind};
use socialite::http::AppState;
use socialite::store::Store;

use raw::Raw;

/// A configuration on a fresh store of `kind`, timelines built by `strategy`.
pub fn config(kind: Kind, strategy: FeedStrategy) -> (Config, tempfile::TempDir) {
    let test = fresh_config(kind);
    let mut config = test.config;
    config.feed.strategy = strategy;
    // Hybrid: everyone with more than one follower is a celebrity, merged at read time.
    config.feed.hybrid_threshold = 1;
    if kind == Kind::Mongo {
        let uri = mongo_uri_with_database(&mongo_base_uri().unwrap(), &fresh_name("audit"));
        config.storage.mongodb_uri = Some(uri);
    }
    (config, test.dir)
}

/// Users, follows (one undone), posts with tags (one deleted), a like, and every
/// timeline read once (building the caches), with the workers caught up and stopped.
pub async fn world(config: &Config) -> Store {
    let store = open_store(config).await.unwrap();
    let state: AppState = build_state(config, store.clone()).await.unwrap();
    let social = &state.social;
    let users = ["ann", "bob", "cat", "dan", "eve"];
    for user in users {
        social.create_user(user, user).await.unwrap();
    }
    for (a, b) in [
        ("ann", "bob"),
        ("ann", "cat"),
        ("bob", "ann"),
        ("cat", "bob"),
        ("dan", "ann"),
        ("dan", "cat"),
    ] {
        social.follow(a, b).await.unwrap();
    }
    social.unfollow("dan", "ann").await.unwrap();
    let mut posts = Vec::new();
    for i in 0..3 {
        for user in users {
            posts.push(
                social
                    .post(user, &format!("{user} {i} #t{}", i % 2))
                    .await
                    .unwrap(),
            );
        }
    }
    social.activity().like("ann", posts[1].id).await.unwrap();
    let cat = posts.iter().find(|p| p.author == "cat").unwrap();
    social.delete_post(cat.id).await.unwrap();
    for user in users {
        social.timeline(user, None, 20).await.unwrap();
    }
    settle_and_stop(&state).await;
    store
}

pub fn settings(config: &Config) -> Settings {
    let mut settings = Settings::new(config.feed.strategy, config.feed.backfill_on_follow);
    settings.wait = Duration::from_secs(5);
    settings
}

pub async fn audit_of(store: &Store, config: &Config) -> Report {
    audit::audit(store, &settings(config), &()).await.unwrap()
}

fn assert_clean(report: &Report, label: &str) {
    assert!(report.clean(), "{label}: {report}");
    for kind in Audited::ALL {
        assert_eq!(report.pending_count(kind), 0, "{label}: {report}");
    }
}

/// Moves every change-feed worker to the feed's head without applying anything: a
/// corruption that reached the MongoDB change feed (a counter's `$inc`) is then one the
/// workers will not mend, as if its change had been applied and lost.
pub async fn skip_the_workers_past_it(store: &Store) {
    let Some(head) = store.change_feed.head().await.unwrap() else {
        return;
    };
    let now = socialite::domain::now_ms();
    for name in ["activity", "timelines", "counters", "notifications"] {
        let lease = store
            .leases
            .acquire(name, "test", now, 60_000)
            .await
            .unwrap();
        assert!(lease.held_by("test"), "{lease:?}");
        assert!(
            store
                .leases
                .commit(name, "test", lease.version, &head, now, 60_000)
                .await
                .unwrap()
        );
        store
            .leases
            .release(name, "test", lease.version)
            .await
            .unwrap();
    }
}

/// Lets the workers apply every change written so far (within a minute), then stops them.
pub async fn settle_and_stop(state: &AppState) {
    assert!(
        state
            .workers
            .settle(Duration::from_secs(60))
            .await
            .is_some(),
        "the workers did not settle within 60 s"
    );
    state.workers.stop().await;
}

/// After a corruption: the audit names exactly `kind` (with a detail holding `named`,
/// when given); the repair mends it; the audit after it, past whatever changes the
/// repair itself wrote to the change feed, is clean.
async fn corrupted(
    store: &Store,
    config: &Config,
    kind: Audited,
    label: &str,
    named: Option<&str>,
) {
    skip_the_workers_past_it(store).await;
    let report = audit_of(store, config).await;
    assert_eq!(report.wrong_kinds(), [kind], "{label}: {report}");
    if let Some(named) = named {
        assert!(report.to_string().contains(named), "{label}: {report}");
    }
    let done = audit::repair::repair(config, store, &report).await.unwrap();
    assert!(!done.is_empty(), "{label}");
    skip_the_workers_past_it(store).await;
    assert_clean(
        &audit_of(store, config).await,
        &format!("{label}, repaired"),
    );
}

#[tokio::test]
async fn each_corrupted_datum_is_named_by_its_kind_and_repaired() {
    for kind in kinds("each_corrupted_datum_is_named_by_its_kind_and_repaired") {
        for strategy in [
            FeedStrategy::Cache,
            FeedStrategy::Hybrid,
            FeedStrategy::SizedBuckets,
        ] {
            let label = format!("{kind:?}/{strategy}");
            let (config, _dir) = config(kind, strategy);
            let store = world(&config).await;
            let report = audit_of(&store, &config).await;
            assert_clean(&report, &label);
            for kind in [
                Audited::Counters,
                Audited::Activity,
                Audited::Timelines,
                Audited::Deliveries,
            ] {
                assert!(
                    report.checked.get(&kind).is_some_and(|n| *n > 0),
                    "{label}: {report}"
                );
            }
            let raw = Raw::open(&config).await;

            raw.bump_followers("cat").await;
            corrupted(
                &store,
                &config,
                Audited::Counters,
                &format!("{label}: a counter"),
                None,
            )
            .await;

            let bob = store
                .content
                .posts_by_author("bob", None, 10)
                .await
                .unwrap();
            raw.drop_activity("bob", bob[1].id).await;
            corrupted(
                &store,
                &config,
                Audited::Activity,
                &format!("{label}: an activity entry"),
                None,
            )
            .await;

            store.deliveries.unmark(&[bob[0].id]).await.unwrap();
            corrupted(
                &store,
                &config,
                Audited::Deliveries,
                &format!("{label}: a marker"),
                None,
            )
            .await;

            // A post above the oldest entry of ann's timeline, taken out of every one.
            let timeline = match strategy {
                FeedStrategy::Cache | FeedStrategy::Hybrid => TimelineKind::Cache,
                _ => TimelineKind::Buckets(BucketKind::Sized),
            };
            if strategy != FeedStrategy::SizedBuckets {
                // The repair dropped some caches: every reader builds theirs again.
                let social = build_state(&config, store.clone()).await.unwrap();
                social.workers.stop().await;
                for user in ["ann", "bob"] {
                    social.social.timeline(user, None, 20).await.unwrap();
                }
            }
            store
                .timelines
                .remove_post_entries(timeline, bob[1].id)
                .await
                .unwrap();
            corrupted(
                &store,
                &config,
                Audited::Timelines,
                &format!("{label}: a missing entry"),
                None,
            )
            .await;

            // An entry of eve, whom ann does not follow.
            if strategy != FeedStrategy::SizedBuckets {
                let social = build_state(&config, store.clone()).await.unwrap();
                social.workers.stop().await;
                social.social.timeline("ann", None, 20).await.unwrap();
            }
            let eve = store.content.posts_by_author("eve", None, 1).await.unwrap();
            let entry = TimelineEntry {
                id: eve[0].id,
                author: "eve".into(),
                text: Some(eve[0].text.clone()),
                name: None,
                reply_to_author: None,
                repost_of: None,
            };
            let ann = ["ann".to_owned()];
            match strategy {
                FeedStrategy::Cache | FeedStrategy::Hybrid => {
                    assert_eq!(
                        store
                            .timelines
                            .cache_push(&ann, &[entry], 50)
                            .await
                            .unwrap(),
                        1
                    );
                }
                _ => store
                    .timelines
                    .sized_push(&ann, &[entry], 50)
                    .await
                    .unwrap(),
            }
            corrupted(
                &store,
                &config,
                Audited::Timelines,
                &format!("{label}: a stranger's entry"),
                None,
            )
            .await;

            if kind == Kind::Embedded {
                raw.bump_tag("t1");
                corrupted(
                    &store,
                    &config,
                    Audited::Tags,
                    &format!("{label}: a tag count"),
                    None,
                )
                .await;

                // The event log is history: named, and left as it is by the repair.
                let id = raw.drop_event();
                let report = audit_of(&store, &config).await;
                assert_eq!(report.wrong_kinds(), [Audited::Events], "{label}: {report}");
                let named = format!("change {id} has no event");
                assert!(report.to_string().contains(&named), "{label}: {report}");
                let done = audit::repair::repair(&config, &store, &report)
                    .await
                    .unwrap();
                assert!(
                    done.iter().any(|d| d.contains("not repairable")),
                    "{done:?}"
                );
            }
        }
    }
}
