//! Home timelines hide blocked and muted authors from the 2xx on, under every strategy
//! (with `hybrid`'s merge), from kept pages too, in this process and in a second one
//! over the same store; an unmute or a mute's expiry shows everything again at once.

use std::sync::Arc;

use bytes::Bytes;
use socialite::domain::FeedStrategy;
use socialite::domain::clock::ManualClock;
use socialite::feed::TimelinePage;
use socialite::service::{MuteRequest, Social};

use crate::common::{fresh_store, kinds};
use crate::{settings, social};

fn render(page: TimelinePage) -> anyhow::Result<Bytes> {
    let authors: Vec<String> = page.items.iter().map(|i| i.author.clone()).collect();
    Ok(serde_json::to_vec(&authors)?.into())
}

/// The authors of `reader`'s first page of 3 served through the kept pages (read twice,
/// so the second may be served as kept), checked against a fresh read. A page is kept
/// only when full (see `Timelines::versioned_page`), hence the short pages.
async fn authors(social: &Social, reader: &str, step: &str) -> Vec<String> {
    let mut served = Vec::new();
    for _ in 0..2 {
        let body = social
            .rendered_timeline(reader, None, 3, render)
            .await
            .unwrap();
        served = serde_json::from_slice::<Vec<String>>(&body).unwrap();
    }
    let fresh: Vec<String> = social
        .timeline(reader, None, 3)
        .await
        .unwrap()
        .items
        .into_iter()
        .map(|i| i.author)
        .collect();
    assert_eq!(
        served, fresh,
        "{step}: a kept page differs from a fresh read"
    );
    served
}

fn has(authors: &[String], who: &str) -> bool {
    authors.iter().any(|a| a == who)
}

const FOREVER: MuteRequest = MuteRequest {
    notifications: true,
    duration_ms: None,
};

#[tokio::test]
async fn mutes_and_blocks_hide_authors_under_every_strategy_and_from_kept_pages() {
    for kind in kinds("mutes_and_blocks_hide_authors") {
        for strategy in FeedStrategy::ALL {
            let t = fresh_store(kind).await;
            let settings = settings(strategy);
            // Two processes over one store: each keeps its own pages.
            let (one, two) = (social(&t.store, &settings), social(&t.store, &settings));
            for id in ["reader", "bob", "cat"] {
                one.create_user(id, id).await.unwrap();
            }
            for author in ["bob", "cat"] {
                one.follow("reader", author).await.unwrap();
            }
            one.follow("bob", "reader").await.unwrap();
            if strategy == FeedStrategy::Hybrid {
                // bob's posts are merged at read time rather than fanned out.
                t.store.graph.reclassify("bob", 0, 0).await.unwrap();
            }
            for _ in 0..3 {
                for author in ["reader", "bob", "cat"] {
                    one.post(author, &format!("by {author}")).await.unwrap();
                }
            }
            let step = |s: &str| format!("{kind:?} {strategy:?}: {s}");
            for social in [&one, &two] {
                let seen = authors(social, "reader", &step("before")).await;
                assert!(has(&seen, "bob") && has(&seen, "cat"), "{}", step("before"));
            }
            one.mute("reader", "bob", FOREVER).await.unwrap();
            for social in [&one, &two] {
                let seen = authors(social, "reader", &step("muted")).await;
                assert!(!has(&seen, "bob"), "{}: {seen:?}", step("muted"));
                assert!(has(&seen, "cat"), "{}", step("muted"));
            }
            // The mute is the reader's alone: bob still sees the reader.
            assert!(has(&authors(&one, "bob", &step("bob")).await, "reader"));
            two.unmute("reader", "bob").await.unwrap();
            for social in [&one, &two] {
                let seen = authors(social, "reader", &step("unmuted")).await;
                assert!(has(&seen, "bob"), "{}: {seen:?}", step("unmuted"));
            }
            one.block("bob", "reader").await.unwrap();
            for social in [&one, &two] {
                let seen = authors(social, "reader", &step("blocked")).await;
                assert!(!has(&seen, "bob"), "{}: {seen:?}", step("blocked"));
                let seen = authors(social, "bob", &step("blocker")).await;
                assert!(!has(&seen, "reader"), "{}: {seen:?}", step("blocker"));
            }
        }
    }
}

