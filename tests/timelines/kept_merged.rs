//! Kept pages under `hybrid`: a kept page merges its reader's celebrities' posts, so
//! it stands on their merge versions and the merge clock as well as on the reader's
//! cache; what moves each, and what leaves the page standing.

use bytes::Bytes;
use socialite::domain::FeedStrategy;
use socialite::store::timelines::{CacheRows, CacheVersion};

use super::pages::{changed, entry, read};
use crate::common::{Kind, fresh_store, kinds};
use crate::{catch_up, settings, social, users_following};

/// `hybrid`: a kept page merges a celebrity's posts, so it is served again only while
/// the celebrity posted and deleted nothing, kept their name and stayed followed, and
/// no celebrity was followed; another celebrity's post leaves it kept.
#[tokio::test]
async fn a_kept_hybrid_page_follows_the_celebrities_it_merges() {
    for kind in kinds("a_kept_hybrid_page_follows_the_celebrities_it_merges") {
        let t = fresh_store(kind).await;
        let settings = socialite::feed::FeedSettings {
            hybrid_threshold: 1,
            ..settings(FeedStrategy::Hybrid, true)
        };
        let social = social(&t.store, &settings);
        for id in ["reader", "fan", "ann", "star", "other"] {
            social.create_user(id, id).await.unwrap();
        }
        read(&social, None, "build").await;
        let edges = [
            ("reader", "ann"),
            ("reader", "star"),
            ("fan", "star"),
            ("fan", "other"),
            ("ann", "other"),
        ];
        for (follower, followee) in edges {
            social.follow(follower, followee).await.unwrap();
        }
        catch_up(&t.store, &settings).await;
        for celebrity in ["star", "other"] {
            assert!(
                t.store.graph.celebrity(celebrity).await.unwrap(),
                "{kind:?}"
            );
        }
        for i in 0..5 {
            social.post("ann", &format!("a{i}")).await.unwrap();
        }
        let first = social.post("star", "s0").await.unwrap().id;
        let (mut last, _) = read(&social, None, "first").await;
        let (_, rendered) = read(&social, None, "unchanged").await;
        let keeps = kind == Kind::Embedded;
        assert_eq!(rendered, !keeps, "{kind:?}: an unchanged page is kept");

        // A post by a celebrity the reader does not follow moves the clock only.
        social.post("other", "o0").await.unwrap();
        let (page, rendered) = read(&social, None, "another celebrity's post").await;
        assert_eq!(page, last, "{kind:?}");
        assert_eq!(rendered, !keeps, "{kind:?}: still kept");

        let mut changed = |step: &str, page: Bytes| changed(kind, step, &mut last, page);
        let merged = social.post("star", "s1").await.unwrap().id;
        changed("a merged post", read(&social, None, "merged post").await.0);
        social.delete_post(merged).await.unwrap();
        changed("its delete", read(&social, None, "merged delete").await.0);
        social.rename("star", "Star").await.unwrap();
        catch_up(&t.store, &settings).await;
        changed("a rename", read(&social, None, "celebrity rename").await.0);
        social.unfollow("reader", "star").await.unwrap();
        let (page, _) = read(&social, None, "unfollow").await;
        changed("an unfollow", page.clone());
        let shown = std::str::from_utf8(&page).unwrap();
        assert!(!shown.contains(&first.to_string()), "{kind:?}: {shown}");
        catch_up(&t.store, &settings).await;
        read(&social, None, "unfollow settled").await;
        let (_, rendered) = read(&social, None, "kept again").await;
        assert_eq!(rendered, !keeps, "{kind:?}: kept again once settled");
        social.follow("reader", "star").await.unwrap();
        let (page, _) = read(&social, None, "follow").await;
        changed("a follow", page.clone());
        let shown = std::str::from_utf8(&page).unwrap();
        assert!(shown.contains(&first.to_string()), "{kind:?}: {shown}");
    }
}

