//! Reposts, likes and the count claims at the port, held to one behaviour on every
//! backend: a fanout-on-read home read of reposts (`home_reposts`), `hybrid`'s merged
//! reposts (`merged_reposts`), the reposts a
//! rebuild still has to fan out (`undelivered_reposts`), a page's like counts
//! (`like_counts`) and the settling of count claims (`ClaimStore`).

use socialite::domain::{NewUser, PostId, now_ms};
use socialite::store::{Claimed, Counter, Store};

use crate::common::{fresh_store, kinds};

async fn users(store: &Store, ids: &[&str]) {
    for id in ids {
        let user = NewUser {
            id: (*id).into(),
            display_name: (*id).into(),
            created_at_ms: now_ms(),
        };
        store.users.create_user(&user).await.unwrap();
    }
}

async fn post(store: &Store, author: &str, text: &str) -> PostId {
    let inserted = store
        .content
        .insert_post(author, text, None, now_ms())
        .await;
    inserted.unwrap().post.id
}

async fn repost(store: &Store, user: &str, post: PostId) -> PostId {
    store
        .reposts
        .repost(user, post, now_ms())
        .await
        .unwrap()
        .repost
        .id
}

#[tokio::test]
async fn home_reposts_are_the_readers_and_followees_newest_first() {
    for kind in kinds("home_reposts_are_the_readers_and_followees_newest_first") {
        let t = fresh_store(kind).await;
        let store = &t.store;
        users(store, &["ann", "bob", "cat", "dan"]).await;
        store.graph.follow("ann", "bob", now_ms()).await.unwrap();
        let p = post(store, "dan", "original").await;
        let q = post(store, "cat", "other").await;
        let by_bob = repost(store, "bob", p).await;
        let _by_cat = repost(store, "cat", p).await; // not followed by ann
        let by_ann = repost(store, "ann", q).await;
        let by_bob2 = repost(store, "bob", q).await;
        let ids = |reposts: Vec<socialite::domain::Repost>| -> Vec<PostId> {
            reposts.into_iter().map(|r| r.id).collect()
        };
        let home = store.reposts.home_reposts("ann", None, 10).await.unwrap();
        assert_eq!(ids(home), vec![by_bob2, by_ann, by_bob], "{kind:?}");
        let below = store.reposts.home_reposts("ann", Some(by_bob2), 1).await;
        assert_eq!(
            ids(below.unwrap()),
            vec![by_ann],
            "{kind:?}: before and limit"
        );
        store.reposts.unrepost("bob", q).await.unwrap();
        let home = store.reposts.home_reposts("ann", None, 10).await.unwrap();
        assert_eq!(
            ids(home),
            vec![by_ann, by_bob],
            "{kind:?}: an unrepost leaves"
        );
        let (first, second) = (
            home_first(store, "dan").await,
            home_first(store, "cat").await,
        );
        assert_eq!(first, None, "{kind:?}: dan follows no reposter");
        assert_eq!(second, Some(_by_cat), "{kind:?}: cat's own repost");
    }
}

/// `hybrid`'s merged half of reposts: the newest reposts of the reader's flagged
/// followees alone (not an unflagged followee's, not the reader's own), between the
/// page's bounds, newest first, at most the limit, and an unrepost or the original's
/// delete takes a repost out at once.
#[tokio::test]
async fn merged_reposts_are_the_flagged_followees_newest_between_the_bounds() {
    for kind in kinds("merged_reposts_are_the_flagged_followees_newest_between_the_bounds") {
        let t = fresh_store(kind).await;
        let store = &t.store;
        users(store, &["ann", "bob", "cat", "dan", "eve"]).await;
        for followee in ["bob", "cat", "eve"] {
            store.graph.follow("ann", followee, now_ms()).await.unwrap();
        }
        // bob and eve become celebrities (one follower > 0): every edge to them flagged.
        for celebrity in ["bob", "eve"] {
            let changed = store.graph.reclassify(celebrity, 0, 0).await.unwrap();
            assert_eq!(changed, Some(true), "{kind:?} {celebrity}");
        }
        let (p, q) = (post(store, "dan", "p").await, post(store, "dan", "q").await);
        let mut merged = Vec::new();
        for (user, original) in [("bob", p), ("cat", p), ("eve", p), ("ann", q), ("bob", q)] {
            let id = repost(store, user, original).await;
            if user == "bob" || user == "eve" {
                merged.push(id);
            }
        }
        merged.reverse();
        let read = async |before: Option<PostId>, above: Option<PostId>, limit: usize| {
            let found = store.reposts.merged_reposts("ann", before, above, limit);
            found
                .await
                .unwrap()
                .into_iter()
                .map(|r| r.id)
                .collect::<Vec<PostId>>()
        };
        assert_eq!(read(None, None, 10).await, merged, "{kind:?}: flagged only");
        for start in 0..merged.len() {
            let before = start.checked_sub(1).map(|i| merged[i]);
            for floor in std::iter::once(None).chain((start..merged.len()).map(Some)) {
                let above = floor.map(|i: usize| merged[i]);
                for limit in [1, 2, 5] {
                    let want: Vec<PostId> = merged[start..]
                        .iter()
                        .copied()
                        .take_while(|id| above.is_none_or(|above| *id > above))
                        .take(limit)
                        .collect();
                    let got = read(before, above, limit).await;
                    assert_eq!(got, want, "{kind:?}: {before:?} {above:?} {limit}");
                }
            }
        }
        let none = store.reposts.merged_reposts("dan", None, None, 10).await;
        assert!(none.unwrap().is_empty(), "{kind:?}: dan follows nobody");
        store.reposts.unrepost("bob", q).await.unwrap();
        assert_eq!(
            read(None, None, 10).await,
            merged[1..],
            "{kind:?}: unreposted"
        );
        store.content.delete_post(p).await.unwrap();
        store.reposts.remove_reposts_of(p).await.unwrap();
        assert!(read(None, None, 10).await.is_empty(), "{kind:?}: p deleted");
    }
}

