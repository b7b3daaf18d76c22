//! Kept home pages of the Mastodon view (`service::masto_pages`): what docs/mastodon.md
//! promises of them. Immediate on the next read: the reader's own like and unlike, a
//! rename of a shown author, a block, a delete, a new post. Within
//! `mastodon.kept_page_max_age`: other users' likes (and the other counts). The
//! embedded store keeps pages (it has cache versions), MongoDB serves every read fresh;
//! both must answer the same from the points the rules name.

use std::sync::Arc;

use reqwest::StatusCode;
use serde_json::{Value, json};
use socialite::domain::{FeedStrategy, now_ms};
use socialite::workers::ManualClock;

use super::client::{Answer, Masto};
use crate::common::{Kind, TestServer, fresh_config, kinds};

const HOME: &str = "/api/v1/timelines/home?limit=4";

/// The page's statuses by id: (favourited, favourites_count, display name).
fn shown(page: &Answer) -> Vec<(String, bool, u64, String)> {
    page.body
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["id"].as_str().unwrap().to_owned(),
                s["favourited"].as_bool().unwrap(),
                s["favourites_count"].as_u64().unwrap(),
                s["account"]["display_name"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

fn ids(page: &Answer) -> Vec<String> {
    shown(page).into_iter().map(|s| s.0).collect()
}

fn of<'a>(page: &'a [(String, bool, u64, String)], id: &str) -> &'a (String, bool, u64, String) {
    page.iter().find(|s| s.0 == id).expect("shown")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_kept_home_page_shows_what_the_rules_make_immediate_on_the_next_read() {
    for kind in kinds("a_kept_home_page_shows_what_the_rules_make_immediate_on_the_next_read") {
        let test = fresh_config(kind);
        let max_age_ms = test.config.mastodon.kept_page_max_age.0.as_millis() as i64;
        assert!(max_age_ms > 0, "kept pages are on by default");
        let clock = Arc::new(ManualClock::at(now_ms()));
        let server = TestServer::start_with_clock(test, clock.clone()).await;
        let api = server.api();
        for u in ["al", "bo", "cy"] {
            api.user(u).await;
        }
        for followee in ["bo", "cy"] {
            let (status, _) = api.put(&format!("/v1/users/al/following/{followee}")).await;
            assert_eq!(status, StatusCode::NO_CONTENT);
        }
        let (al, bo, cy) = (api.token("al"), api.token("bo"), api.token("cy"));
        let masto = Masto::of(&server);
        let mut posted = Vec::new();
        for i in 0..3 {
            posted.push(masto.toot(&bo, &format!("bo {i}")).await["id"].clone());
        }
        let newest = posted[2].as_str().unwrap().to_owned();
        server.settle().await;
        let read = || masto.get(HOME, Some(&al));
        // The first read builds al's cache; the next is read from it and kept.
        read().await;
        let first = read().await;
        assert_eq!(first.status, StatusCode::OK, "{}", first.body);
        assert_eq!(ids(&first).len(), 3);

        // Someone else's like: within the max age (kept pages hold the count).
        let liked = masto
            .form(&format!("/api/v1/statuses/{newest}/favourite"), &cy, &[])
            .await;
        assert_eq!(liked.status, StatusCode::OK);
        let kept = read().await;
        assert_eq!(
            kept.link(),
            first.link(),
            "{kind:?}: a kept page keeps its Link"
        );
        let count = of(&shown(&kept), &newest).2;
        match kind {
            Kind::Embedded => assert_eq!(count, 0, "the page was kept"),
            _ => assert_eq!(count, 1, "MongoDB keeps no pages"),
        }
        clock.advance(max_age_ms);
        let aged = shown(&read().await);
        assert_eq!(of(&aged, &newest).2, 1, "{kind:?}: past the max age");

        // The reader's own like and unlike: on the next read.
        let mine = masto
            .form(&format!("/api/v1/statuses/{newest}/favourite"), &al, &[])
            .await;
        assert_eq!(mine.status, StatusCode::OK);
        let page = shown(&read().await);
        assert!(of(&page, &newest).1, "{kind:?}: own like at once");
        assert_eq!(of(&page, &newest).2, 2, "{kind:?}");
        let undone = masto
            .form(&format!("/api/v1/statuses/{newest}/unfavourite"), &al, &[])
            .await;
        assert_eq!(undone.status, StatusCode::OK);
        let page = shown(&read().await);
        assert!(!of(&page, &newest).1, "{kind:?}: own unlike at once");

        // A rename of a shown author: on the next read.
        let (status, _) = api
            .patch("/v1/users/bo", json!({"display_name": "Bo Renamed"}))
            .await;
        assert_eq!(status, StatusCode::OK);
        let page = shown(&read().await);
        assert!(
            page.iter().all(|s| s.3 == "Bo Renamed"),
            "{kind:?}: {page:?}"
        );
        server.settle().await;
        read().await;

        // A new post, a delete, a block: on the next read.
        let from_cy = masto.toot(&cy, "cy 0").await["id"].clone();
        let page = ids(&read().await);
        assert_eq!(page[0], from_cy.as_str().unwrap(), "{kind:?}: a new post");
        let deleted = masto
            .delete(&format!("/api/v1/statuses/{newest}"), &bo)
            .await;
        assert_eq!(deleted.status, StatusCode::OK);
        let page = ids(&read().await);
        assert!(!page.contains(&newest), "{kind:?}: a delete");
        let blocked = masto.form("/api/v1/accounts/cy/block", &al, &[]).await;
        assert_eq!(blocked.status, StatusCode::OK, "{}", blocked.body);
        let page = ids(&read().await);
        assert!(
            !page.contains(&from_cy.as_str().unwrap().to_owned()),
            "{kind:?}: a block"
        );
        let expected: Vec<Value> = posted[..2].iter().rev().cloned().collect();
        assert_eq!(
            page.iter().map(|s| json!(s)).collect::<Vec<_>>(),
            expected,
            "{kind:?}"
        );
    }
}

/// Issue 36, item 8: the reader's own unrepost of a post shown below their timeline
/// cache, on a kept page that reads on below the cache (`cache`; `hybrid` reads such a
/// page fresh; pages of two over a cache of two). `reblogged` must be false on the very
/// next read, with the clock standing still (no max age runs out): the unrepost moves
/// the below clock and the reader's cache version, under which the page was kept.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_readers_own_unrepost_below_the_cache_shows_on_the_next_read() {
    for strategy in [FeedStrategy::Cache, FeedStrategy::Hybrid] {
        for kind in kinds("the_readers_own_unrepost_below_the_cache_shows_on_the_next_read") {
            let mut test = fresh_config(kind);
            test.config.feed.strategy = strategy;
            test.config.feed.cache_size = 2;
            let clock = Arc::new(ManualClock::at(now_ms()));
            let server = TestServer::start_with_clock(test, clock.clone()).await;
            let api = server.api();
            for u in ["al", "bo"] {
                api.user(u).await;
            }
            let (status, _) = api.put("/v1/users/al/following/bo").await;
            assert_eq!(status, StatusCode::NO_CONTENT);
            let (al, bo) = (api.token("al"), api.token("bo"));
            let masto = Masto::of(&server);
            let old = masto.toot(&bo, "old").await["id"]
                .as_str()
                .unwrap()
                .to_owned();
            for i in 0..4 {
                masto.toot(&bo, &format!("newer {i}")).await;
            }
            let reblog = masto
                .form(&format!("/api/v1/statuses/{old}/reblog"), &al, &[])
                .await;
            assert_eq!(reblog.status, StatusCode::OK, "{}", reblog.body);
            server.settle().await;
            let reblogged = |page: &Answer| -> Option<bool> {
                let found = page
                    .body
                    .as_array()?
                    .iter()
                    .find(|s| s["id"] == old.as_str())?;
                found["reblogged"].as_bool()
            };
            // The page that shows `old`: below the cache of two.
            let mut path = "/api/v1/timelines/home?limit=2".to_owned();
            let mut page = masto.get(&path, Some(&al)).await;
            for _ in 0..5 {
                if reblogged(&page).is_some() {
                    break;
                }
                path = page.link_path("next", masto.base()).expect("a next page");
                page = masto.get(&path, Some(&al)).await;
            }
            assert_ne!(
                path, "/api/v1/timelines/home?limit=2",
                "below the first page"
            );
            assert_eq!(
                reblogged(&page),
                Some(true),
                "{strategy:?} {kind:?}: {}",
                page.body
            );
            // Someone else's like, on a page that was kept: not shown yet (embedded).
            let liked = masto
                .form(&format!("/api/v1/statuses/{old}/favourite"), &bo, &[])
                .await;
            assert_eq!(liked.status, StatusCode::OK);
            let again = masto.get(&path, Some(&al)).await;
            assert_eq!(reblogged(&again), Some(true), "{strategy:?} {kind:?}");
            let likes = again
                .body
                .as_array()
                .unwrap()
                .iter()
                .find(|s| s["id"] == old.as_str());
            let likes = likes.unwrap()["favourites_count"].as_u64().unwrap();
            // Only `cache` keeps a page read below the cache; `hybrid` and MongoDB
            // read it fresh.
            match (kind, strategy) {
                (Kind::Embedded, FeedStrategy::Cache) => assert_eq!(likes, 0, "kept"),
                _ => assert_eq!(likes, 1, "{strategy:?} {kind:?}: read fresh"),
            }

            let undone = masto
                .form(&format!("/api/v1/statuses/{old}/unreblog"), &al, &[])
                .await;
            assert_eq!(undone.status, StatusCode::OK, "{}", undone.body);
            let after = masto.get(&path, Some(&al)).await;
            assert_eq!(
                reblogged(&after),
                Some(false),
                "{strategy:?} {kind:?}: the reader's own unrepost, at once: {}",
                after.body
            );
        }
    }
}

