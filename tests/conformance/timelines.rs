//! Timeline semantics under every strategy: what a timeline holds and in which order,
//! backfill on follow, and the cache, which exists only for users who read.

use socialite::domain::{FeedStrategy, PostId};
use socialite::store::StoreError;

use super::{Model, settings, setups, users, walk};
use crate::common::{fresh_store, kinds};

#[tokio::test]
async fn timelines_follow_the_same_semantics_under_every_strategy() {
    for setup in setups("timelines_follow_the_same_semantics_under_every_strategy").await {
        let label = &setup.label;
        let social = &setup.social;
        users(social, &["a", "b", "c", "d", "lonely"]).await;
        let mut model = Model { posts: Vec::new() };

        for round in 0..5 {
            model.post(social, "b").await;
            model.post(social, "c").await;
            if round % 2 == 0 {
                model.post(social, "a").await;
            }
        }
        // Own posts only before following anyone; a first read also creates a cache.
        assert_eq!(
            walk(social, "a", 2).await,
            model.expected(&["a"]),
            "{label}: own posts"
        );

        // Follow: the followee's earlier posts appear at once.
        social.follow("a", "b").await.unwrap();
        assert_eq!(
            walk(social, "a", 3).await,
            model.expected(&["a", "b"]),
            "{label}: backfill"
        );

        for _ in 0..4 {
            model.post(social, "b").await;
            model.post(social, "c").await;
            model.post(social, "a").await;
        }
        // Pages of 3 cross buckets of 3 and run past a cache of 4.
        assert_eq!(
            walk(social, "a", 3).await,
            model.expected(&["a", "b"]),
            "{label}: paging"
        );
        assert_eq!(
            walk(social, "a", 100).await,
            model.expected(&["a", "b"]),
            "{label}: one page"
        );

        social.follow("a", "c").await.unwrap();
        assert_eq!(
            walk(social, "a", 4).await,
            model.expected(&["a", "b", "c"]),
            "{label}: second follow"
        );

        // Unfollow: the author's posts disappear.
        social.unfollow("a", "b").await.unwrap();
        assert_eq!(
            walk(social, "a", 3).await,
            model.expected(&["a", "c"]),
            "{label}: unfollow"
        );

        // Deletion: gone everywhere.
        let c_post = model.posts.iter().rev().find(|p| p.1 == "c").unwrap().0;
        let a_post = model.posts.iter().find(|p| p.1 == "a").unwrap().0;
        model.delete(social, c_post).await;
        model.delete(social, a_post).await;
        assert_eq!(
            walk(social, "a", 3).await,
            model.expected(&["a", "c"]),
            "{label}: delete"
        );
        assert!(
            setup
                .store
                .store
                .content
                .post(c_post)
                .await
                .unwrap()
                .is_none()
        );

        // A user with no follows sees only their own posts; one with nothing sees nothing.
        model.post(social, "d").await;
        model.post(social, "d").await;
        assert_eq!(
            walk(social, "d", 1).await,
            model.expected(&["d"]),
            "{label}: own"
        );
        let empty = social.timeline("lonely", None, 10).await.unwrap();
        assert!(
            empty.items.is_empty() && empty.next_cursor.is_none(),
            "{label}"
        );

        // Author names come from the current profile.
        social.rename("c", "Cee").await.unwrap();
        let page = social.timeline("a", None, 100).await.unwrap();
        let from_c = page.items.iter().find(|i| i.author == "c").unwrap();
        assert_eq!(from_c.author_display_name, "Cee", "{label}");

        // Unknown users are not found, not a failure.
        assert!(matches!(
            social.timeline("nobody", None, 10).await,
            Err(StoreError::NotFound(_))
        ));

        // Newer pages: the page just above each item is the walk's, oldest end.
        let full = model.expected(&["a", "c"]);
        for (at, cut) in full.iter().enumerate() {
            let page = social.timeline_after("a", cut.0, 2).await.unwrap();
            let got: Vec<PostId> = page.items.iter().map(|i| i.id).collect();
            let want: Vec<PostId> = full[at.saturating_sub(2)..at].iter().map(|p| p.0).collect();
            assert_eq!(got, want, "{label}: after {}", cut.0);
            assert_eq!(page.more_newer, at > 2, "{label}: after {}", cut.0);
        }
    }
}

#[tokio::test]
async fn follow_backfills_at_least_the_configured_number_of_posts() {
    for kind in kinds("follow_backfills_at_least_the_configured_number_of_posts") {
        for strategy in FeedStrategy::ALL {
            let store = fresh_store(kind).await;
            let mut settings = settings(strategy, true);
            settings.backfill_on_follow = 5;
            settings.cache_size = 50;
            settings.bucket_size = 50;
            let social = crate::common::social(store.store.clone(), &settings);
            users(&social, &["reader", "writer"]).await;
            social.timeline("reader", None, 10).await.unwrap();
            let mut model = Model { posts: Vec::new() };
            for _ in 0..8 {
                model.post(&social, "writer").await;
            }
            social.follow("reader", "writer").await.unwrap();
            let page = social.timeline("reader", None, 5).await.unwrap();
            let got: Vec<PostId> = page.items.iter().map(|i| i.id).collect();
            let newest: Vec<PostId> = model
                .expected(&["writer"])
                .iter()
                .take(5)
                .map(|p| p.0)
                .collect();
            assert_eq!(got, newest, "{kind:?}/{strategy}");
        }
    }
}

