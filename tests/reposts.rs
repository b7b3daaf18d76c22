//! Reposts, on both stores: the source (one per reposter and post, ids in the posts'
//! id space), `PUT`/`DELETE /v1/users/{id}/reposts/{post_id}`, `reposts_count`, the
//! removal of every repost with its original, and a user's post list with their
//! reposts here; the change feed's entries and the port's reads in `reposts/store.rs`;
//! the notifications, events and worker clean-up reposts derive in
//! `reposts/derived.rs`; who liked and who reposted a post in `reposts/engagement.rs`.

mod common;
#[path = "reposts/derived.rs"]
mod derived;
#[path = "reposts/engagement.rs"]
mod engagement;
#[path = "reposts/store.rs"]
mod store;

use common::{TestServer, fresh_config, fresh_store, kinds};
use reqwest::StatusCode;
use serde_json::Value;
use socialite::domain::{ChangeOp, NewUser, PostId, REPOSTS, now_ms};
use socialite::store::Store;
use store::all_changes;

async fn server(kind: common::Kind) -> TestServer {
    let mut test = fresh_config(kind);
    test.config.rate.writes_per_min = 1_000_000;
    TestServer::start(test).await
}

async fn post(api: &common::Api, id: &str) -> Value {
    let (status, body) = api.get(&format!("/v1/posts/{id}")).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    body
}

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

async fn count(store: &Store, id: PostId) -> u64 {
    store.content.post(id).await.unwrap().unwrap().reposts_count
}

#[tokio::test]
async fn a_repost_is_one_per_reposter_and_post_and_moves_the_count() {
    for kind in kinds("a_repost_is_one_per_reposter_and_post_and_moves_the_count") {
        let server = server(kind).await;
        let api = server.api();
        for user in ["ann", "bob", "cat"] {
            api.user(user).await;
        }
        let original = api.say("ann", "worth passing on").await;
        assert_eq!(post(&api, &original).await["reposts_count"], 0);

        let path = format!("/v1/users/bob/reposts/{original}");
        let (status, first) = api.put(&path).await;
        assert_eq!(status, StatusCode::CREATED, "{kind:?}: {first}");
        assert_eq!(first["reposted_by"], "bob");
        assert_eq!(first["post"]["id"], original.as_str());
        assert_eq!(first["post"]["reposts_count"], 1, "{kind:?}: {first}");
        // The repost id is minted after the original's, in the same id space.
        let repost_id = first["id"].as_str().unwrap().to_owned();
        assert!(repost_id > original, "{repost_id} after {original}");

        // A second PUT answers the repost that stands, and moves nothing.
        let (status, again) = api.put(&path).await;
        assert_eq!(status, StatusCode::OK, "{kind:?}: {again}");
        assert_eq!(again["id"], repost_id.as_str());
        assert_eq!(post(&api, &original).await["reposts_count"], 1, "{kind:?}");

        // One's own post may be reposted.
        let (status, own) = api.put(&format!("/v1/users/ann/reposts/{original}")).await;
        assert_eq!(status, StatusCode::CREATED, "{kind:?}: {own}");
        assert_eq!(post(&api, &original).await["reposts_count"], 2, "{kind:?}");

        // Unrepost: 204, and again 204 (idempotent like an unlike).
        for _ in 0..2 {
            assert_eq!(
                api.delete(&path).await.0,
                StatusCode::NO_CONTENT,
                "{kind:?}"
            );
            assert_eq!(post(&api, &original).await["reposts_count"], 1, "{kind:?}");
        }
        // Reposting again makes a new repost with a new id.
        let (status, renewed) = api.put(&path).await;
        assert_eq!(status, StatusCode::CREATED, "{kind:?}: {renewed}");
        assert!(renewed["id"].as_str().unwrap() > repost_id.as_str());
        assert_eq!(post(&api, &original).await["reposts_count"], 2, "{kind:?}");

        // Another user's reposts are not the caller's to make or undo.
        let (status, body) = api
            .send_as(
                common::As::Token(&api.token("cat")),
                reqwest::Method::PUT,
                &path,
                None,
            )
            .await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{kind:?}: {body}");
    }
}

#[tokio::test]
async fn a_post_that_cannot_be_read_cannot_be_reposted() {
    for kind in kinds("a_post_that_cannot_be_read_cannot_be_reposted") {
        let server = server(kind).await;
        let api = server.api();
        for user in ["ann", "bob"] {
            api.user(user).await;
        }
        let unknown = "6740a1b2000c000000000001";
        let (status, body) = api.put(&format!("/v1/users/bob/reposts/{unknown}")).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{kind:?}: {body}");
        let (status, body) = api.put("/v1/users/bob/reposts/nope").await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{kind:?}: {body}");

        let deleted = api.say("ann", "gone soon").await;
        assert_eq!(
            api.delete(&format!("/v1/posts/{deleted}")).await.0,
            StatusCode::NO_CONTENT
        );
        let (status, body) = api.put(&format!("/v1/users/bob/reposts/{deleted}")).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{kind:?}: {body}");

        // A post whose author blocks the caller does not exist for them.
        let guarded = api.say("ann", "not for bob").await;
        assert_eq!(
            api.put("/v1/users/ann/blocks/bob").await.0.as_u16() / 100,
            2
        );
        let (status, body) = api.put(&format!("/v1/users/bob/reposts/{guarded}")).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{kind:?}: {body}");
        assert_eq!(post(&api, &guarded).await["reposts_count"], 0, "{kind:?}");
    }
}

