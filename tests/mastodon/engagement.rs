//! Who favourited and reblogged a status, one notification (get, dismiss, clear) and
//! the public and tag timelines, on real servers, both stores.

use reqwest::StatusCode;
use serde_json::Value;

use super::client::Masto;
use crate::common::{TestServer, fresh_config, kinds};

fn ids(body: &Value) -> Vec<String> {
    body.as_array()
        .unwrap_or_else(|| panic!("not a list: {body}"))
        .iter()
        .map(|item| item["id"].as_str().unwrap().to_owned())
        .collect()
}

/// Every id a `Link` walk from `first` finds, page by page.
async fn walk(masto: &Masto, first: &str, token: Option<&str>) -> Vec<Vec<String>> {
    let mut pages = Vec::new();
    let mut path = Some(first.to_owned());
    while let Some(p) = path {
        let answer = masto.get(&p, token).await;
        assert_eq!(answer.status, StatusCode::OK, "{p}: {}", answer.body);
        let page = ids(&answer.body);
        if page.is_empty() {
            break;
        }
        pages.push(page);
        // toot reads only a header that starts with the next link.
        let link = answer.link();
        assert!(
            !link.contains("rel=\"next\"")
                || link.split(", ").next().unwrap().ends_with("rel=\"next\""),
            "{link}"
        );
        path = answer.link_path("next", masto.base());
        assert!(pages.len() < 20, "the walk does not end");
    }
    pages
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn favourited_by_and_reblogged_by_page_newest_first_without_blocked_accounts() {
    for kind in kinds("favourited_by_and_reblogged_by_page") {
        let server = TestServer::start(fresh_config(kind)).await;
        let api = server.api();
        for u in ["al", "bo", "cy", "dy", "ev"] {
            api.user(u).await;
        }
        let masto = Masto::of(&server);
        let post = masto.toot(&api.token("al"), "like me").await["id"]
            .as_str()
            .unwrap()
            .to_owned();
        for u in ["bo", "cy", "dy", "ev"] {
            let fav = format!("/api/v1/statuses/{post}/favourite");
            let answer = masto.form(&fav, &api.token(u), &[]).await;
            assert_eq!(answer.status, StatusCode::OK, "{}", answer.body);
            if u != "ev" {
                let reblog = format!("/api/v1/statuses/{post}/reblog");
                let answer = masto.form(&reblog, &api.token(u), &[]).await;
                assert_eq!(answer.status, StatusCode::OK, "{}", answer.body);
            }
        }
        let likers = format!("/api/v1/statuses/{post}/favourited_by?limit=3");
        let pages = walk(&masto, &likers, None).await;
        assert_eq!(
            pages,
            [vec!["ev", "dy", "cy"], vec!["bo"]],
            "{kind:?}: newest like first, paged by Link"
        );
        let reposters = format!("/api/v1/statuses/{post}/reblogged_by?limit=2");
        let pages = walk(&masto, &reposters, None).await;
        assert_eq!(pages, [vec!["dy", "cy"], vec!["bo"]], "{kind:?}");

        // The status counts its standing likes.
        let status = masto.get(&format!("/api/v1/statuses/{post}"), None).await;
        assert_eq!(status.body["favourites_count"], 4, "{kind:?}");
        assert_eq!(status.body["reblogs_count"], 3, "{kind:?}");
        let unfav = format!("/api/v1/statuses/{post}/unfavourite");
        masto.form(&unfav, &api.token("cy"), &[]).await;
        let home = masto
            .get("/api/v1/timelines/home", Some(&api.token("al")))
            .await;
        assert_eq!(home.body[0]["id"], post.as_str(), "{kind:?}: {}", home.body);
        assert_eq!(home.body[0]["favourites_count"], 3, "{kind:?}");

        // A block either way hides the account from the caller.
        let (status, _) = api.put("/v1/users/bo/blocks/dy").await;
        assert!(status.is_success(), "{status}");
        let bo = api.token("bo");
        let seen = masto
            .get(&format!("/api/v1/statuses/{post}/favourited_by"), Some(&bo))
            .await;
        assert_eq!(
            ids(&seen.body),
            ["ev", "bo"],
            "{kind:?}: dy is hidden: {}",
            seen.body
        );
        let seen = masto
            .get(&format!("/api/v1/statuses/{post}/reblogged_by"), Some(&bo))
            .await;
        assert!(!ids(&seen.body).contains(&"dy".to_owned()), "{kind:?}");

        let missing = masto
            .get(
                "/api/v1/statuses/79228162514264337593543950335/favourited_by",
                None,
            )
            .await;
        assert_eq!(missing.status, StatusCode::NOT_FOUND);
        let bad = masto
            .get(
                &format!("/api/v1/statuses/{post}/favourited_by?max_id=nope"),
                None,
            )
            .await;
        assert_eq!(bad.status, StatusCode::UNPROCESSABLE_ENTITY);
        let bad = masto
            .get(
                &format!("/api/v1/statuses/{post}/reblogged_by?min_id=1&max_id=1"),
                None,
            )
            .await;
        assert_eq!(bad.status, StatusCode::UNPROCESSABLE_ENTITY);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_notification_is_read_dismissed_and_cleared_with_the_right_scopes() {
    for kind in kinds("a_notification_is_read_dismissed_and_cleared") {
        let server = TestServer::start(fresh_config(kind)).await;
        let api = server.api();
        for u in ["bo", "cy"] {
            api.user(u).await;
        }
        let reader = crate::oauth_token(&server, "al", "read").await;
        let writer = crate::oauth_token(&server, "al", "write:notifications").await;
        let masto = Masto::of(&server);
        let poster = crate::oauth_token(&server, "al", "write:statuses").await;
        let post = masto.toot(&poster, "hello").await["id"]
            .as_str()
            .unwrap()
            .to_owned();
        let fav = format!("/api/v1/statuses/{post}/favourite");
        masto.form(&fav, &api.token("bo"), &[]).await;
        masto.form(&fav, &api.token("cy"), &[]).await;
        let (status, _) = api.put("/v1/users/cy/following/al").await;
        assert!(status.is_success(), "{status}");
        server.settle().await;

        let all = masto.get("/api/v1/notifications", Some(&reader)).await;
        let listed = ids(&all.body);
        assert_eq!(listed.len(), 3, "{kind:?}: {}", all.body);
        let one = masto
            .get(
                &format!("/api/v1/notifications/{}", listed[1]),
                Some(&reader),
            )
            .await;
        assert_eq!(one.status, StatusCode::OK, "{kind:?}: {}", one.body);
        assert_eq!(one.body, all.body[1], "{kind:?}: as the list shows it");

        // Scopes: reading needs read:notifications, changing write:notifications.
        let path = format!("/api/v1/notifications/{}/dismiss", listed[0]);
        let refused = masto.form(&path, &reader, &[]).await;
        assert_eq!(refused.status, StatusCode::FORBIDDEN, "{kind:?}");
        let refused = masto
            .get(
                &format!("/api/v1/notifications/{}", listed[0]),
                Some(&writer),
            )
            .await;
        assert_eq!(refused.status, StatusCode::FORBIDDEN, "{kind:?}");
        let refused = masto
            .form("/api/v1/notifications/clear", &reader, &[])
            .await;
        assert_eq!(refused.status, StatusCode::FORBIDDEN, "{kind:?}");

        let dismissed = masto.form(&path, &writer, &[]).await;
        assert_eq!(
            dismissed.status,
            StatusCode::OK,
            "{kind:?}: {}",
            dismissed.body
        );
        assert_eq!(dismissed.body, serde_json::json!({}));
        let gone = masto
            .get(
                &format!("/api/v1/notifications/{}", listed[0]),
                Some(&reader),
            )
            .await;
        assert_eq!(gone.status, StatusCode::NOT_FOUND, "{kind:?}");
        // The old form: the id in the body.
        let old = masto
            .form(
                "/api/v1/notifications/dismiss",
                &writer,
                &[("id", &listed[1])],
            )
            .await;
        assert_eq!(old.status, StatusCode::OK, "{kind:?}: {}", old.body);
        let none = masto
            .form("/api/v1/notifications/dismiss", &writer, &[])
            .await;
        assert_eq!(none.status, StatusCode::UNPROCESSABLE_ENTITY, "{kind:?}");
        let left = masto.get("/api/v1/notifications", Some(&reader)).await;
        assert_eq!(ids(&left.body), [listed[2].clone()], "{kind:?}");

        let cleared = masto
            .form("/api/v1/notifications/clear", &writer, &[])
            .await;
        assert_eq!(cleared.status, StatusCode::OK, "{kind:?}: {}", cleared.body);
        let left = masto.get("/api/v1/notifications", Some(&reader)).await;
        assert_eq!(ids(&left.body), Vec::<String>::new(), "{kind:?}");
        let unknown = masto
            .get(
                "/api/v1/notifications/79228162514264337593543950335",
                Some(&reader),
            )
            .await;
        assert_eq!(unknown.status, StatusCode::NOT_FOUND);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_public_and_tag_timelines_walk_by_link_and_hide_blocked_authors() {
    for kind in kinds("the_public_and_tag_timelines_walk_by_link") {
        let server = TestServer::start(fresh_config(kind)).await;
        let api = server.api();
        for u in ["al", "bo"] {
            api.user(u).await;
        }
        let masto = Masto::of(&server);
        let mut posted = Vec::new();
        for i in 0..5 {
            let (author, text) = if i % 2 == 0 {
                ("al", format!("post {i} #Rust"))
            } else {
                ("bo", format!("post {i}"))
            };
            let id = masto.toot(&api.token(author), &text).await["id"]
                .as_str()
                .unwrap()
                .to_owned();
            posted.push(id);
        }
        let newest_first: Vec<String> = posted.iter().rev().cloned().collect();
        let pages = walk(&masto, "/api/v1/timelines/public?limit=2", None).await;
        assert_eq!(pages.concat(), newest_first, "{kind:?}");
        assert_eq!(pages.len(), 3, "{kind:?}");
        let tagged = walk(&masto, "/api/v1/timelines/tag/rUsT?limit=2", None).await;
        let al_posts = vec![posted[4].clone(), posted[2].clone(), posted[0].clone()];
        assert_eq!(tagged.concat(), al_posts, "{kind:?}");

        // since_id cuts the newest page; min_id is the page just above, newest first.
        let since = masto
            .get(
                &format!("/api/v1/timelines/public?since_id={}", posted[2]),
                None,
            )
            .await;
        assert_eq!(ids(&since.body), [posted[4].clone(), posted[3].clone()]);
        let above = masto
            .get(
                &format!("/api/v1/timelines/public?min_id={}&limit=2", posted[0]),
                None,
            )
            .await;
        assert_eq!(ids(&above.body), [posted[2].clone(), posted[1].clone()]);
        assert!(above.link().starts_with('<'), "{}", above.link());
        assert!(above.link().contains("rel=\"next\""), "{}", above.link());
        let prev = above.link_path("prev", masto.base()).unwrap();
        assert_eq!(
            ids(&masto.get(&prev, None).await.body),
            [posted[4].clone(), posted[3].clone()]
        );

        let media = masto
            .get("/api/v1/timelines/public?only_media=true", None)
            .await;
        assert_eq!(media.body, serde_json::json!([]));
        let local = masto.get("/api/v1/timelines/public?local=true", None).await;
        assert_eq!(ids(&local.body).len(), 5);

        // With a token, a blocked author's posts are left out.
        let (status, _) = api.put("/v1/users/al/blocks/bo").await;
        assert!(status.is_success(), "{status}");
        let seen = masto
            .get("/api/v1/timelines/public", Some(&api.token("al")))
            .await;
        assert_eq!(ids(&seen.body), al_posts, "{kind:?}");
        let bad = masto.get("/api/v1/timelines/tag/no-such!tag", None).await;
        assert_eq!(bad.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", bad.body);
        let write_only = crate::oauth_token(&server, "cy", "write").await;
        let refused = masto
            .get("/api/v1/timelines/public", Some(&write_only))
            .await;
        assert_eq!(refused.status, StatusCode::FORBIDDEN);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lookup_without_acct_is_the_400_the_spec_names() {
    for kind in kinds("lookup_without_acct_is_the_400") {
        let server = TestServer::start(fresh_config(kind)).await;
        let masto = Masto::of(&server);
        for path in ["/api/v1/accounts/lookup", "/api/v1/accounts/lookup?acct="] {
            let answer = masto.get(path, None).await;
            assert_eq!(
                answer.status,
                StatusCode::BAD_REQUEST,
                "{path}: {}",
                answer.body
            );
        }
    }
}