/// `hybrid`: what a kept merged page stands on. Every graph change of the reader's
/// flagged edges moves the reader's cache version (a follow of a celebrity, a new
/// celebrity, an unfollow), and every post, delete and rename of a merged author their
/// merge version and the clock; a change by a celebrity the reader does not follow
/// leaves the page standing, under the new clock.
#[tokio::test]
async fn what_a_kept_merged_page_stands_on() {
    let t = fresh_store(Kind::Embedded).await;
    let s = &t.store;
    let ids = ["reader", "ann", "star", "other", "fan"].map(String::from);
    users_following(s, &ids, None).await;
    for (follower, followee) in [("reader", "ann"), ("reader", "star"), ("fan", "other")] {
        s.graph.follow(follower, followee, 0).await.unwrap();
    }
    let post = s
        .content
        .insert_post("ann", "p", None, 0)
        .await
        .unwrap()
        .post
        .id;
    assert!(s.timelines.cache_start("reader", 0).await.unwrap());
    let timelines = &s.timelines;
    timelines
        .cache_fill("reader", &[entry(post, "ann", 0)], 3)
        .await
        .unwrap();
    let rows = CacheRows {
        from: post,
        below: None,
    };
    let kept = |step: &'static str| async move {
        let version = s
            .timelines
            .cache_version("reader", rows, true)
            .await
            .unwrap();
        let version = version.unwrap_or_else(|| panic!("{step}: a version"));
        let stands = s.timelines.cache_stands("reader", &version).await.unwrap();
        assert_eq!(stands.as_ref(), Some(&version), "{step}: stands as read");
        version
    };
    let stands = |version: CacheVersion| async move {
        s.timelines.cache_stands("reader", &version).await.unwrap()
    };
    let followees = |v: &CacheVersion| -> Vec<String> {
        let merged = v.merged.as_ref().expect("merged asked");
        merged.followees.iter().map(|(id, _)| id.clone()).collect()
    };

    let before = kept("no celebrity").await;
    assert!(followees(&before).is_empty());
    for author in ["star", "other"] {
        assert_eq!(s.graph.reclassify(author, 0, 0).await.unwrap(), Some(true));
    }
    assert_eq!(stands(before).await, None, "a followee became a celebrity");
    let v = kept("star merged").await;
    assert_eq!(followees(&v), ["star"]);

    s.content.insert_post("other", "o", None, 0).await.unwrap();
    let moved = stands(v.clone()).await.expect("another celebrity's post");
    assert_eq!(moved.cache, v.cache);
    let clock = |v: &CacheVersion| v.merged.as_ref().unwrap().clock;
    assert_ne!(clock(&moved), clock(&v), "kept under the new clock");
    assert_eq!(
        stands(moved.clone()).await,
        Some(moved),
        "and stands under it"
    );

    let v = kept("before a post").await;
    let star_post = s
        .content
        .insert_post("star", "s", None, 0)
        .await
        .unwrap()
        .post
        .id;
    assert_eq!(stands(v).await, None, "a followed celebrity's post");
    // A delete holds every version back while pending; once settled, the merge version
    // alone tells. A rename of a merged author moves it at once: no rename of an author
    // of the cache's rows is pending.
    let v = kept("before a delete").await;
    s.content.delete_post(star_post).await.unwrap();
    timelines.settle_retractions().await.unwrap();
    assert_eq!(stands(v).await, None, "a followed celebrity's delete");
    let v = kept("before a rename").await;
    s.users.rename_user("star", "Star").await.unwrap();
    assert_eq!(
        stands(v).await,
        None,
        "a followed celebrity's rename, pending"
    );
    let v = kept("star renamed, pending").await;
    timelines.mark_renamed("star", 1).await.unwrap();
    assert_eq!(stands(v.clone()).await, Some(v), "the propagation's end");
    let v = kept("before ann's rename").await;
    s.users.rename_user("ann", "Ann").await.unwrap();
    assert_eq!(
        stands(v).await,
        None,
        "a pending rename of an author of the rows"
    );
    timelines.mark_renamed("ann", 1).await.unwrap();
    let v = kept("before a follow").await;
    s.graph.follow("reader", "other", 0).await.unwrap();
    assert_eq!(stands(v).await, None, "a celebrity followed");
    let v = kept("followed").await;
    assert_eq!(followees(&v), ["other", "star"]);
    s.graph.unfollow("reader", "other").await.unwrap();
    timelines.settle_retractions().await.unwrap();
    assert_eq!(stands(v).await, None, "a celebrity unfollowed");
    assert_eq!(followees(&kept("unfollowed").await), ["star"]);
}
