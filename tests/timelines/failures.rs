//! Injected failures: a fan-out batch that fails, a retraction that fails.

use futures::StreamExt;
use socialite::domain::{BucketKind, FeedStrategy, PostId};
use socialite::store::Store;

use crate::common::faults::FaultyTimelines;
use crate::common::{fresh_store, kinds};
use crate::{all_bucket_ids, names, settings, social, users_following, walk};

/// Whether each of `users` holds `post` in the timeline `strategy` writes.
async fn holders(store: &Store, strategy: FeedStrategy, users: &[String], post: PostId) -> usize {
    let holds = users.iter().map(|user| async move {
        let ids = match strategy {
            FeedStrategy::SizedBuckets => all_bucket_ids(store, BucketKind::Sized, user).await,
            FeedStrategy::TimedBuckets => all_bucket_ids(store, BucketKind::Timed, user).await,
            _ => {
                let cache = store.timelines.cache(user).await.unwrap().unwrap();
                cache.entries.iter().map(|e| e.id).collect()
            }
        };
        ids.contains(&post)
    });
    let found: Vec<bool> = futures::stream::iter(holds).buffered(16).collect().await;
    found.into_iter().filter(|held| *held).count()
}

#[tokio::test]
async fn a_failed_fanout_batch_is_retried_and_stops_no_other() {
    for kind in kinds("a_failed_fanout_batch_is_retried_and_stops_no_other") {
        let t = fresh_store(kind).await;
        let faulty = FaultyTimelines::new(t.store.timelines.clone());
        let store = Store {
            timelines: faulty.clone(),
            ..t.store.clone()
        };
        // 1,001 followers: batches of the author, f0000-f0999 and f1000, in that order.
        let followers = names("f", 1001);
        users_following(&t.store, &["author".to_owned()], None).await;
        users_following(&t.store, &followers, Some("author")).await;
        let (first, rest) = followers.split_at(1000);
        for strategy in [FeedStrategy::TimedBuckets, FeedStrategy::SizedBuckets] {
            let social = social(&store, &settings(strategy, true));
            let label = format!("{kind:?}/{strategy}");
            let once = std::sync::atomic::AtomicBool::new(true);
            faulty.set(Box::new(move |method, users| {
                method.ends_with("_push")
                    && users.first().is_some_and(|u| u == "f0000")
                    && once.swap(false, std::sync::atomic::Ordering::SeqCst)
            }));
            let post = social.post("author", "once").await.unwrap().id;
            assert_eq!(faulty.failures(), 1, "{label}");
            assert_eq!(
                holders(&t.store, strategy, &followers, post).await,
                1001,
                "{label}"
            );

            faulty.set(Box::new(|method, users| {
                method.ends_with("_push") && users.first().is_some_and(|u| u == "f0000")
            }));
            assert!(social.post("author", "always").await.is_err(), "{label}");
            assert_eq!(faulty.failures(), 3, "{label}: a bounded number of tries");
            let post = social.posts("author", None, 1).await.unwrap().items[0].id;
            let author = ["author".to_owned()];
            assert_eq!(
                holders(&t.store, strategy, &author, post).await,
                1,
                "{label}"
            );
            assert_eq!(
                holders(&t.store, strategy, rest, post).await,
                1,
                "{label}: after"
            );
            assert_eq!(holders(&t.store, strategy, first, post).await, 0, "{label}");
        }
        // A cache fan-out is one store call; it is retried as a whole.
        let social = social(&store, &settings(FeedStrategy::Cache, true));
        for user in ["author", "f0000", "f1000"] {
            social.timeline(user, None, 1).await.unwrap();
        }
        let once = std::sync::atomic::AtomicBool::new(true);
        faulty.set(Box::new(move |method, _| {
            method == "cache_push_to_audience"
                && once.swap(false, std::sync::atomic::Ordering::SeqCst)
        }));
        let post = social.post("author", "cached").await.unwrap().id;
        let readers = ["author", "f0000", "f1000"].map(String::from);
        assert_eq!(
            holders(&t.store, FeedStrategy::Cache, &readers, post).await,
            3
        );
    }
}

#[tokio::test]
async fn a_deleted_post_never_shows_when_its_retraction_failed() {
    for kind in kinds("a_deleted_post_never_shows_when_its_retraction_failed") {
        for strategy in [
            FeedStrategy::TimedBuckets,
            FeedStrategy::SizedBuckets,
            FeedStrategy::Cache,
        ] {
            let t = fresh_store(kind).await;
            let faulty = FaultyTimelines::new(t.store.timelines.clone());
            faulty.set(Box::new(|method, _| method == "remove_post_entries"));
            let store = Store {
                timelines: faulty.clone(),
                ..t.store.clone()
            };
            let social = social(&store, &settings(strategy, true));
            for id in ["reader", "author"] {
                social.create_user(id, id).await.unwrap();
            }
            social.follow("reader", "author").await.unwrap();
            social.timeline("reader", None, 5).await.unwrap();
            let gone = social.post("author", "to be deleted").await.unwrap().id;
            let kept = social.post("author", "kept").await.unwrap().id;
            assert!(
                social.delete_post(gone).await.is_err(),
                "{kind:?}/{strategy}"
            );
            assert!(faulty.failures() > 0);
            assert_eq!(
                walk(&social, "reader", 1).await,
                vec![kept],
                "{kind:?}/{strategy}"
            );
        }
    }
}
