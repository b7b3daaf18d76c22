//! The hybrid strategy on every backend: a celebrity's posts are not fanned out but
//! merged into readers' pages, and an author crossing the threshold either way keeps
//! every timeline complete and duplicate-free, with hysteresis against flapping. Their
//! reposts likewise: served in `repost_timelines/hybrid.rs`, kept pages' versions here.

use socialite::domain::{FeedStrategy, PostId};
use socialite::feed::FeedSettings;
use socialite::store::Store;
use socialite::store::timelines::{CacheRows, CacheVersion};

use crate::common::{Kind, fresh_store, kinds};
use crate::{catch_up, social};

fn settings() -> FeedSettings {
    FeedSettings {
        strategy: FeedStrategy::Hybrid,
        cache_size: 5,
        // Enter above 10 followers, leave below 9.
        hybrid_threshold: 10,
        inline_fanout_max: 100,
        ..FeedSettings::default()
    }
}

/// Whether `user`'s cache holds `post`.
async fn cached(store: &Store, user: &str, post: PostId) -> bool {
    let cache = store.timelines.cache(user).await.unwrap().unwrap();
    cache.entries.iter().any(|e| e.id == post)
}

#[tokio::test]
async fn a_celebrity_is_merged_at_read_and_crossing_back_keeps_timelines_whole() {
    for kind in kinds("a_celebrity_is_merged_at_read_and_crossing_back_keeps_timelines_whole") {
        let t = fresh_store(kind).await;
        let settings = settings();
        let social = social(&t.store, &settings);
        social.create_user("star", "Star").await.unwrap();
        social.timeline("star", None, 5).await.unwrap();
        let fans: Vec<String> = (0..11).map(|i| format!("fan{i:02}")).collect();
        for fan in &fans {
            social.create_user(fan, fan).await.unwrap();
            social.follow(fan, "star").await.unwrap();
            social.timeline(fan, None, 5).await.unwrap();
        }
        let before = social.post("star", "before").await.unwrap().id;
        catch_up(&t.store, &settings).await;
        assert!(
            t.store.graph.celebrity("star").await.unwrap(),
            "{kind:?}: 11 > 10"
        );

        // A celebrity's post reaches their own cache only, and every follower's page.
        let merged = social.post("star", "merged").await.unwrap().id;
        catch_up(&t.store, &settings).await;
        assert!(cached(&t.store, "star", merged).await, "{kind:?}");
        assert!(
            !cached(&t.store, &fans[0], merged).await,
            "{kind:?}: not fanned out"
        );
        for fan in &fans {
            assert_eq!(
                crate::walk(&social, fan, 2).await,
                [merged, before],
                "{kind:?} {fan}"
            );
        }
        // A merged post carries its author's name as the page's read found it: a rename
        // that finished is served at once, with no fan-out to restamp anything.
        social.rename("star", "Star Renamed").await.unwrap();
        let page = social.timeline(&fans[0], None, 5).await.unwrap();
        let names: Vec<(PostId, &str)> = page
            .items
            .iter()
            .map(|i| (i.id, i.author_display_name.as_str()))
            .collect();
        assert_eq!(
            names,
            [(merged, "Star Renamed"), (before, "Star Renamed")],
            "{kind:?}"
        );
        // A follower who arrives now merges the celebrity's later posts too.
        social.create_user("late", "Late").await.unwrap();
        social.timeline("late", None, 5).await.unwrap();
        social.follow("late", "star").await.unwrap();
        let merged_later = social.post("star", "merged later").await.unwrap().id;
        catch_up(&t.store, &settings).await;
        let merged_posts = [merged_later, merged, before];
        assert_eq!(
            crate::walk(&social, "late", 2).await,
            merged_posts,
            "{kind:?}"
        );
        assert!(!cached(&t.store, "late", merged_later).await, "{kind:?}");

        // 12 followers, then 9: inside the band, still a celebrity (no flapping).
        for fan in &fans[..3] {
            social.unfollow(fan, "star").await.unwrap();
        }
        catch_up(&t.store, &settings).await;
        assert!(
            t.store.graph.celebrity("star").await.unwrap(),
            "{kind:?}: 9 >= 9"
        );
        // 8: below nine tenths of the threshold, fanned out again.
        social.unfollow(&fans[3], "star").await.unwrap();
        catch_up(&t.store, &settings).await;
        assert!(
            !t.store.graph.celebrity("star").await.unwrap(),
            "{kind:?}: 8 < 9"
        );
        let after = social.post("star", "after").await.unwrap().id;
        catch_up(&t.store, &settings).await;
        assert!(
            cached(&t.store, &fans[5], after).await,
            "{kind:?}: fanned out again"
        );
        for fan in fans[4..].iter().chain(["late".to_owned()].iter()) {
            let served = crate::walk(&social, fan, 2).await;
            let whole = [after, merged_later, merged, before];
            assert_eq!(served, whole, "{kind:?} {fan}: whole, once each");
        }
        for fan in &fans[..4] {
            assert!(
                crate::walk(&social, fan, 2).await.is_empty(),
                "{kind:?} {fan}: unfollowed"
            );
        }
    }
}