#[tokio::test]
async fn deleting_the_original_removes_every_repost_of_it() {
    for kind in kinds("deleting_the_original_removes_every_repost_of_it") {
        let t = fresh_store(kind).await;
        let store = &t.store;
        users(store, &["ann", "bob", "cat"]).await;
        let original = store
            .content
            .insert_post("ann", "hello", None, now_ms())
            .await
            .unwrap()
            .post;
        let kept = store
            .content
            .insert_post("ann", "kept", None, now_ms())
            .await
            .unwrap()
            .post;
        let mut made = Vec::new();
        for user in ["bob", "cat"] {
            let reposted = store
                .reposts
                .repost(user, original.id, now_ms())
                .await
                .unwrap();
            assert!(reposted.created);
            made.push(reposted.repost);
        }
        store
            .reposts
            .repost("bob", kept.id, now_ms())
            .await
            .unwrap();
        assert_eq!(count(store, original.id).await, 2, "{kind:?}");
        let social = common::social(store.clone(), &Default::default());
        social.delete_post(original.id).await.unwrap();

        for user in ["bob", "cat"] {
            let left = store.reposts.reposts_by(user, None, 10).await.unwrap();
            assert!(
                left.iter().all(|r| r.post.post != original.id),
                "{kind:?}: {left:?}"
            );
        }
        let ids: Vec<PostId> = made.iter().map(|r| r.id).collect();
        assert_eq!(store.reposts.reposts_by_ids(&ids).await.unwrap(), vec![]);
        // The other post's repost stands, counted.
        assert_eq!(count(store, kept.id).await, 1, "{kind:?}");
        // A second removal finds nothing: idempotent.
        assert!(
            store
                .reposts
                .remove_reposts_of(original.id)
                .await
                .unwrap()
                .is_empty()
        );
        // Each removal is a change-feed entry that carries its repost.
        let changes = all_changes(store).await;
        for repost in &made {
            let deleted = changes
                .iter()
                .find(|c| {
                    c.collection == REPOSTS
                        && c.op == ChangeOp::Delete
                        && c.key == repost.id.to_string()
                })
                .unwrap_or_else(|| panic!("{kind:?}: no delete of {repost:?}: {changes:#?}"));
            let doc = deleted
                .document
                .as_ref()
                .expect("the delete carries the repost");
            assert_eq!(doc["user"], repost.user.as_str(), "{kind:?}");
            assert_eq!(doc["post"]["post"], original.id.to_string());
            assert_eq!(doc["post"]["author"], "ann");
        }
    }
}

#[tokio::test]
async fn a_users_post_list_shows_their_reposts_marked_among_their_posts() {
    for kind in kinds("a_users_post_list_shows_their_reposts_marked_among_their_posts") {
        let server = server(kind).await;
        let api = server.api();
        for user in ["ann", "bob", "cat"] {
            api.user(user).await;
        }
        let original = api.say("ann", "original").await;
        let older = api.say("bob", "older").await;
        let (status, repost) = api.put(&format!("/v1/users/bob/reposts/{original}")).await;
        assert_eq!(status, StatusCode::CREATED, "{repost}");
        let repost_id = repost["id"].as_str().unwrap().to_owned();
        let newer = api.say("bob", "newer").await;

        let (status, page) = api.get("/v1/users/bob/posts?limit=2").await;
        assert_eq!(status, StatusCode::OK, "{page}");
        let items = page["items"].as_array().unwrap();
        assert_eq!(items.len(), 2, "{kind:?}: {page}");
        assert_eq!(items[0]["id"], newer.as_str());
        assert!(items[0].get("reposted_by").is_none(), "{page}");
        assert_eq!(items[1]["id"], repost_id.as_str(), "{kind:?}: {page}");
        assert_eq!(items[1]["reposted_by"], "bob");
        assert_eq!(items[1]["post"]["id"], original.as_str());
        assert_eq!(items[1]["post"]["author"], "ann");
        assert_eq!(items[1]["post"]["text"], "original");
        assert_eq!(page["next_cursor"], repost_id.as_str(), "{kind:?}: {page}");
        let (_, rest) = api
            .get(&format!("/v1/users/bob/posts?limit=2&before={repost_id}"))
            .await;
        let rest = rest["items"].as_array().unwrap().clone();
        assert_eq!(rest.len(), 1, "{kind:?}: {rest:?}");
        assert_eq!(rest[0]["id"], older.as_str());

        // Someone ann blocks does not see her post through bob's repost.
        assert_eq!(
            api.put("/v1/users/ann/blocks/cat").await.0.as_u16() / 100,
            2
        );
        let (_, seen) = api
            .send_as(
                common::As::Token(&api.token("cat")),
                reqwest::Method::GET,
                "/v1/users/bob/posts",
                None,
            )
            .await;
        let seen: Vec<&str> = seen["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i["id"].as_str().unwrap())
            .collect();
        assert_eq!(seen, vec![newer.as_str(), older.as_str()], "{kind:?}");

        // Deleting the original takes the repost off the list.
        assert_eq!(
            api.delete(&format!("/v1/posts/{original}")).await.0,
            StatusCode::NO_CONTENT
        );
        let (_, page) = api.get("/v1/users/bob/posts").await;
        let ids: Vec<&str> = page["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i["id"].as_str().unwrap())
            .collect();
        assert_eq!(ids, vec![newer.as_str(), older.as_str()], "{kind:?}");
    }
}
