//! Concurrent writers: posts by many authors and sized pushes into one user never
//! overfill a bucket or the cache, and roll over cleanly.

use std::collections::HashSet;
use std::sync::Arc;

use socialite::domain::{BucketKind, FeedStrategy, PostId, TimelineEntry};

use super::{settings, walk};
use crate::common::{fresh_store, kinds};

#[tokio::test]
async fn concurrent_posts_never_overfill_buckets_or_the_cache() {
    const AUTHORS: usize = 16;
    const POSTS_EACH: usize = 10;
    for kind in kinds("concurrent_posts_never_overfill_buckets_or_the_cache") {
        for strategy in [FeedStrategy::SizedBuckets, FeedStrategy::Cache] {
            let store = fresh_store(kind).await;
            let mut settings = settings(strategy, true);
            settings.bucket_size = 5;
            settings.cache_size = 10;
            let social = Arc::new(crate::common::social(store.store.clone(), &settings));
            social.create_user("fan", "fan").await.unwrap();
            for a in 0..AUTHORS {
                let author = format!("author{a}");
                social.create_user(&author, &author).await.unwrap();
                social.follow("fan", &author).await.unwrap();
            }
            social.timeline("fan", None, 10).await.unwrap();

            let mut tasks = Vec::new();
            for a in 0..AUTHORS {
                for p in 0..POSTS_EACH {
                    let social = social.clone();
                    tasks.push(tokio::spawn(async move {
                        social
                            .post(&format!("author{a}"), &format!("{a}-{p}"))
                            .await
                            .unwrap()
                            .id
                    }));
                }
            }
            let mut posted = Vec::new();
            for task in tasks {
                posted.push(task.await.unwrap());
            }
            posted.sort_by_key(|id| std::cmp::Reverse(*id));
            let label = format!("{kind:?}/{strategy}");

            match strategy {
                FeedStrategy::SizedBuckets => {
                    let buckets = store
                        .store
                        .timelines
                        .buckets(BucketKind::Sized, "fan", None, 0, 10_000, usize::MAX)
                        .await
                        .unwrap();
                    let mut seen = HashSet::new();
                    for bucket in &buckets {
                        assert!(
                            bucket.pushes <= 5,
                            "{label}: bucket {} took {} pushes",
                            bucket.key,
                            bucket.pushes
                        );
                        assert!(bucket.entries.len() <= 5, "{label}: bucket over size");
                        for entry in &bucket.entries {
                            assert!(seen.insert(entry.id), "{label}: {} stored twice", entry.id);
                        }
                    }
                    let stored: HashSet<PostId> = seen;
                    assert_eq!(
                        stored,
                        posted.iter().copied().collect::<HashSet<_>>(),
                        "{label}: lost entries"
                    );
                    let keys: HashSet<i64> = buckets.iter().map(|b| b.key).collect();
                    assert_eq!(
                        keys.len(),
                        buckets.len(),
                        "{label}: one document per sequence number"
                    );
                }
                _ => {
                    let cache = store.store.timelines.cache("fan").await.unwrap().unwrap();
                    let ids: Vec<PostId> = cache.entries.iter().map(|e| e.id).collect();
                    let mut distinct = ids.clone();
                    distinct.dedup();
                    assert_eq!(ids, distinct, "{label}: duplicated cache entries");
                    assert_eq!(
                        ids,
                        posted[..10].to_vec(),
                        "{label}: the cache holds the newest 10"
                    );
                }
            }
            let all: Vec<PostId> = walk(&social, "fan", 7)
                .await
                .into_iter()
                .map(|i| i.0)
                .collect();
            assert_eq!(
                all, posted,
                "{label}: the timeline lost or duplicated posts"
            );
        }
    }
}

#[tokio::test]
async fn concurrent_sized_pushes_into_one_user_roll_over_cleanly() {
    for kind in kinds("concurrent_sized_pushes_into_one_user_roll_over_cleanly") {
        let store = fresh_store(kind).await;
        let users = vec!["solo".to_owned()];
        let ids: Vec<PostId> = (0..96)
            .map(|i| PostId::at(1_700_000_000_000 + i, 0))
            .collect();
        let mut tasks = Vec::new();
        for chunk in ids.chunks(3) {
            let (store, users, chunk) = (store.store.clone(), users.clone(), chunk.to_vec());
            tasks.push(tokio::spawn(async move {
                let entries: Vec<TimelineEntry> = chunk
                    .iter()
                    .map(|id| TimelineEntry {
                        id: *id,
                        author: "x".into(),
                        text: Some("t".into()),
                        name: None,
                        reply_to_author: None,
                        repost_of: None,
                    })
                    .collect();
                store
                    .timelines
                    .sized_push(&users, &entries, 7)
                    .await
                    .unwrap();
            }));
        }
        for task in tasks {
            task.await.unwrap();
        }
        let buckets = store
            .store
            .timelines
            .buckets(BucketKind::Sized, "solo", None, 0, 1000, usize::MAX)
            .await
            .unwrap();
        let mut stored: Vec<PostId> = buckets
            .iter()
            .flat_map(|b| b.entries.iter().map(|e| e.id))
            .collect();
        assert!(
            buckets
                .iter()
                .all(|b| b.pushes <= 7 && b.entries.len() <= 7),
            "{kind:?}: over size"
        );
        assert_eq!(
            buckets.len(),
            96usize.div_ceil(7),
            "{kind:?}: buckets are filled before rolling over: {:?}",
            buckets
                .iter()
                .map(|b| (b.key, b.pushes))
                .collect::<Vec<_>>()
        );
        stored.sort();
        assert_eq!(stored, ids, "{kind:?}: lost or duplicated entries");

        // A page read asks each bucket only for its newest entries below the cursor.
        let before = ids[50];
        let trimmed = store
            .store
            .timelines
            .buckets(BucketKind::Sized, "solo", Some(before), 0, 1000, 3)
            .await
            .unwrap();
        for bucket in &trimmed {
            let whole = buckets.iter().find(|b| b.key == bucket.key).unwrap();
            let expected: Vec<PostId> = whole
                .entries
                .iter()
                .map(|e| e.id)
                .filter(|id| *id < before)
                .take(3)
                .collect();
            let got: Vec<PostId> = bucket.entries.iter().map(|e| e.id).collect();
            assert_eq!(got, expected, "{kind:?}: bucket {} trimmed", bucket.key);
        }
        assert!(
            trimmed.iter().all(|b| !b.entries.is_empty()),
            "{kind:?}: a bucket with nothing below the cursor was returned"
        );
        let mut expected_keys: Vec<i64> = buckets
            .iter()
            .filter(|b| b.entries.iter().any(|e| e.id < before))
            .map(|b| b.key)
            .collect();
        let mut got_keys: Vec<i64> = trimmed.iter().map(|b| b.key).collect();
        expected_keys.sort();
        got_keys.sort();
        assert_eq!(
            got_keys, expected_keys,
            "{kind:?}: buckets below the cursor"
        );
    }
}