#[tokio::test]
async fn the_cache_exists_only_for_users_who_read() {
    for kind in kinds("the_cache_exists_only_for_users_who_read") {
        for embed in [true, false] {
            let store = fresh_store(kind).await;
            let social =
                crate::common::social(store.store.clone(), &settings(FeedStrategy::Cache, embed));
            users(&social, &["author", "reader", "dormant"]).await;
            social.follow("reader", "author").await.unwrap();
            social.follow("dormant", "author").await.unwrap();
            let mut model = Model { posts: Vec::new() };
            for _ in 0..3 {
                model.post(&social, "author").await;
            }
            assert!(
                store
                    .store
                    .timelines
                    .cache("reader")
                    .await
                    .unwrap()
                    .is_none()
            );
            social.timeline("reader", None, 2).await.unwrap();
            for _ in 0..6 {
                model.post(&social, "author").await;
            }
            let cache = store
                .store
                .timelines
                .cache("reader")
                .await
                .unwrap()
                .expect("created on read");
            assert!(cache.ready);
            let ids: Vec<PostId> = cache.entries.iter().map(|e| e.id).collect();
            let newest: Vec<PostId> = model
                .expected(&["author"])
                .iter()
                .take(4)
                .map(|p| p.0)
                .collect();
            assert_eq!(ids, newest, "{kind:?}: the newest cache_size entries");
            assert_eq!(
                cache.entries[0].text.is_some(),
                embed,
                "embedding follows the setting"
            );
            assert!(
                store
                    .store
                    .timelines
                    .cache("dormant")
                    .await
                    .unwrap()
                    .is_none(),
                "never read, never built"
            );
            assert!(
                store
                    .store
                    .timelines
                    .cache("author")
                    .await
                    .unwrap()
                    .is_none()
            );
            assert!(matches!(
                social.timeline("ghost", None, 5).await,
                Err(StoreError::NotFound(_))
            ));
            assert!(
                store
                    .store
                    .timelines
                    .cache("ghost")
                    .await
                    .unwrap()
                    .is_none(),
                "no cache for users that do not exist"
            );
        }
    }
}

/// The idle-cache port calls answer the same on both stores: a read stamp never moves
/// back, a drop takes only ready caches read before the cutoff, at most `limit` per
/// call, oldest first, and says how many went; a dropped cache takes no push.
#[tokio::test]
async fn idle_caches_are_stamped_and_dropped_alike() {
    use socialite::domain::TimelineEntry;
    for kind in kinds("idle_caches_are_stamped_and_dropped_alike") {
        let t = fresh_store(kind).await;
        let timelines = &t.store.timelines;
        let (t0, idle) = (1_000_000_i64, 100_i64);
        for (i, user) in ["a", "b", "c", "building"].iter().enumerate() {
            crate::common::create_user(&t.store, user).await;
            assert!(timelines.cache_start(user, t0 + i as i64).await.unwrap());
            if *user != "building" {
                timelines.cache_fill(user, &[], 4).await.unwrap();
            }
        }
        // A stamp moves forward only.
        timelines.cache_touch("c", t0 + 50).await.unwrap();
        timelines.cache_touch("c", t0 + 10).await.unwrap();
        timelines.cache_touch("nobody", t0 + 50).await.unwrap();
        let read_ms = |view: Option<socialite::store::timelines::CacheView>| view.unwrap().read_ms;
        assert_eq!(
            read_ms(timelines.cache_current("c", None, 1).await.unwrap()),
            t0 + 50,
            "{kind:?}"
        );
        assert_eq!(
            read_ms(timelines.cache_current("a", None, 1).await.unwrap()),
            t0,
            "{kind:?}"
        );

        // Nothing before the cutoff: nothing goes.
        assert_eq!(
            timelines
                .drop_idle_caches(t0 + idle, idle, 10)
                .await
                .unwrap(),
            0,
            "{kind:?}"
        );
        // `a` and `b` (read at t0, t0 + 1) are idle at t0 + 102; `c` was read later,
        // `building` is not ready. One per call, the oldest first.
        let now = t0 + idle + 2;
        assert_eq!(
            timelines.drop_idle_caches(now, idle, 1).await.unwrap(),
            1,
            "{kind:?}"
        );
        assert!(
            timelines.cache("a").await.unwrap().is_none(),
            "{kind:?}: oldest first"
        );
        assert!(timelines.cache("b").await.unwrap().is_some(), "{kind:?}");
        assert_eq!(
            timelines.drop_idle_caches(now, idle, 10).await.unwrap(),
            1,
            "{kind:?}"
        );
        assert_eq!(
            timelines.drop_idle_caches(now, idle, 10).await.unwrap(),
            0,
            "{kind:?}"
        );
        assert!(timelines.cache("c").await.unwrap().is_some(), "{kind:?}");
        assert!(
            timelines.cache("building").await.unwrap().is_some(),
            "{kind:?}"
        );

        let entry = TimelineEntry {
            id: PostId::at(t0, 1),
            author: "c".to_owned(),
            text: None,
            name: None,
            reply_to_author: None,
            repost_of: None,
        };
        let users = ["a".to_owned(), "b".to_owned(), "c".to_owned()];
        assert_eq!(
            timelines.cache_push(&users, &[entry], 4).await.unwrap(),
            1,
            "{kind:?}"
        );
        assert!(
            timelines.cache("a").await.unwrap().is_none(),
            "{kind:?}: a push made a cache"
        );
    }
}
