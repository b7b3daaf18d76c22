//! The content port's reads across authors, held to one model on every store.

use socialite::domain::{FeedStrategy, PostId};
use socialite::service::MuteRequest;

use crate::common::{fresh_store, kinds};

/// `ContentStore::shown_home_posts`, the read below a cache: for every cursor and
/// limit, exactly the newest posts below the cursor by the reader and the followees not
/// hidden from them, newest first, each with its author's current name. The authors
/// post at uneven rates and interleaved, so the embedded store's walk (each author's
/// newest ids, merged, stopping at the first author whose newest would not make the
/// page) must both take several ids of one author and stop early.
#[tokio::test]
async fn the_read_below_a_cache_is_the_newest_shown_posts_with_names() {
    for kind in kinds("the_read_below_a_cache_is_the_newest_shown_posts") {
        let t = fresh_store(kind).await;
        let social =
            crate::common::social(t.store.clone(), &crate::settings(FeedStrategy::Cache, true));
        crate::users(
            &social,
            &["reader", "ann", "bob", "cat", "dan", "eve", "fay"],
        )
        .await;
        for author in ["ann", "bob", "cat", "dan", "eve"] {
            social.follow("reader", author).await.unwrap();
        }
        // ann posts often, bob seldom and early, cat is muted, dan blocks the reader
        // (which also ends the follow), eve never posts, fay is not followed.
        let rounds: [&[&str]; 6] = [
            &["bob", "ann", "fay"],
            &["ann", "cat", "reader"],
            &["ann", "ann", "dan"],
            &["cat", "ann", "reader"],
            &["ann", "fay", "ann"],
            &["reader", "ann", "ann"],
        ];
        let mut posts: Vec<(PostId, &str)> = Vec::new();
        for round in rounds {
            for author in round {
                posts.push((social.post(author, "p").await.unwrap().id, author));
            }
        }
        let forever = MuteRequest {
            notifications: true,
            duration_ms: None,
        };
        social.mute("reader", "cat", forever).await.unwrap();
        social.block("dan", "reader").await.unwrap();
        social.rename("ann", "Ann").await.unwrap();
        let shown = ["reader", "ann", "bob"];
        let mut expected: Vec<(PostId, &str)> = posts
            .iter()
            .filter(|(_, author)| shown.contains(author))
            .copied()
            .collect();
        expected.sort_by_key(|p| std::cmp::Reverse(p.0));
        let name = |author: &str| match author {
            "ann" => "Ann".to_owned(),
            other => other.to_owned(),
        };
        let now = socialite::domain::now_ms();
        let cursors = [
            None,
            Some(expected[0].0),
            Some(expected[5].0),
            Some(posts[1].0),
        ];
        for before in cursors {
            for limit in [0, 1, 2, 5, 100] {
                let found = t
                    .store
                    .content
                    .shown_home_posts("reader", before, limit, now)
                    .await
                    .unwrap();
                let found: Vec<(PostId, String, String)> = found
                    .into_iter()
                    .map(|(post, stamp)| (post.id, post.author, stamp.display_name))
                    .collect();
                let want: Vec<(PostId, String, String)> = expected
                    .iter()
                    .filter(|(id, _)| before.is_none_or(|before| *id < before))
                    .take(limit)
                    .map(|(id, author)| (*id, author.to_string(), name(author)))
                    .collect();
                assert_eq!(found, want, "{kind:?}: before {before:?}, limit {limit}");
            }
        }
    }
}