#[tokio::test]
async fn pages_merge_several_celebrities_newest_first_under_their_own_names() {
    for kind in kinds("pages_merge_several_celebrities_newest_first_under_their_own_names") {
        let t = fresh_store(kind).await;
        let settings = settings();
        let social = social(&t.store, &settings);
        for (id, name) in [("star", "Star"), ("idol", "Idol"), ("pal", "Pal")] {
            social.create_user(id, name).await.unwrap();
        }
        let fans: Vec<String> = (0..11).map(|i| format!("fan{i:02}")).collect();
        for fan in &fans {
            social.create_user(fan, fan).await.unwrap();
            social.timeline(fan, None, 5).await.unwrap();
            for followee in ["star", "idol", "pal"] {
                social.follow(fan, followee).await.unwrap();
            }
        }
        catch_up(&t.store, &settings).await;
        for celebrity in ["star", "idol"] {
            assert!(
                t.store.graph.celebrity(celebrity).await.unwrap(),
                "{kind:?}"
            );
        }
        // Interleaved, so that a page takes some of each celebrity's posts and one from
        // the cache: newest first across all three, each under its author's name.
        let mut posted = Vec::new();
        for round in 0..4 {
            for author in ["star", "idol"] {
                let id = social
                    .post(author, &format!("{author} {round}"))
                    .await
                    .unwrap()
                    .id;
                posted.push((id, author));
            }
            if round == 1 {
                let id = social.post("pal", "pal").await.unwrap().id;
                posted.push((id, "pal"));
            }
        }
        catch_up(&t.store, &settings).await;
        posted.reverse();
        let expected: Vec<PostId> = posted.iter().map(|(id, _)| *id).collect();
        assert_eq!(
            crate::walk(&social, &fans[0], 3).await,
            expected,
            "{kind:?}"
        );
        let page = social.timeline(&fans[0], None, 9).await.unwrap();
        let served: Vec<(PostId, String)> = page
            .items
            .iter()
            .map(|i| (i.id, i.author_display_name.clone()))
            .collect();
        let named: Vec<(PostId, String)> = posted
            .iter()
            .map(|(id, author)| {
                let name = match *author {
                    "star" => "Star",
                    "idol" => "Idol",
                    _ => "Pal",
                };
                (*id, name.to_owned())
            })
            .collect();
        assert_eq!(served, named, "{kind:?}");
        // The port itself, below every cursor, above every lower bound and at every page
        // size: the newest merged posts between the bounds, in order, each with its
        // author's name (the page above may also find them through the cache's own
        // reads).
        for start in 0..named.len() {
            let before = start.checked_sub(1).map(|i| named[i].0);
            let floors = std::iter::once(None).chain((start..named.len()).map(Some));
            for above in floors.map(|i| i.map(|i: usize| named[i].0)) {
                for limit in [1, 2, 4, 9] {
                    let merged = t
                        .store
                        .content
                        .merged_posts(&fans[0], before, above, limit)
                        .await
                        .unwrap();
                    let got: Vec<(PostId, String)> = merged
                        .into_iter()
                        .map(|(post, name)| (post.id, name.display_name))
                        .collect();
                    let expected: Vec<(PostId, String)> = named[start..]
                        .iter()
                        .take_while(|(id, _)| above.is_none_or(|above| *id > above))
                        .take(limit)
                        .cloned()
                        .collect();
                    assert_eq!(
                        got, expected,
                        "{kind:?}: below {before:?}, above {above:?}, {limit}"
                    );
                }
            }
        }
    }
}

