//! The read ceiling with blocks and mutes: a reader's hidden set kept in the process
//! (`feed::hidden`) is never served past a block or mute made through another process,
//! nor past a timed mute's expiry; and a page that loses entries to the filter is kept
//! even when it needs several read rounds.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use bytes::Bytes;
use socialite::domain::FeedStrategy;
use socialite::domain::clock::ManualClock;
use socialite::feed::TimelinePage;
use socialite::service::{MuteRequest, Social};

use crate::common::{Kind, fresh_store, kinds};
use crate::{settings, social};

fn render(page: TimelinePage) -> anyhow::Result<Bytes> {
    let authors: Vec<String> = page.items.iter().map(|i| i.author.clone()).collect();
    Ok(serde_json::to_vec(&authors)?.into())
}

/// The authors of `reader`'s first page of `limit`, through the kept pages. Each step
/// reads a length no step read before, so that no kept page answers it and the page is
/// filtered again, with the hidden set the process keeps.
async fn served(social: &Social, reader: &str, limit: usize) -> Vec<String> {
    let body = social
        .rendered_timeline(reader, None, limit, render)
        .await
        .unwrap();
    serde_json::from_slice(&body).unwrap()
}

fn has(authors: &[String], who: &str) -> bool {
    authors.iter().any(|a| a == who)
}

const FOREVER: MuteRequest = MuteRequest {
    notifications: true,
    duration_ms: None,
};

/// Two processes over one store; `one` reads and so keeps the reader's set, `two`
/// writes the relations. From each write's return on, `one` obeys it.
#[tokio::test]
async fn a_kept_hidden_set_is_not_served_after_a_change_in_another_process() {
    for kind in kinds("a_kept_hidden_set_is_not_served") {
        for strategy in [FeedStrategy::Cache, FeedStrategy::Hybrid] {
            let t = fresh_store(kind).await;
            let settings = settings(strategy);
            let (one, two) = (social(&t.store, &settings), social(&t.store, &settings));
            for id in ["reader", "bob", "cat", "dan"] {
                one.create_user(id, id).await.unwrap();
            }
            for author in ["bob", "cat", "dan"] {
                one.follow("reader", author).await.unwrap();
            }
            for _ in 0..4 {
                for author in ["bob", "cat", "dan"] {
                    one.post(author, "hi").await.unwrap();
                }
            }
            let step = |s: &str| format!("{kind:?} {strategy:?}: {s}");
            // The first read builds the cache; the next ones keep the reader's set.
            for limit in [3, 4] {
                let seen = served(&one, "reader", limit).await;
                assert!(has(&seen, "bob"), "{}: {seen:?}", step("before"));
            }
            two.mute("reader", "bob", FOREVER).await.unwrap();
            let seen = served(&one, "reader", 5).await;
            assert!(!has(&seen, "bob"), "{}: {seen:?}", step("muted"));
            assert!(has(&seen, "cat"), "{}: {seen:?}", step("muted"));
            two.unmute("reader", "bob").await.unwrap();
            let seen = served(&one, "reader", 6).await;
            assert!(has(&seen, "bob"), "{}: {seen:?}", step("unmuted"));
            two.block("dan", "reader").await.unwrap();
            let seen = served(&one, "reader", 7).await;
            assert!(!has(&seen, "dan"), "{}: {seen:?}", step("blocked"));
            assert!(has(&seen, "bob"), "{}: {seen:?}", step("blocked"));
        }
    }
}

/// A set kept while a timed mute stood is not served from its expiry on, by the
/// injectable clock, with nothing written.
#[tokio::test]
async fn a_kept_hidden_set_is_not_served_past_a_timed_mutes_expiry() {
    for kind in kinds("a_kept_hidden_set_is_not_served_past") {
        let t = fresh_store(kind).await;
        let clock = Arc::new(ManualClock::at(socialite::domain::now_ms()));
        let social = social(&t.store, &settings(FeedStrategy::Cache)).with_clock(clock.clone());
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
        let hour = 3_600_000;
        let timed = MuteRequest {
            notifications: true,
            duration_ms: Some(hour),
        };
        social.mute("reader", "bob", timed).await.unwrap();
        for limit in [2, 3] {
            let seen = served(&social, "reader", limit).await;
            assert!(!has(&seen, "bob"), "{kind:?}: muted: {seen:?}");
        }
        clock.advance(hour - 1);
        let seen = served(&social, "reader", 4).await;
        assert!(!has(&seen, "bob"), "{kind:?}: still muted: {seen:?}");
        clock.advance(1);
        let seen = served(&social, "reader", 5).await;
        assert!(has(&seen, "bob"), "{kind:?}: expired: {seen:?}");
    }
}

