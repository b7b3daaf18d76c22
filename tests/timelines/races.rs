//! Races that once left a timeline wrong for good (issue 20), each driven step by step:
//! a late push below a cache's bottom, an unfollow's upkeep landing after a racing
//! follow's backfill, and a read whose rounds run out among stale entries.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use socialite::domain::{FeedStrategy, NameStamp, PostId, TimelineEntry};
use socialite::feed::{FeedSettings, Timelines};
use socialite::store::Store;

use crate::common::faults::{FaultyTimelines, Hold};
use crate::common::{fresh_store, kinds};
use crate::{catch_up, newest_first, users_following};

/// Every id of `user`'s timeline, walked to the end `limit` at a time.
async fn walk(timelines: &Timelines, user: &str, limit: usize) -> Vec<PostId> {
    let (mut ids, mut before) = (Vec::new(), None);
    loop {
        let page = timelines.page(user, before, limit).await.unwrap();
        ids.extend(page.items.iter().map(|i| i.id));
        match page.next_cursor {
            Some(cursor) => before = Some(cursor),
            None => return ids,
        }
    }
}

/// The review's scenario: alice's post P is left to a late worker; bob posts
/// `cache_size + 2` times; the reader builds a cache of bob's newest; bob deletes one
/// cached post; only then is P pushed. P is older than everything cached, so taking it
/// would make it the cache's bottom and hide bob's two oldest posts from the fallback.
#[tokio::test]
async fn a_late_push_below_a_cache_never_hides_the_posts_between() {
    for kind in kinds("a_late_push_below_a_cache_never_hides_the_posts_between") {
        let t = fresh_store(kind).await;
        let s = &t.store;
        let settings = FeedSettings {
            strategy: FeedStrategy::Cache,
            cache_size: 5,
            ..FeedSettings::default()
        };
        let timelines = Timelines::new(s.clone(), &settings);
        let people = ["reader", "alice", "bob"].map(String::from);
        users_following(s, &people, None).await;
        for author in ["alice", "bob"] {
            s.graph.follow("reader", author, 0).await.unwrap();
        }
        let late = s
            .content
            .insert_post("alice", "p", None, 1_000)
            .await
            .unwrap()
            .post;
        let mut bobs = Vec::new();
        for i in 0..7 {
            let post = s
                .content
                .insert_post("bob", &format!("e{i}"), None, 2_000 + i)
                .await;
            bobs.push(post.unwrap().post.id);
        }
        assert_eq!(walk(&timelines, "reader", 3).await.len(), 8, "{kind:?}");
        let cached = s.timelines.cache("reader").await.unwrap().unwrap();
        assert_eq!(cached.entries.len(), 5, "{kind:?}: built from bob's newest");
        s.content.delete_post(bobs[4]).await.unwrap();
        timelines.retract(bobs[4]).await.unwrap();

        let entry = TimelineEntry {
            id: late.id,
            author: "alice".into(),
            text: Some("p".into()),
            name: None,
            reply_to_author: None,
            repost_of: None,
        };
        s.timelines
            .cache_push(&["reader".to_owned()], &[entry], 5)
            .await
            .unwrap();

        let mut live: Vec<PostId> = bobs.iter().copied().filter(|id| *id != bobs[4]).collect();
        live.push(late.id);
        for limit in [2, 3, 20] {
            let served = walk(&timelines, "reader", limit).await;
            assert_eq!(
                served,
                newest_first(live.clone()),
                "{kind:?}: pages of {limit}"
            );
        }
    }
}

/// A follow's backfill reads the followee's newest `cache_size` posts. Into a complete
/// cache with room (here an empty one) it fits without a trim, yet the followee's older
/// posts are not in it, so the cache is no longer complete: the backfill must say so.
/// Before the fix it stayed complete, took a late push below its oldest entry (after a
/// delete made room), and hid the followee's posts between for good. Found once by the
/// checker on the MongoDB stand-in, in its late-push scenario.
#[tokio::test]
async fn a_backfill_cut_at_the_cache_size_ends_a_caches_completeness() {
    for kind in kinds("a_backfill_cut_at_the_cache_size_ends_a_caches_completeness") {
        let t = fresh_store(kind).await;
        let s = &t.store;
        let settings = FeedSettings {
            strategy: FeedStrategy::Cache,
            cache_size: 5,
            ..FeedSettings::default()
        };
        let timelines = Timelines::new(s.clone(), &settings);
        let people = ["reader", "alice", "bob"].map(String::from);
        users_following(s, &people, None).await;
        s.graph.follow("reader", "bob", 0).await.unwrap();
        assert!(walk(&timelines, "reader", 3).await.is_empty());
        let late = s
            .content
            .insert_post("bob", "p", None, 1_000)
            .await
            .unwrap()
            .post;
        let mut alices = Vec::new();
        for i in 0..7 {
            let post = s
                .content
                .insert_post("alice", &format!("a{i}"), None, 2_000 + i)
                .await;
            alices.push(post.unwrap().post.id);
        }
        s.graph.follow("reader", "alice", 0).await.unwrap();
        timelines.sync_edge("reader", "alice").await.unwrap();
        let cached = s.timelines.cache("reader").await.unwrap().unwrap();
        assert_eq!(cached.entries.len(), 5, "{kind:?}: alice's newest");
        assert!(
            !cached.complete,
            "{kind:?}: alice's two oldest are not cached"
        );
        s.content.delete_post(alices[4]).await.unwrap();
        timelines.retract(alices[4]).await.unwrap();

        let entry = TimelineEntry {
            id: late.id,
            author: "bob".into(),
            text: Some("p".into()),
            name: None,
            reply_to_author: None,
            repost_of: None,
        };
        s.timelines
            .cache_push(&["reader".to_owned()], &[entry], 5)
            .await
            .unwrap();

        let mut live: Vec<PostId> = alices
            .iter()
            .copied()
            .filter(|id| *id != alices[4])
            .collect();
        live.push(late.id);
        for limit in [2, 3, 20] {
            let served = walk(&timelines, "reader", limit).await;
            assert_eq!(
                served,
                newest_first(live.clone()),
                "{kind:?}: pages of {limit}"
            );
        }
    }
}