/// A mute's filter is immediate even where the timeline still holds the author's
/// entries: a follow and its materialised posts stay; only reads hide them.
#[tokio::test]
async fn a_mute_leaves_follows_and_materialised_entries_alone() {
    for kind in kinds("a_mute_leaves_follows") {
        let t = fresh_store(kind).await;
        let settings = settings(FeedStrategy::Cache);
        let social = social(&t.store, &settings);
        for id in ["reader", "bob"] {
            social.create_user(id, id).await.unwrap();
        }
        social.follow("reader", "bob").await.unwrap();
        let post = social.post("bob", "hi").await.unwrap().id;
        social.timeline("reader", None, 5).await.unwrap();
        social.mute("reader", "bob", FOREVER).await.unwrap();
        assert!(t.store.graph.edge("reader", "bob").await.unwrap().is_some());
        let cache = t.store.timelines.cache("reader").await.unwrap().unwrap();
        assert!(cache.entries.iter().any(|e| e.id == post), "{kind:?}");
        let page = social.timeline("reader", None, 5).await.unwrap();
        assert!(page.items.is_empty(), "{kind:?}: {page:?}");
    }
}

/// A timed mute stops filtering at its expiry by the server's clock, with no worker:
/// a page read (and kept) while it stood is not served past it.
#[tokio::test]
async fn a_timed_mute_shows_the_author_again_right_at_its_expiry() {
    for kind in kinds("a_timed_mute_shows_the_author_again") {
        for strategy in [FeedStrategy::Cache, FeedStrategy::FanoutOnRead] {
            let t = fresh_store(kind).await;
            let clock = Arc::new(ManualClock::at(socialite::domain::now_ms()));
            let social = social(&t.store, &settings(strategy)).with_clock(clock.clone());
            for id in ["reader", "bob", "cat"] {
                social.create_user(id, id).await.unwrap();
            }
            for author in ["bob", "cat"] {
                social.follow("reader", author).await.unwrap();
            }
            for _ in 0..3 {
                for author in ["cat", "bob"] {
                    social.post(author, "hi").await.unwrap();
                }
            }
            let hour = 3_600_000;
            let timed = MuteRequest {
                notifications: false,
                duration_ms: Some(hour),
            };
            social.mute("reader", "bob", timed).await.unwrap();
            let step = format!("{kind:?} {strategy:?}");
            let seen = authors(&social, "reader", &step).await;
            assert_eq!(seen, ["cat", "cat", "cat"], "{step}: muted");
            let listed = social.relation_list("reader", true, None, 5).await.unwrap();
            assert_eq!(listed.items.len(), 1);
            assert!(!listed.items[0].mute.unwrap().notifications);
            clock.advance(hour - 1);
            let seen = authors(&social, "reader", &step).await;
            assert_eq!(seen, ["cat", "cat", "cat"], "{step}");
            clock.advance(1);
            // The kept page of a moment ago is gone: served fresh, bob shows.
            let body = social
                .rendered_timeline("reader", None, 3, render)
                .await
                .unwrap();
            let served: Vec<String> = serde_json::from_slice(&body).unwrap();
            assert!(has(&served, "bob"), "{step}: expired: {served:?}");
            let listed = social.relation_list("reader", true, None, 5).await.unwrap();
            assert!(
                listed.items.is_empty(),
                "{step}: an expired mute is not listed"
            );
        }
    }
}

/// A page that loses entries to a mute is still read in one round and kept: a reader
/// who hides someone among their followees must not pay a full read for every page.
/// (The embedded store keeps pages; MongoDB keeps none.)
#[tokio::test]
async fn a_page_that_loses_entries_to_a_mute_is_still_kept() {
    let t = fresh_store(crate::common::Kind::Embedded).await;
    let social = social(&t.store, &settings(FeedStrategy::Cache));
    for id in ["reader", "bob", "cat"] {
        social.create_user(id, id).await.unwrap();
    }
    for author in ["bob", "cat"] {
        social.follow("reader", author).await.unwrap();
    }
    for _ in 0..4 {
        for author in ["cat", "bob"] {
            social.post(author, "hi").await.unwrap();
        }
    }
    social.mute("reader", "bob", FOREVER).await.unwrap();
    // The first read builds the cache (from fanout on read: nothing to keep yet).
    social.timeline("reader", None, 3).await.unwrap();
    let renders = std::sync::atomic::AtomicUsize::new(0);
    for _ in 0..3 {
        let body = social
            .rendered_timeline("reader", None, 3, |page| {
                renders.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                render(page)
            })
            .await
            .unwrap();
        let served: Vec<String> = serde_json::from_slice(&body).unwrap();
        assert_eq!(served, ["cat", "cat", "cat"]);
    }
    assert_eq!(
        renders.load(std::sync::atomic::Ordering::SeqCst),
        1,
        "the page was rendered once and then served kept"
    );
}
