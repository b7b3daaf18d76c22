//! Who liked and who reposted a post: `GET /v1/posts/{id}/likes` and `/reposts`, and
//! the likers' keyset through the port.

use reqwest::StatusCode;
use serde_json::Value;
use socialite::domain::now_ms;

use super::{server, users};
use crate::common::{self, kinds};

/// Who liked and who reposted a post: newest first, keyset pages that neither skip nor
/// repeat (likes in one millisecond included), without users in a block with the caller.
#[tokio::test]
async fn who_liked_and_who_reposted_a_post_in_pages() {
    for kind in kinds("who_liked_and_who_reposted_a_post_in_pages") {
        let server = server(kind).await;
        let api = server.api();
        for user in ["ann", "bob", "cat", "dan", "eve"] {
            api.user(user).await;
        }
        let original = api.say("ann", "like me").await;
        for user in ["bob", "cat", "dan"] {
            let (status, _) = api.put(&format!("/v1/users/{user}/likes/{original}")).await;
            assert_eq!(status, StatusCode::NO_CONTENT);
            let (status, _) = api
                .put(&format!("/v1/users/{user}/reposts/{original}"))
                .await;
            assert_eq!(status, StatusCode::CREATED);
        }
        let names = |page: &Value, field: &str| -> Vec<String> {
            page["items"]
                .as_array()
                .unwrap()
                .iter()
                .map(|i| i[field].as_str().unwrap().to_owned())
                .collect()
        };
        let likes = format!("/v1/posts/{original}/likes");
        let (status, first) = api.get(&format!("{likes}?limit=2")).await;
        assert_eq!(status, StatusCode::OK, "{kind:?}: {first}");
        let cursor = first["next_cursor"].as_str().unwrap().to_owned();
        let (_, second) = api.get(&format!("{likes}?limit=2&cursor={cursor}")).await;
        let mut seen = names(&first, "user");
        seen.extend(names(&second, "user"));
        assert_eq!(second["next_cursor"], Value::Null, "{kind:?}: {second}");
        // Newest first by time; likes within one millisecond by user, descending.
        assert_eq!(seen.len(), 3, "{kind:?}: {seen:?}");
        let mut sorted = seen.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(sorted, ["bob", "cat", "dan"], "{kind:?}");
        assert_eq!(seen[2], "bob", "{kind:?}: {seen:?}");

        let reposts = format!("/v1/posts/{original}/reposts");
        let (status, first) = api.get(&format!("{reposts}?limit=2")).await;
        assert_eq!(status, StatusCode::OK, "{kind:?}: {first}");
        assert_eq!(names(&first, "reposted_by"), ["dan", "cat"], "{kind:?}");
        let before = first["next_cursor"].as_str().unwrap();
        let (_, second) = api.get(&format!("{reposts}?limit=2&before={before}")).await;
        assert_eq!(names(&second, "reposted_by"), ["bob"], "{kind:?}");
        assert_eq!(second["next_cursor"], Value::Null);

        // A block either way hides the user from the caller's lists.
        assert_eq!(
            api.put("/v1/users/eve/blocks/cat").await.0,
            StatusCode::NO_CONTENT
        );
        let eve = api.token("eve");
        let as_eve = |path: String| {
            let api = &api;
            let eve = eve.clone();
            async move {
                api.send_as(common::As::Token(&eve), reqwest::Method::GET, &path, None)
                    .await
            }
        };
        let (_, page) = as_eve(likes.clone()).await;
        assert!(
            !names(&page, "user").contains(&"cat".to_owned()),
            "{kind:?}: {page}"
        );
        assert_eq!(names(&page, "user").len(), 2, "{kind:?}: {page}");
        let (_, page) = as_eve(reposts.clone()).await;
        assert_eq!(
            names(&page, "reposted_by"),
            ["dan", "bob"],
            "{kind:?}: {page}"
        );
        let (_, page) = api.get(&likes).await;
        assert_eq!(
            names(&page, "user").len(),
            3,
            "{kind:?}: anonymous sees all"
        );

        // Errors: an unknown post, a bad cursor.
        let missing = "6740a1b2000c000000000001";
        assert_eq!(
            api.get(&format!("/v1/posts/{missing}/likes")).await.0,
            StatusCode::NOT_FOUND
        );
        assert_eq!(
            api.get(&format!("{likes}?cursor=nope")).await.0,
            StatusCode::UNPROCESSABLE_ENTITY
        );
        assert_eq!(
            api.get(&format!("{reposts}?before=nope")).await.0,
            StatusCode::UNPROCESSABLE_ENTITY
        );
        server.stop().await;
    }
}

/// Likes in one millisecond: the likers' keyset breaks ties by user, so a walk one at a
/// time meets every liker once.
#[tokio::test]
async fn likers_in_one_millisecond_page_without_gaps() {
    for kind in kinds("likers_in_one_millisecond_page_without_gaps") {
        let t = common::fresh_store(kind).await;
        let store = &t.store;
        let likers = ["u1", "u2", "u3", "u4", "u5"];
        users(store, &["ann"]).await;
        users(store, &likers).await;
        let post = store
            .content
            .insert_post("ann", "p", None, now_ms())
            .await
            .unwrap()
            .post
            .id;
        let at = now_ms();
        for (i, u) in likers.iter().enumerate() {
            // Two instants, several likes in each.
            store
                .activity
                .like(u, post, at + (i as i64 % 2))
                .await
                .unwrap();
        }
        let mut seen = Vec::new();
        let mut before = None;
        loop {
            let page = store
                .activity
                .likers(post, before.as_ref(), 1)
                .await
                .unwrap();
            let Some(last) = page.last().cloned() else {
                break;
            };
            seen.push(last.user.clone());
            before = Some(last);
        }
        assert_eq!(seen, ["u4", "u2", "u5", "u3", "u1"], "{kind:?}");
    }
}