/// An unfollow (its removal held after the edge delete, as a slow process would be) and
/// a follow of the same pair: the follow lands and backfills, then the unfollow's
/// removal runs. The edge stands, so the followee's posts must be in the timeline, on
/// every materialising strategy, and stay after the timelines worker replays both
/// changes; before the fix the removal deleted the backfill for good.
#[tokio::test]
async fn an_unfollow_racing_a_follow_of_the_same_pair_never_loses_the_posts() {
    for kind in kinds("an_unfollow_racing_a_follow_of_the_same_pair_never_loses_the_posts") {
        for strategy in [
            FeedStrategy::TimedBuckets,
            FeedStrategy::SizedBuckets,
            FeedStrategy::Cache,
        ] {
            let t = fresh_store(kind).await;
            let timelines = FaultyTimelines::new(t.store.timelines.clone());
            let hold = Hold::new("remove_author_entries");
            *timelines.hold.lock().unwrap() = Some(hold.clone());
            let mut store: Store = t.store.clone();
            store.timelines = timelines;
            let settings = FeedSettings {
                strategy,
                cache_size: 5,
                bucket_size: 3,
                ..FeedSettings::default()
            };
            let social = Arc::new(crate::common::social(store, &settings));
            for id in ["reader", "author"] {
                social.create_user(id, id).await.unwrap();
            }
            social.follow("reader", "author").await.unwrap();
            social.timeline("reader", None, 10).await.unwrap();
            let mut posts = Vec::new();
            for i in 0..4 {
                posts.push(social.post("author", &format!("p{i}")).await.unwrap().id);
            }

            hold.armed.store(true, Ordering::SeqCst);
            let unfollow = {
                let social = social.clone();
                tokio::spawn(async move { social.unfollow("reader", "author").await })
            };
            hold.reached.notified().await;
            social.follow("reader", "author").await.unwrap();
            hold.release.notify_one();
            unfollow.await.unwrap().unwrap();

            let expected = newest_first(posts.clone());
            let served = |page: socialite::feed::TimelinePage| -> Vec<PostId> {
                page.items.iter().map(|i| i.id).collect()
            };
            let page = social.timeline("reader", None, 100).await.unwrap();
            assert_eq!(
                served(page),
                expected,
                "{kind:?} {strategy:?}: after the race"
            );
            catch_up(&t.store, &settings).await;
            let page = social.timeline("reader", None, 100).await.unwrap();
            assert_eq!(
                served(page),
                expected,
                "{kind:?} {strategy:?}: after the worker"
            );
        }
    }
}

/// More stale entries than eight rounds can skip (an unfollowed author's entries whose
/// removal has not run): a page may come back short, but with a cursor, and walking on
/// reaches the older posts; before the fix the page said `next_cursor: null`.
#[tokio::test]
async fn a_read_whose_rounds_run_out_among_stale_entries_keeps_a_cursor() {
    for kind in kinds("a_read_whose_rounds_run_out_among_stale_entries_keeps_a_cursor") {
        let t = fresh_store(kind).await;
        let s = &t.store;
        let settings = FeedSettings {
            strategy: FeedStrategy::SizedBuckets,
            bucket_size: 4,
            ..FeedSettings::default()
        };
        let timelines = Timelines::new(s.clone(), &settings);
        let people = ["reader", "old", "gone"].map(String::from);
        users_following(s, &people, None).await;
        s.graph.follow("reader", "old", 0).await.unwrap();
        s.graph.follow("reader", "gone", 0).await.unwrap();
        let kept = s
            .content
            .insert_post("old", "kept", None, 1_000)
            .await
            .unwrap()
            .post;
        let mut posts = vec![kept.clone()];
        for i in 0..40 {
            let post = s
                .content
                .insert_post("gone", &format!("g{i}"), None, 2_000 + i)
                .await;
            posts.push(post.unwrap().post);
        }
        for post in &posts {
            let name = NameStamp {
                display_name: post.author.clone(),
                version: 0,
            };
            timelines.post_created(post, &name).await.unwrap();
        }
        // The unfollow's edge is gone; its removal has not run yet.
        s.graph.unfollow("reader", "gone").await.unwrap();
        assert_eq!(walk(&timelines, "reader", 2).await, [kept.id], "{kind:?}");
    }
}
