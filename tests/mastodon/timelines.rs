//! The home timeline on real servers, both stores: a walk through `Link` pages (next
//! first) finds every status once, newest first, with ids that sort by (length, then
//! lexically) in creation order as Tusky assumes; reposts wrap their original; the
//! viewer's flags are right per status; newer-than pages are refused until served.

use reqwest::StatusCode;
use serde_json::Value;

use super::client::Masto;
use crate::common::{TestServer, fresh_config, kinds};

/// Tusky's order of status ids: by length, then lexically.
fn tusky_key(id: &str) -> (usize, &str) {
    (id.len(), id)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_link_walk_of_the_home_timeline_finds_every_status_in_order() {
    for kind in kinds("a_link_walk_of_the_home_timeline_finds_every_status_in_order") {
        let server = TestServer::start(fresh_config(kind)).await;
        let api = server.api();
        for u in ["al", "bo", "cy", "dy"] {
            api.user(u).await;
        }
        for followee in ["bo", "cy"] {
            let (status, _) = api.put(&format!("/v1/users/al/following/{followee}")).await;
            assert_eq!(status, StatusCode::NO_CONTENT);
        }
        let (al, bo, cy, dy) = (
            api.token("al"),
            api.token("bo"),
            api.token("cy"),
            api.token("dy"),
        );
        let masto = Masto::of(&server);
        // Several in one burst: ids made within a millisecond must keep their order.
        let mut posted = Vec::new();
        for i in 0..7 {
            let status = masto.toot(&bo, &format!("post {i}")).await;
            posted.push(status["id"].as_str().unwrap().to_owned());
        }
        let mut by_tusky = posted.clone();
        by_tusky.sort_by(|a, b| tusky_key(a).cmp(&tusky_key(b)));
        assert_eq!(
            by_tusky, posted,
            "ids sort by (length, lexical) in creation order"
        );
        // al likes two of them; cy reposts a post of dy's, whom al does not follow.
        for liked in [&posted[1], &posted[4]] {
            let answer = masto
                .form(&format!("/api/v1/statuses/{liked}/favourite"), &al, &[])
                .await;
            assert_eq!(answer.status, StatusCode::OK);
        }
        let original = masto.toot(&dy, "from dy").await["id"]
            .as_str()
            .unwrap()
            .to_owned();
        let boost = masto
            .form(&format!("/api/v1/statuses/{original}/reblog"), &cy, &[])
            .await;
        assert_eq!(boost.status, StatusCode::OK, "{}", boost.body);
        server.settle().await;

        let mut seen: Vec<Value> = Vec::new();
        let mut path = "/api/v1/timelines/home?limit=3".to_owned();
        let mut pages = 0;
        loop {
            let page = masto.get(&path, Some(&al)).await;
            assert_eq!(
                page.status,
                StatusCode::OK,
                "{kind:?} {path}: {}",
                page.body
            );
            let items = page.body.as_array().unwrap().clone();
            assert!(items.len() <= 3);
            if !items.is_empty() {
                // toot reads only a Link whose first entry is the next page.
                let first = page.link().split(", ").next().unwrap();
                let has_next = page.link().contains("; rel=\"next\"");
                assert!(
                    !has_next || first.ends_with(">; rel=\"next\""),
                    "{}",
                    page.link()
                );
                assert!(page.link().contains("; rel=\"prev\""), "{}", page.link());
            }
            seen.extend(items);
            pages += 1;
            assert!(pages < 10, "the walk ends");
            match page.link_path("next", masto.base()) {
                Some(next) if !page.body.as_array().unwrap().is_empty() => path = next,
                _ => break,
            }
        }
        let ids: Vec<&str> = seen.iter().map(|s| s["id"].as_str().unwrap()).collect();
        assert_eq!(ids.len(), 8, "{kind:?}: {ids:?}");
        let mut newest_first: Vec<&str> = posted.iter().rev().map(String::as_str).collect();
        newest_first.insert(0, boost.body["id"].as_str().unwrap());
        assert_eq!(ids, newest_first, "{kind:?}");
        assert!(ids.windows(2).all(|w| tusky_key(w[0]) > tusky_key(w[1])));

        let wrapper = &seen[0];
        assert_eq!(wrapper["account"]["id"], "cy");
        assert_eq!(wrapper["reblog"]["id"], original.as_str());
        assert_eq!(wrapper["reblog"]["account"]["id"], "dy");
        assert_eq!(wrapper["content"], "");
        for status in &seen[1..] {
            let id = status["id"].as_str().unwrap();
            let liked = id == posted[1] || id == posted[4];
            assert_eq!(status["favourited"], liked, "{id}");
            assert_eq!(status["account"]["id"], "bo");
            assert_eq!(status["account"]["statuses_count"], 7);
        }

        // Newer-than pages are not served yet: refused, not answered as older ones.
        for param in ["since_id", "min_id"] {
            let answer = masto
                .get(
                    &format!("/api/v1/timelines/home?{param}={}", posted[0]),
                    Some(&al),
                )
                .await;
            assert_eq!(answer.status, StatusCode::UNPROCESSABLE_ENTITY, "{param}");
        }
        for bad in ["limit=0", "limit=x", "max_id=zz"] {
            let answer = masto
                .get(&format!("/api/v1/timelines/home?{bad}"), Some(&al))
                .await;
            assert_eq!(answer.status, StatusCode::UNPROCESSABLE_ENTITY, "{bad}");
        }
        let clamped = masto
            .get("/api/v1/timelines/home?limit=400", Some(&al))
            .await;
        assert_eq!(clamped.status, StatusCode::OK);
        assert!(clamped.link().contains("limit=40&"), "{}", clamped.link());
        server.stop().await;
    }
}