/// A kept merged page stands on its celebrities' reposts as on their posts (the embedded
/// store; MongoDB keeps no versions): a followed celebrity's repost, its unrepost and the
/// delete of an original they reposted each move their merge version, though none of
/// them writes the reader's cache; a repost by someone the reader does not follow leaves
/// the page standing.
#[tokio::test]
async fn a_kept_merged_page_stands_on_its_celebrities_reposts() {
    let t = fresh_store(Kind::Embedded).await;
    let s = &t.store;
    for id in ["reader", "star", "ann", "nobody"] {
        crate::common::create_user(s, id).await;
    }
    s.graph.follow("reader", "star", 0).await.unwrap();
    assert_eq!(s.graph.reclassify("star", 0, 0).await.unwrap(), Some(true));
    let insert = async |text: &str| {
        let inserted = s.content.insert_post("ann", text, None, 0).await;
        inserted.unwrap().post.id
    };
    let (p, q) = (insert("p").await, insert("q").await);
    // A complete cache with nothing in it: its rows are the whole (empty) timeline.
    assert!(s.timelines.cache_start("reader", 0).await.unwrap());
    s.timelines.cache_fill("reader", &[], 3).await.unwrap();
    let rows = CacheRows {
        from: PostId::MIN,
        below: None,
    };
    let kept = async |step: &str| {
        let version = s.timelines.cache_version("reader", rows, true).await;
        let version = version
            .unwrap()
            .unwrap_or_else(|| panic!("{step}: a version"));
        let stands = s.timelines.cache_stands("reader", &version).await.unwrap();
        assert_eq!(stands.as_ref(), Some(&version), "{step}: stands as read");
        version
    };
    let stands =
        async |version: CacheVersion| s.timelines.cache_stands("reader", &version).await.unwrap();

    let v = kept("before anyone else's repost").await;
    s.reposts.repost("nobody", p, 0).await.unwrap();
    assert!(stands(v).await.is_some(), "not a merged reposter");
    let v = kept("before a repost").await;
    s.reposts.repost("star", p, 0).await.unwrap();
    assert_eq!(stands(v).await, None, "a followed celebrity's repost");
    // An unrepost and a delete hold every version back while their retraction is
    // pending; once settled, the merge version alone tells.
    let v = kept("before an unrepost").await;
    s.reposts.unrepost("star", p).await.unwrap();
    s.timelines.settle_retractions().await.unwrap();
    assert_eq!(stands(v).await, None, "a followed celebrity's unrepost");
    s.reposts.repost("star", q, 0).await.unwrap();
    let v = kept("before the original's delete").await;
    s.content.delete_post(q).await.unwrap();
    s.reposts.remove_reposts_of(q).await.unwrap();
    s.timelines.settle_retractions().await.unwrap();
    assert!(
        s.reposts
            .reposts_by("star", None, 1)
            .await
            .unwrap()
            .is_empty()
    );
    assert_eq!(
        stands(v).await,
        None,
        "the delete of an original star reposted"
    );
}
