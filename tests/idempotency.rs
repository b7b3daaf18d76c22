//! Post creation under an `Idempotency-Key`, on both stores: one post per (author, key)
//! within an hour by the service's clock, the first post answered to every retry
//! whatever its body, concurrent retries making one post, a failed insert keeping no
//! key, a post deleted before its key was marked done not posted again by a retry, and
//! (MongoDB) a claim left by a crash completed by the retry.

mod common;

use std::sync::Arc;

use common::{Kind, TestServer, fresh_config, fresh_store, kinds};
use reqwest::StatusCode;
use serde_json::{Value, json};
use socialite::domain::PostId;
use socialite::domain::clock::ManualClock;
use socialite::feed::FeedSettings;
use socialite::service::POST_KEY_TTL_MS;
use socialite::store::{KeyedInsert, PostKey, StoreError};

async fn keyed(server: &TestServer, user: &str, key: &str, text: &str) -> (StatusCode, Value) {
    let response = server
        .client
        .post(server.url(&format!("/v1/users/{user}/posts")))
        .bearer_auth(server.api().token(user))
        .header("Idempotency-Key", key)
        .json(&json!({ "text": text }))
        .send()
        .await
        .unwrap();
    let status = response.status();
    (status, response.json().await.unwrap_or(Value::Null))
}

/// Checks `user`'s `posts_count`: at once, never below `expected` (a count never misses
/// an acknowledged write), and exactly `expected` once the workers settled (on MongoDB a recount
/// racing a write may stand one above the truth until the counters worker applies the
/// write's `$inc`: docs/mongodb.md).
async fn assert_posts_count(server: &TestServer, user: &str, expected: u64, kind: Kind) {
    let count = || async {
        let (status, body) = server.api().get(&format!("/v1/users/{user}")).await;
        assert_eq!(status, StatusCode::OK, "{body}");
        body["posts_count"].as_u64().unwrap()
    };
    let now = count().await;
    assert!(
        now >= expected,
        "{kind:?}: {user}'s posts_count {now} < {expected}"
    );
    server.settle().await;
    assert_eq!(
        count().await,
        expected,
        "{kind:?}: {user}'s settled posts_count"
    );
}

#[tokio::test]
async fn a_key_answers_its_first_post_for_an_hour_by_the_clock() {
    for kind in kinds("a_key_answers_its_first_post_for_an_hour_by_the_clock") {
        let start = socialite::domain::now_ms();
        let clock = Arc::new(ManualClock::at(start));
        let mut test = fresh_config(kind);
        test.config.rate.writes_per_min = 1_000_000;
        let server = TestServer::start_with_clock(test, clock.clone()).await;
        let api = server.api();
        for user in ["ann", "bob"] {
            api.user(user).await;
        }

        let (status, first) = keyed(&server, "ann", "k-1", "first body").await;
        assert_eq!(status, StatusCode::CREATED, "{kind:?}: {first}");
        let id = first["id"].as_str().unwrap().to_owned();

        // A retry, even with another body, answers the first post and makes nothing.
        clock.advance(POST_KEY_TTL_MS - 1);
        let (status, again) = keyed(&server, "ann", "k-1", "another body").await;
        assert_eq!(status, StatusCode::OK, "{kind:?}: {again}");
        assert_eq!(again["id"], id.as_str(), "{kind:?}");
        assert_eq!(again["text"], "first body", "{kind:?}");
        assert_posts_count(&server, "ann", 1, kind).await;

        // Keys are per author.
        let (status, bobs) = keyed(&server, "bob", "k-1", "bob's").await;
        assert_eq!(status, StatusCode::CREATED, "{kind:?}: {bobs}");
        assert_ne!(bobs["id"], id.as_str());

        // An hour after the first request, the key is free again.
        clock.advance(1);
        let (status, later) = keyed(&server, "ann", "k-1", "an hour later").await;
        assert_eq!(status, StatusCode::CREATED, "{kind:?}: {later}");
        assert_ne!(later["id"], id.as_str(), "{kind:?}");
        assert_posts_count(&server, "ann", 2, kind).await;
        // ... and stands for the new post from then on.
        let (status, replay) = keyed(&server, "ann", "k-1", "x").await;
        assert_eq!(status, StatusCode::OK, "{kind:?}");
        assert_eq!(replay["id"], later["id"], "{kind:?}");

        // Bad keys are a 422; without a key every request posts.
        let long = "k".repeat(257);
        assert_eq!(
            keyed(&server, "ann", &long, "x").await.0,
            StatusCode::UNPROCESSABLE_ENTITY
        );
        api.say("ann", "unkeyed").await;
        api.say("ann", "unkeyed").await;
        assert_posts_count(&server, "ann", 4, kind).await;

        // A deleted post's key answers 404 rather than posting again.
        let (status, _) = keyed(&server, "bob", "k-1", "bob again").await;
        assert_eq!(status, StatusCode::OK, "{kind:?}");
        let bob_id = bobs["id"].as_str().unwrap();
        let token = api.token("bob");
        let (status, _) = api
            .send_as(
                common::As::Token(&token),
                reqwest::Method::DELETE,
                &format!("/v1/posts/{bob_id}"),
                None,
            )
            .await;
        assert_eq!(status, StatusCode::NO_CONTENT, "{kind:?}");
        let (status, body) = keyed(&server, "bob", "k-1", "bob again").await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{kind:?}: {body}");
        server.stop().await;
    }
}