/// A client that accepts gzip is served the home page gzipped (kept pages compressed
/// once, when kept), one that does not is served it plain, whichever was kept first:
/// the two are kept apart, both say `Vary: Accept-Encoding`, and they decode to the
/// same page with the same `Link`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_home_page_is_gzipped_for_the_clients_that_accept_it() {
    use std::io::Read;
    for kind in kinds("a_home_page_is_gzipped_for_the_clients_that_accept_it") {
        let server = TestServer::start(fresh_config(kind)).await;
        let api = server.api();
        for u in ["al", "bo"] {
            api.user(u).await;
        }
        let (status, _) = api.put("/v1/users/al/following/bo").await;
        assert_eq!(status, StatusCode::NO_CONTENT);
        let (al, bo) = (api.token("al"), api.token("bo"));
        let masto = Masto::of(&server);
        for i in 0..6 {
            masto.toot(&bo, &format!("bo {i}")).await;
        }
        server.settle().await;
        let http = reqwest::Client::new();
        let read = |encoding: Option<&'static str>| {
            let mut request = http.get(format!("{}{HOME}", server.base)).bearer_auth(&al);
            if let Some(encoding) = encoding {
                request = request.header("accept-encoding", encoding);
            }
            async move {
                let response = request.send().await.unwrap();
                assert_eq!(response.status(), StatusCode::OK);
                let headers = response.headers().clone();
                let bytes = response.bytes().await.unwrap();
                let header = |name: &str| headers.get(name).map(|v| v.to_str().unwrap().to_owned());
                assert_eq!(
                    header("vary").as_deref(),
                    Some("Accept-Encoding"),
                    "{kind:?}"
                );
                let json = match header("content-encoding").as_deref() {
                    Some("gzip") => {
                        let mut plain = Vec::new();
                        flate2::read::GzDecoder::new(&bytes[..])
                            .read_to_end(&mut plain)
                            .unwrap();
                        assert!(bytes.len() < plain.len(), "{kind:?}: compressed");
                        plain
                    }
                    None => bytes.to_vec(),
                    Some(other) => panic!("{kind:?}: encoded as {other}"),
                };
                let page: Value = serde_json::from_slice(&json)
                    .unwrap_or_else(|e| panic!("{kind:?}: {encoding:?} not JSON: {e}"));
                (header("content-encoding"), header("link"), page)
            }
        };
        let mut pages = Vec::new();
        // Each form twice (the second read is a kept page on the embedded store), the
        // gzipped one first and last, so either is read beside the other kept.
        for (encoding, gzipped) in [
            (Some("gzip, deflate, br"), true),
            (Some("gzip, deflate, br"), true),
            (None, false),
            (None, false),
            (Some("gzip;q=0, br"), false),
            (Some("GZIP"), true),
        ] {
            let (encoded, link, page) = read(encoding).await;
            assert_eq!(encoded.is_some(), gzipped, "{kind:?}: {encoding:?}");
            assert!(
                link.is_some_and(|l| l.contains("max_id")),
                "{kind:?}: a next link"
            );
            pages.push(page);
        }
        assert_eq!(pages[0].as_array().unwrap().len(), 4, "{kind:?}");
        assert!(pages.iter().all(|p| *p == pages[0]), "{kind:?}: one page");
    }
}
