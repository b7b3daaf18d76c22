//! `socialite seed` through the bulk loader writes exactly the data set `seed::plan`
//! draws, and a second run (an interrupted seed finished) adds nothing.

use socialite::domain::FeedStrategy;
use socialite::seed::{SeedArgs, plan};

use super::common::kinds;
use super::config;

#[tokio::test]
async fn the_bulk_seed_writes_the_planned_data_set_and_a_rerun_adds_nothing() {
    for kind in kinds("the_bulk_seed_writes_the_planned_data_set_and_a_rerun_adds_nothing") {
        let args = SeedArgs {
            users: 40,
            max_follows: 8,
            posts_per_user: 3,
            seed: 9,
        };
        let want = plan(&args);
        let test = config(kind, FeedStrategy::Cache);
        for run in 1..=2 {
            let store = socialite::app::open_store(&test.config).await.unwrap();
            let settings = socialite::bulk::derive_settings(&test.config);
            let report = socialite::bulk::seed::run(store.clone(), settings, args, None)
                .await
                .unwrap();
            let label = format!("{kind:?} run {run}");
            // The report counts rows written: a re-run writes none, finding them all.
            let written = if run == 1 { want.follows.len() } else { 0 };
            assert_eq!(report.follows as usize, written, "{label}");
            if run == 2 {
                assert!(report.not_written as usize >= want.follows.len(), "{label}");
            }
            let mut follows = Vec::new();
            let mut posts = Vec::new();
            for (index, id) in want.users.iter().enumerate() {
                let user = store.users.user(id).await.unwrap().unwrap();
                assert_eq!(user.posts_count, args.posts_per_user as u64, "{label} {id}");
                for followee in store.graph.following(id, None, 100).await.unwrap() {
                    let followee: usize = followee[1..].parse().unwrap();
                    follows.push((index, followee));
                }
                let mut mine = store.content.posts_by_author(id, None, 100).await.unwrap();
                mine.reverse();
                posts.extend(mine.into_iter().map(|p| (p.id, index, p.text)));
            }
            follows.sort_unstable();
            let mut planned = want.follows.clone();
            planned.sort_unstable();
            assert_eq!(follows, planned, "{label}");
            // Post k of the plan is the k-th by id.
            posts.sort();
            let texts: Vec<(usize, String)> = posts.into_iter().map(|(_, a, t)| (a, t)).collect();
            assert_eq!(texts, want.posts, "{label}");
        }
    }
}