#[tokio::test]
async fn concurrent_requests_with_one_key_make_one_post() {
    for kind in kinds("concurrent_requests_with_one_key_make_one_post") {
        let t = fresh_store(kind).await;
        common::create_user(&t.store, "ann").await;
        let social = Arc::new(common::social(t.store.clone(), &FeedSettings::default()));
        let tasks: Vec<_> = (0..8)
            .map(|i| {
                let social = social.clone();
                tokio::spawn(async move {
                    social
                        .post_once("ann", &format!("try {i}"), None, "same")
                        .await
                        .unwrap()
                })
            })
            .collect();
        let mut answers = Vec::new();
        for task in tasks {
            answers.push(task.await.unwrap());
        }
        let created = answers.iter().filter(|a| a.created).count();
        assert_eq!(created, 1, "{kind:?}: {answers:?}");
        assert!(
            answers.iter().all(|a| a.post.id == answers[0].post.id),
            "{kind:?}"
        );
        let posts = t
            .store
            .content
            .posts_by_author("ann", None, 10)
            .await
            .unwrap();
        assert_eq!(posts.len(), 1, "{kind:?}: {posts:?}");
        assert_eq!(
            t.store
                .users
                .user("ann")
                .await
                .unwrap()
                .unwrap()
                .posts_count,
            1
        );
    }
}

#[tokio::test]
async fn a_failed_insert_keeps_no_key() {
    for kind in kinds("a_failed_insert_keeps_no_key") {
        let t = fresh_store(kind).await;
        common::create_user(&t.store, "ann").await;
        let social = common::social(t.store.clone(), &FeedSettings::default());
        let missing = PostId::from_bytes([7; 12]);
        let refused = social.post_once("ann", "a reply", Some(missing), "k").await;
        assert!(
            matches!(refused, Err(StoreError::NotFound(_))),
            "{kind:?}: {refused:?}"
        );
        let answer = social.post_once("ann", "a post", None, "k").await.unwrap();
        assert!(answer.created, "{kind:?}: the refused request kept the key");
        assert_eq!(answer.post.text, "a post");
    }
}

