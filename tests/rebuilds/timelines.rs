//! History lost by the timelines worker (`cache` strategy): its rebuild delivers the
//! posts whose changes were lost, retracts the deleted ones, and stamps the renames, as
//! a computation from scratch would.

use std::sync::Arc;

use socialite::domain::{FeedStrategy, PostId, now_ms};
use socialite::feed::FeedSettings;
use socialite::store::Store;
use socialite::workers::timelines::TimelinesWorker;

use super::common::{self, Kind, kinds};
use super::{catch_up, fixture, rebuilds, runner, until_rebuilt};

fn feed_settings() -> FeedSettings {
    FeedSettings {
        strategy: FeedStrategy::Cache,
        cache_size: 20,
        inline_fanout_max: 2,
        ..FeedSettings::default()
    }
}

/// Every follower's cached post ids, sorted.
async fn cached(store: &Store, followers: &[String]) -> Vec<Vec<PostId>> {
    let mut all = Vec::new();
    for follower in followers {
        let cache = store.timelines.cache(follower).await.unwrap().unwrap();
        let mut ids: Vec<PostId> = cache.entries.iter().map(|e| e.id).collect();
        ids.sort();
        all.push(ids);
    }
    all
}

#[tokio::test]
async fn the_timelines_rebuild_delivers_unmarked_posts_and_retracts_deleted_ones() {
    for kind in kinds("the_timelines_rebuild_delivers_unmarked_posts_and_retracts_deleted_ones") {
        // Also: a follow whose request died before its backfill, in the history lost,
        // is backfilled by the rebuild.
        let f = fixture(kind).await;
        let store = &f.store;
        let feed = feed_settings();
        let social = crate::common::social(store.clone(), &feed);
        social.create_user("star", "star").await.unwrap();
        let mut followers = Vec::new();
        for i in 0..3 {
            let id = format!("fan{i}");
            social.create_user(&id, &id).await.unwrap();
            social.follow(&id, "star").await.unwrap();
            social.timeline(&id, None, 10).await.unwrap();
            followers.push(id);
        }
        // Follows too, and then unfollows past the service, in the history lost.
        social.create_user("quitter", "quitter").await.unwrap();
        social.follow("quitter", "star").await.unwrap();
        social.timeline("quitter", None, 10).await.unwrap();
        social.create_user("other", "other").await.unwrap();
        let older = social.post("other", "before the follow").await.unwrap().id;
        social.create_user("late", "late").await.unwrap();
        social.timeline("late", None, 10).await.unwrap();
        let mut worker = runner(store, Arc::new(TimelinesWorker::new(store.clone(), &feed)));
        // Above `inline_fanout_max`: the worker delivers it.
        let gone = social.post("star", "soon gone").await.unwrap().id;
        catch_up(&mut worker).await;
        let fans = cached(store, &followers).await;
        assert_eq!(fans, vec![vec![gone]; 3], "{kind:?}");

        let mut fresh = None;
        f.lose_history(async {
            store.graph.unfollow("quitter", "star").await.unwrap();
            // Stored, and the request died before its backfill.
            store.graph.follow("late", "other", now_ms()).await.unwrap();
            fresh = Some(social.post("star", "never delivered").await.unwrap().id);
            // Deleted past the service: no retraction in the request.
            store.content.delete_post(gone).await.unwrap().unwrap();
        })
        .await;
        let fresh = fresh.unwrap();
        until_rebuilt(&mut worker, kind).await;
        let fans = cached(store, &followers).await;
        assert_eq!(fans, vec![vec![fresh]; 3], "{kind:?}");
        let posts = store.content.posts_by_author("star", None, 100).await;
        let mut from_scratch: Vec<PostId> = posts.unwrap().iter().map(|p| p.id).collect();
        from_scratch.sort();
        assert_eq!(cached(store, &followers).await[0], from_scratch, "{kind:?}");
        let late = ["late".to_owned()];
        assert_eq!(cached(store, &late).await, vec![vec![older]], "{kind:?}");
        let edge = store.graph.edge("late", "other").await.unwrap().unwrap();
        assert!(edge.backfilled, "{kind:?}: the backfill is marked");
        let left = social.timeline("quitter", None, 10).await.unwrap();
        assert!(left.items.is_empty(), "{kind:?}: {:?}", left.items);
        if let Some(file) = f.raw.file() {
            // What the lost unfollow's removal would have done, the rebuild did.
            assert_eq!(common::pending_marks(file), (0, 0), "no retraction pending");
        }

        let after = social.post("star", "after the rebuild").await.unwrap().id;
        catch_up(&mut worker).await;
        let mut expected = vec![fresh, after];
        expected.sort();
        assert_eq!(
            cached(store, &followers).await,
            vec![expected; 3],
            "{kind:?}"
        );
        assert_eq!(rebuilds(&worker), 1, "{kind:?}: no second rebuild");
    }
}

/// A rename whose change was lost: the rebuild stamps every timeline with the name as it
/// stands, and the embedded store's pending mark for it ends, so pages stop checking
/// names at read time. Pages serve the new name throughout.
#[tokio::test]
async fn the_timelines_rebuild_stamps_renames_whose_changes_were_lost() {
    for kind in kinds("the_timelines_rebuild_stamps_renames_whose_changes_were_lost") {
        let f = fixture(kind).await;
        let store = &f.store;
        let feed = feed_settings();
        let social = crate::common::social(store.clone(), &feed);
        social.create_user("star", "Star").await.unwrap();
        social.create_user("fan", "Fan").await.unwrap();
        social.follow("fan", "star").await.unwrap();
        let post = social.post("star", "hello").await.unwrap().id;
        social.timeline("fan", None, 10).await.unwrap();
        let mut worker = runner(store, Arc::new(TimelinesWorker::new(store.clone(), &feed)));
        catch_up(&mut worker).await;
        let mut renamed = None;
        f.lose_history(async {
            renamed = Some(social.rename("star", "Star Renamed").await.unwrap());
        })
        .await;
        let renamed = renamed.unwrap().name_stamp();
        let page = social.timeline("fan", None, 10).await.unwrap();
        assert_eq!(
            page.items[0].author_display_name, "Star Renamed",
            "{kind:?}"
        );
        until_rebuilt(&mut worker, kind).await;
        let pending = store.timelines.pending_renames().await.unwrap();
        assert_eq!(pending, Vec::new(), "{kind:?}: the rename is still pending");
        let cache = store.timelines.cache("fan").await.unwrap().unwrap();
        let stamps: Vec<_> = cache
            .entries
            .iter()
            .map(|e| (e.id, e.name.clone()))
            .collect();
        match kind {
            Kind::Embedded => assert_eq!(stamps, vec![(post, Some(renamed))]),
            // MongoDB pages check every name at read time and keep no pending renames,
            // so its rebuild has none to stamp.
            Kind::Mongo => assert_eq!(stamps.len(), 1),
        }
        let page = social.timeline("fan", None, 10).await.unwrap();
        assert_eq!(
            page.items[0].author_display_name, "Star Renamed",
            "{kind:?}"
        );
    }
}