async fn home_first(store: &Store, user: &str) -> Option<PostId> {
    let home = store.reposts.home_reposts(user, None, 1).await.unwrap();
    home.first().map(|r| r.id)
}

#[tokio::test]
async fn undelivered_reposts_are_the_standing_unmarked_ones_in_id_order() {
    for kind in kinds("undelivered_reposts_are_the_standing_unmarked_ones_in_id_order") {
        let t = fresh_store(kind).await;
        let store = &t.store;
        users(store, &["ann", "bob", "cat"]).await;
        let p = post(store, "ann", "p").await;
        let r1 = repost(store, "bob", p).await;
        let r2 = repost(store, "cat", p).await;
        let deliveries = &store.deliveries;
        let all = deliveries.undelivered_reposts(None, 10).await.unwrap();
        assert_eq!(all, vec![r1, r2], "{kind:?}: ascending");
        let after = deliveries.undelivered_reposts(Some(r1), 10).await.unwrap();
        assert_eq!(after, vec![r2], "{kind:?}: strictly after");
        let one = deliveries.undelivered_reposts(None, 1).await.unwrap();
        assert_eq!(one, vec![r1], "{kind:?}: limit");
        deliveries.mark_delivered(r1).await.unwrap();
        let left = deliveries.undelivered_reposts(None, 10).await.unwrap();
        assert_eq!(left, vec![r2], "{kind:?}: a marked repost is delivered");
        store.reposts.unrepost("cat", p).await.unwrap();
        let left = deliveries.undelivered_reposts(None, 10).await.unwrap();
        assert!(
            left.is_empty(),
            "{kind:?}: an undone repost is no work: {left:?}"
        );
        // Posts are not reposts: the post itself is never listed here.
        assert!(!left.contains(&p), "{kind:?}");
    }
}

#[tokio::test]
async fn like_counts_count_the_standing_likes_of_the_posts_asked() {
    for kind in kinds("like_counts_count_the_standing_likes_of_the_posts_asked") {
        let t = fresh_store(kind).await;
        let store = &t.store;
        users(store, &["ann", "bob", "cat"]).await;
        let (p, q, r) = (
            post(store, "ann", "p").await,
            post(store, "ann", "q").await,
            post(store, "bob", "r").await,
        );
        let activity = &store.activity;
        for (user, post) in [("bob", p), ("cat", p), ("ann", p), ("cat", q), ("ann", r)] {
            activity.like(user, post, now_ms()).await.unwrap();
        }
        activity.unlike("cat", q).await.unwrap();
        let mut counts = activity.like_counts(&[p, q, r]).await.unwrap();
        counts.sort();
        let mut want = vec![(p, 3), (r, 1)];
        want.sort();
        assert_eq!(counts, want, "{kind:?}: q's only like was undone");
        let only = activity.like_counts(&[r]).await.unwrap();
        assert_eq!(only, vec![(r, 1)], "{kind:?}: only the posts asked");
        assert!(
            activity.like_counts(&[]).await.unwrap().is_empty(),
            "{kind:?}"
        );
    }
}

#[tokio::test]
async fn settling_claims_that_no_writer_left_changes_no_count() {
    for kind in kinds("settling_claims_that_no_writer_left_changes_no_count") {
        let t = fresh_store(kind).await;
        let store = &t.store;
        users(store, &["ann", "bob"]).await;
        let p = post(store, "ann", "p").await;
        let reply = store
            .content
            .insert_post("bob", "re", Some(p), now_ms())
            .await
            .unwrap()
            .post
            .id;
        let r = repost(store, "bob", p).await;
        let claims = [
            Claimed {
                counter: Counter::Replies,
                id: reply,
                owner: "bob".into(),
            },
            Claimed {
                counter: Counter::Reposts,
                id: r,
                owner: "bob".into(),
            },
        ];
        // Every writer finished: nothing to take over, twice (idempotent).
        for _ in 0..2 {
            assert_eq!(
                store.claims.settle_claims(&claims).await.unwrap(),
                0,
                "{kind:?}"
            );
            let original = store.content.post(p).await.unwrap().unwrap();
            assert_eq!(
                (original.replies_count, original.reposts_count),
                (1, 1),
                "{kind:?}"
            );
        }
        // A claim of a source that no longer exists settles to nothing, too.
        store.reposts.unrepost("bob", p).await.unwrap();
        assert_eq!(
            store.claims.settle_claims(&claims[1..]).await.unwrap(),
            0,
            "{kind:?}"
        );
        let original = store.content.post(p).await.unwrap().unwrap();
        assert_eq!(original.reposts_count, 0, "{kind:?}");
    }
}