/// A post stored under a key and deleted before its key was marked done (MongoDB: the
/// first request held there, as a crash or a slow request leaves it; embedded: one
/// transaction, so the delete comes after it), then retried with the key within the
/// hour: the retry answers that the post is gone, and nothing is posted again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_post_deleted_before_its_key_is_done_is_not_posted_again() {
    for kind in kinds("a_post_deleted_before_its_key_is_done_is_not_posted_again") {
        let t = fresh_store(kind).await;
        // A name of its own: gates are process-wide, keyed by the author.
        let ann = "deleted_before_done";
        common::create_user(&t.store, ann).await;
        let social = Arc::new(common::social(t.store.clone(), &FeedSettings::default()));
        let gate = (kind == Kind::Mongo).then(|| socialite::faults::hold("post_key.inserted", ann));
        let mut first = Some({
            let social = social.clone();
            tokio::spawn(async move { social.post_once(ann, "first", None, "k").await })
        });
        let mut answered = None;
        match &gate {
            Some(gate) => gate.reached.notified().await,
            None => answered = Some(first.take().unwrap().await.unwrap()),
        }
        let posts = t
            .store
            .content
            .posts_by_author(ann, None, 10)
            .await
            .unwrap();
        assert_eq!(posts.len(), 1, "{kind:?}: {posts:?}");
        let id = posts[0].id;
        assert!(social.delete_post(id).await.unwrap().is_some(), "{kind:?}");

        let retry = social.post_once(ann, "retried", None, "k").await;
        assert!(
            matches!(retry, Err(StoreError::NotFound(_))),
            "{kind:?}: a retry after the delete answered {retry:?}"
        );
        if let Some(gate) = &gate {
            gate.release.notify_one();
        }
        let first = match first {
            Some(first) => first.await.unwrap(),
            None => answered.unwrap(),
        };
        // The first request stored the post; it answers it, or (when it saw the delete
        // before answering) that it is gone; never another post.
        match &first {
            Ok(answer) => assert_eq!(answer.post.id, id, "{kind:?}"),
            Err(StoreError::NotFound(_)) => {}
            Err(other) => panic!("{kind:?}: {other:?}"),
        }
        let again = social.post_once(ann, "again", None, "k").await;
        assert!(
            matches!(again, Err(StoreError::NotFound(_))),
            "{kind:?}: {again:?}"
        );
        let posts = t
            .store
            .content
            .posts_by_author(ann, None, 10)
            .await
            .unwrap();
        assert!(posts.is_empty(), "{kind:?}: posted again: {posts:?}");
        let user = t.store.users.user(ann).await.unwrap().unwrap();
        assert_eq!(user.posts_count, 0, "{kind:?}");
    }
}

/// A request that claimed its key and died before storing its post: the retry stores
/// the post under the claimed id, once.
#[tokio::test]
async fn a_retry_completes_a_claim_left_by_a_crash() {
    let Some(base) = common::mongo_base_uri() else {
        eprintln!("a_retry_completes_a_claim_left_by_a_crash: MongoDB SKIPPED");
        return;
    };
    let uri = common::mongo_uri_with_database(&base, &common::fresh_name("keys"));
    let store = socialite::store::mongo::connect(&uri).await.unwrap();
    common::create_user(&store, "ann").await;
    let client = mongodb::Client::with_uri_str(&uri).await.unwrap();
    let db = client.default_database().unwrap();
    let now = socialite::domain::now_ms();
    let claimed = mongodb::bson::oid::ObjectId::new();
    db.collection::<mongodb::bson::Document>("post_keys")
        .insert_one(mongodb::bson::doc! {
            "_id": { "author": "ann", "key": "k" }, "author": "ann", "post": claimed,
            "at": now, "done": false,
            "expire_at": mongodb::bson::DateTime::from_millis(now + POST_KEY_TTL_MS),
        })
        .await
        .unwrap();
    let key = PostKey {
        author: "ann".into(),
        key: "k".into(),
        at_ms: now + 1,
        ttl_ms: POST_KEY_TTL_MS,
    };
    let id = PostId::from_bytes(claimed.bytes());
    match store
        .idempotency
        .insert_post_once(&key, "retried", None, now)
        .await
    {
        Ok(KeyedInsert::Created(inserted)) => assert_eq!(inserted.post.id, id),
        other => panic!("the retry did not complete the claim: {other:?}"),
    }
    match store
        .idempotency
        .insert_post_once(&key, "again", None, now)
        .await
    {
        Ok(KeyedInsert::Existing(post)) => assert_eq!(post.id, id),
        other => panic!("{other:?}"),
    }
    assert_eq!(
        store.users.user("ann").await.unwrap().unwrap().posts_count,
        1
    );
}
