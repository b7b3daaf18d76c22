//! The seeder writes the same activities as the API, through the same operations.

use std::sync::Arc;

use socialite::domain::{ActivityLimits, ActivityType};
use socialite::feed::FeedSettings;
use socialite::seed::{SeedArgs, plan, user_id};
use socialite::workers::activity::ActivityWorker;

use crate::common::{fresh_store, kinds};

/// The seeder writes through the same service operations as the API, so every seeded
/// follow and post is in its user's activity log, newest first.
#[tokio::test]
async fn seeding_records_the_same_activities_as_the_api() {
    for kind in kinds("seeding_records_the_same_activities_as_the_api") {
        let t = fresh_store(kind).await;
        let social = Arc::new(crate::common::social(
            t.store.clone(),
            &FeedSettings::default(),
        ));
        let plan = plan(&SeedArgs {
            users: 30,
            max_follows: 5,
            posts_per_user: 2,
            seed: 3,
        });
        socialite::seed::run(social.clone(), &plan).await.unwrap();
        // Activities are recorded from the change feed, as the server's worker would.
        crate::common::drain(
            &t.store,
            ActivityWorker::new(t.store.activity.clone(), ActivityLimits::default()),
        )
        .await;
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
