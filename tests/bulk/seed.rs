//! `socialite seed` through the bulk loader writes exactly the data set `seed::plan`
//! draws (replies, blocks, mutes and reposts included, the follows beside a block
//! removed, the reposts' counts, the notifications the worker's rebuild would write), and
//! a second run (an interrupted seed finished) adds nothing.

use socialite::domain::FeedStrategy;
use socialite::seed::{SeedArgs, plan};

use super::common::kinds;
use super::config;

#[tokio::test]
async fn the_bulk_seed_writes_the_planned_data_set_and_a_rerun_adds_nothing() {
    for kind in kinds("the_bulk_seed_writes_the_planned_data_set_and_a_rerun_adds_nothing") {
        // The first seed whose blocks remove a follow (most blocks in a data set this
        // small fall between strangers).
        let (args, want) = (1..)
            .map(|seed| {
                let args = SeedArgs {
                    users: 120,
                    max_follows: 8,
                    posts_per_user: 3,
                    seed,
                };
                (args, plan(&args))
            })
            .find(|(_, plan)| plan.standing_follows().len() < plan.follows.len())
            .unwrap();
        let standing = want.standing_follows();
        assert!(!want.replies.is_empty() && !want.mutes.is_empty());
        assert!(!want.reposts.is_empty());
        assert!(want.mutes.iter().any(|m| m.lasts_ms.is_some()));
        let test = config(kind, FeedStrategy::Cache);
        for run in 1..=2 {
            let store = socialite::app::open_store(&test.config).await.unwrap();
            let settings = socialite::bulk::derive_settings(&test.config);
            let report = socialite::bulk::seed::run(store.clone(), settings, args, None)
                .await
                .unwrap();
            let label = format!("{kind:?} run {run}");
            // The report counts rows written: a re-run writes none but the follows its
            // blocks removed, which it removes again.
            let removed = want.follows.len() - standing.len();
            let written = if run == 1 {
                want.follows.len()
            } else {
                removed
            };
            assert_eq!(report.follows as usize, written, "{label}");
            assert_eq!(report.derived.follows_blocked as usize, removed, "{label}");
            let relations = if run == 1 {
                want.blocks.len() + want.mutes.len()
            } else {
                0
            };
            assert_eq!(
                (report.blocks + report.mutes) as usize,
                relations,
                "{label}"
            );
            let reposts = if run == 1 { want.reposts.len() } else { 0 };
            assert_eq!(report.reposts as usize, reposts, "{label}");
            if run == 2 {
                assert!(report.not_written as usize >= standing.len(), "{label}");
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
                posts.extend(mine.into_iter().map(|p| {
                    (
                        p.id,
                        index,
                        p.text,
                        p.reply_to,
                        p.replies_count,
                        p.reposts_count,
                    )
                }));
            }
            follows.sort_unstable();
            let mut planned = standing.clone();
            planned.sort_unstable();
            assert_eq!(follows, planned, "{label}");
            // Post k of the plan is the k-th by id.
            posts.sort_by_key(|p| p.0);
            let ids: Vec<_> = posts.iter().map(|p| p.0).collect();
            let replies: Vec<(usize, usize)> = posts
                .iter()
                .enumerate()
                .filter_map(|(k, p)| {
                    let parent = p.3.as_ref()?;
                    assert_eq!(
                        parent.author,
                        want.users[posts[ids.binary_search(&parent.post).ok()?].1]
                    );
                    Some((k, ids.binary_search(&parent.post).unwrap()))
                })
                .collect();
            assert_eq!(replies, want.replies, "{label}");
            for (k, post) in posts.iter().enumerate() {
                let count = want.replies.iter().filter(|(_, p)| *p == k).count();
                assert_eq!(post.4 as usize, count, "{label}: post {k}'s replies_count");
                let count = want.reposts.iter().filter(|r| r.post == k).count();
                assert_eq!(post.5 as usize, count, "{label}: post {k}'s reposts_count");
            }
            // Every planned repost, by its reposter, later than its post.
            let mut reposted = Vec::new();
            for (index, id) in want.users.iter().enumerate() {
                for r in store.reposts.reposts_by(id, None, 100).await.unwrap() {
                    let k = ids.binary_search(&r.post.post).unwrap();
                    assert_eq!(r.post.author, want.users[k % want.users.len()], "{label}");
                    assert!(r.id > r.post.post, "{label}: {r:?}");
                    reposted.push((index, k));
                }
            }
            reposted.sort_unstable();
            let mut planned: Vec<(usize, usize)> =
                want.reposts.iter().map(|r| (r.user, r.post)).collect();
            planned.sort_unstable();
            assert_eq!(reposted, planned, "{label}");
            let texts: Vec<(usize, String)> =
                posts.into_iter().map(|(_, a, t, _, _, _)| (a, t)).collect();
            assert_eq!(texts, want.posts, "{label}");
            for &(user, other) in &want.blocks {
                let (user, other) = (&want.users[user], &want.users[other]);
                assert!(
                    store.relations.blocks(user, other).await.unwrap(),
                    "{label}"
                );
            }
            for m in &want.mutes {
                let listed = store
                    .relations
                    .mute_list(&want.users[m.user], None, 0, 100)
                    .await
                    .unwrap();
                let found = listed
                    .iter()
                    .find(|r| r.other == want.users[m.other])
                    .unwrap();
                let settings = found.mute.unwrap();
                assert_eq!(settings.notifications, m.notifications, "{label}");
                assert_eq!(
                    settings.until_ms.map(|u| u - found.created_ms),
                    m.lasts_ms,
                    "{label}"
                );
            }
            let users: Vec<&str> = want.users.iter().map(String::as_str).collect();
            let n = super::social::assert_derived_for(&store, &users, &label).await;
            assert!(n >= standing.len() + want.replies.len() / 2, "{label}: {n}");
        }
    }
}
