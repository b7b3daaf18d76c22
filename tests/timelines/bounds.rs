//! Size bounds: a timed period splits into parts of at most
//! `feed.timed_bucket_max_entries`, each entry held once, and settings under which a
//! timeline document could pass MongoDB's 16 MiB are refused at start-up.

use socialite::domain::{BucketKind, FeedStrategy};

use crate::common::{fresh_store, kinds};
use crate::{all_bucket_ids, newest_first, settings, social, walk};

#[tokio::test]
async fn timed_periods_split_into_parts_under_the_bound() {
    for kind in kinds("timed_periods_split_into_parts_under_the_bound") {
        let t = fresh_store(kind).await;
        let mut settings = settings(FeedStrategy::TimedBuckets, true);
        settings.timed_bucket_max_entries = 3;
        let social = social(&t.store, &settings);
        for id in ["reader", "a", "b"] {
            social.create_user(id, id).await.unwrap();
        }
        social.follow("reader", "a").await.unwrap();
        let mut posted = Vec::new();
        for i in 0..10 {
            posted.push(social.post("a", &format!("a {i}")).await.unwrap().id);
        }
        for i in 0..7 {
            posted.push(social.post("b", &format!("b {i}")).await.unwrap().id);
        }
        // The follow backfills b's seven posts at once: one push split across parts.
        social.follow("reader", "b").await.unwrap();
        let buckets = t
            .store
            .timelines
            .buckets(BucketKind::Timed, "reader", None, 0, 100, 100)
            .await;
        let buckets = buckets.unwrap();
        assert!(
            buckets.len() >= 6,
            "{kind:?}: 17 entries in parts of 3: {}",
            buckets.len()
        );
        for bucket in &buckets {
            assert!(
                bucket.pushes <= 3 && bucket.entries.len() <= 3,
                "{kind:?}: {bucket:?}"
            );
        }
        let expected = newest_first(posted);
        let held = newest_first(all_bucket_ids(&t.store, BucketKind::Timed, "reader").await);
        assert_eq!(held, expected, "{kind:?}: every entry in one part");
        for limit in [1, 2, 3, 5, 100] {
            assert_eq!(
                walk(&social, "reader", limit).await,
                expected,
                "{kind:?}/{limit}"
            );
        }
    }
}

#[test]
fn sizes_that_could_pass_16_mib_are_rejected_at_start_up() {
    use socialite::config::{Config, Overrides};
    let valid = |set: &dyn Fn(&mut Config)| {
        let mut config = Config::default();
        set(&mut config);
        config.validate().map_err(|e| e.to_string())
    };
    assert!(valid(&|_| {}).is_ok());
    // 2,385 bytes per entry at most (with the author's name embedded, and a reply's
    // parent author): 6,000 entries
    // fit in 15 MiB, 7,000 do not.
    type Set = fn(&mut Config, u32);
    let setters: [(&str, Set); 3] = [
        ("feed.cache_size", |c, n| c.feed.cache_size = n),
        ("feed.bucket_size", |c, n| c.feed.bucket_size = n),
        ("feed.timed_bucket_max_entries", |c, n| {
            c.feed.timed_bucket_max_entries = n
        }),
    ];
    for (key, set) in setters {
        assert!(valid(&|c| set(c, 6_000)).is_ok(), "{key}");
        let error = valid(&|c| set(c, 7_000)).unwrap_err();
        assert!(error.contains(key) && error.contains("16 MiB"), "{error}");
    }
    assert!(valid(&|c| c.feed.timed_bucket_max_entries = 0).is_err());
    // The new key is read from socialite.toml.
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("socialite.toml");
    let load = |n: u32| {
        std::fs::write(&file, format!("[feed]\ntimed_bucket_max_entries = {n}\n")).unwrap();
        Config::load(Some(&file), &Overrides::default())
    };
    assert_eq!(load(500).unwrap().feed.timed_bucket_max_entries, 500);
    assert!(format!("{:#}", load(9_000).unwrap_err()).contains("timed_bucket_max_entries"));
}