/// A page that needs several read rounds because a muted followee fills most of the
/// timeline is still kept when every round was read whole from the cache under one
/// version, and is served exactly as a fresh read. (The embedded store keeps pages;
/// MongoDB keeps none.)
#[tokio::test]
async fn a_page_read_in_several_rounds_is_kept() {
    let t = fresh_store(Kind::Embedded).await;
    let social = social(&t.store, &settings(FeedStrategy::Cache));
    for id in ["reader", "bob", "cat"] {
        social.create_user(id, id).await.unwrap();
    }
    for author in ["bob", "cat"] {
        social.follow("reader", author).await.unwrap();
    }
    for _ in 0..4 {
        social.post("cat", "hi").await.unwrap();
        for _ in 0..3 {
            social.post("bob", "hi").await.unwrap();
        }
    }
    social.mute("reader", "bob", FOREVER).await.unwrap();
    // The first read builds the cache (from fanout on read: nothing to keep yet).
    social.timeline("reader", None, 3).await.unwrap();
    let renders = AtomicUsize::new(0);
    for _ in 0..3 {
        let body = social
            .rendered_timeline("reader", None, 3, |page| {
                renders.fetch_add(1, Ordering::SeqCst);
                render(page)
            })
            .await
            .unwrap();
        let served: Vec<String> = serde_json::from_slice(&body).unwrap();
        assert_eq!(served, ["cat", "cat", "cat"]);
    }
    assert_eq!(
        renders.load(Ordering::SeqCst),
        1,
        "the page was rendered once and then served kept"
    );
    let fresh = social.timeline("reader", None, 3).await.unwrap();
    assert_eq!(fresh.items.len(), 3);
    // Kept and fresh agree on where the next page starts too.
    let next = social
        .timeline("reader", fresh.next_cursor, 3)
        .await
        .unwrap();
    assert_eq!(next.items.len(), 1, "{next:?}");
    assert!(next.items.iter().all(|i| i.author == "cat"));
}

/// Reads `reader`'s first page of `limit` through the kept pages, counting renders.
async fn counted(
    social: &Social,
    reader: &str,
    limit: usize,
    renders: &AtomicUsize,
) -> Vec<String> {
    let body = social
        .rendered_timeline(reader, None, limit, |page| {
            renders.fetch_add(1, Ordering::SeqCst);
            render(page)
        })
        .await
        .unwrap();
    serde_json::from_slice(&body).unwrap()
}

/// A reader whose visible timeline ends inside a complete cache (one that holds the
/// whole timeline) is served a short page from the cache alone, with no read below it,
/// and that page is kept, with blocks and mutes or without; a kept one is not served
/// past a post, a delete, an unmute or a block. Before, a short read of a cache always
/// read on by fanout on read and its page was never kept. (The embedded store keeps
/// pages; MongoDB keeps none.)
#[tokio::test]
async fn a_short_page_of_a_complete_cache_is_kept_until_a_change() {
    for strategy in [FeedStrategy::Cache, FeedStrategy::Hybrid] {
        let t = fresh_store(Kind::Embedded).await;
        let social = social(&t.store, &settings(strategy));
        for id in ["reader", "bob", "cat", "dan"] {
            social.create_user(id, id).await.unwrap();
        }
        for author in ["bob", "cat"] {
            social.follow("reader", author).await.unwrap();
        }
        let mut cats = Vec::new();
        for _ in 0..2 {
            cats.push(social.post("cat", "hi").await.unwrap().id);
            for _ in 0..2 {
                social.post("bob", "hi").await.unwrap();
            }
        }
        social.post("dan", "hi").await.unwrap();
        social.mute("reader", "bob", FOREVER).await.unwrap();
        // The first reads build the caches (from fanout on read: nothing kept yet).
        for user in ["reader", "dan"] {
            social.timeline(user, None, 5).await.unwrap();
        }
        let fresh = social.timeline("reader", None, 5).await.unwrap();
        assert_eq!(fresh.items.len(), 2, "{strategy:?}: {fresh:?}");
        assert_eq!(
            fresh.next_cursor, None,
            "{strategy:?}: nothing older exists"
        );
        // Kept until a change, then rendered once again and kept.
        let renders = AtomicUsize::new(0);
        let expect = |step: &str, served: Vec<String>, want: &[&str], rendered: usize| {
            assert_eq!(served, want, "{strategy:?}: {step}");
            assert_eq!(
                renders.load(Ordering::SeqCst),
                rendered,
                "{strategy:?}: {step}"
            );
        };
        for _ in 0..3 {
            let served = counted(&social, "reader", 5, &renders).await;
            expect("muted", served, &["cat", "cat"], 1);
        }
        social.post("cat", "hi").await.unwrap();
        for _ in 0..2 {
            let served = counted(&social, "reader", 5, &renders).await;
            expect("posted", served, &["cat", "cat", "cat"], 2);
        }
        social.delete_post(cats[0]).await.unwrap();
        for _ in 0..2 {
            let served = counted(&social, "reader", 5, &renders).await;
            expect("deleted", served, &["cat", "cat"], 3);
        }
        social.unmute("reader", "bob").await.unwrap();
        for _ in 0..2 {
            let served = counted(&social, "reader", 5, &renders).await;
            expect("unmuted", served, &["cat", "bob", "bob", "cat", "bob"], 4);
        }
        social.block("cat", "reader").await.unwrap();
        for _ in 0..2 {
            let served = counted(&social, "reader", 5, &renders).await;
            expect("blocked", served, &["bob", "bob", "bob", "bob"], 5);
        }
        // With nothing hidden: a reader of their own single post.
        let renders = AtomicUsize::new(0);
        for _ in 0..3 {
            let served = counted(&social, "dan", 5, &renders).await;
            assert_eq!(served, ["dan"], "{strategy:?}");
        }
        assert_eq!(renders.load(Ordering::SeqCst), 1, "{strategy:?}: kept");
    }
}
