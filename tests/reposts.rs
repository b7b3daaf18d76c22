//! Reposts, on both stores: the source (one per reposter and post, ids in the posts'
//! id space), `PUT`/`DELETE /v1/users/{id}/reposts/{post_id}`, `reposts_count`, the
//! change feed's entries, and the removal of every repost with its original.

mod common;

use common::{TestServer, fresh_config, fresh_store, kinds};
use reqwest::StatusCode;
use serde_json::Value;
use socialite::domain::{ChangeOp, NewUser, PostId, REPOSTS, now_ms};
use socialite::store::Store;

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

async fn all_changes(store: &Store) -> Vec<socialite::domain::Change> {
    let mut changes = Vec::new();
    let mut position = None;
    for _ in 0..200 {
        let batch = store
            .change_feed
            .changes(position.as_ref(), 50)
            .await
            .unwrap();
        if batch.is_empty() {
            break;
        }
        position = Some(batch.last().unwrap().position.clone());
        changes.extend(batch);
    }
    changes
}

#[tokio::test]
async fn reposts_are_change_feed_entries_and_answer_by_post_and_reposter() {
    for kind in kinds("reposts_are_change_feed_entries_and_answer_by_post_and_reposter") {
        let t = fresh_store(kind).await;
        let store = &t.store;
        users(store, &["ann", "bob", "cat", "dan"]).await;
        let original = store
            .content
            .insert_post("ann", "hello", None, now_ms())
            .await
            .unwrap()
            .post;
        let by_bob = store
            .reposts
            .repost("bob", original.id, now_ms())
            .await
            .unwrap()
            .repost;
        let by_cat = store
            .reposts
            .repost("cat", original.id, now_ms())
            .await
            .unwrap()
            .repost;
        assert!(original.id < by_bob.id && by_bob.id < by_cat.id);
        assert_eq!(by_bob.post.author, "ann");
        let again = store
            .reposts
            .repost("bob", original.id, now_ms())
            .await
            .unwrap();
        assert!(!again.created);
        assert_eq!(again.repost, by_bob, "{kind:?}");

        // By post, reposter and bound, in one query.
        let mut found = store
            .reposts
            .reposts_of(
                &[original.id],
                &["bob".into(), "cat".into(), "dan".into()],
                by_cat.id,
            )
            .await
            .unwrap();
        assert_eq!(
            found,
            vec![by_bob.clone()],
            "{kind:?}: strictly below the bound"
        );
        found = store
            .reposts
            .reposts_of(
                &[original.id],
                &["cat".into()],
                PostId::from_bytes([0xff; 12]),
            )
            .await
            .unwrap();
        assert_eq!(
            found,
            vec![by_cat.clone()],
            "{kind:?}: only the reposters asked"
        );
        assert_eq!(
            store.reposts.reposts_by("bob", None, 10).await.unwrap(),
            vec![by_bob.clone()]
        );

        assert_eq!(
            store.reposts.unrepost("bob", original.id).await.unwrap(),
            Some(by_bob.clone())
        );
        assert_eq!(
            store.reposts.unrepost("bob", original.id).await.unwrap(),
            None
        );
        assert_eq!(count(store, original.id).await, 1, "{kind:?}");

        let changes = all_changes(store).await;
        let of = |op: ChangeOp, id: PostId| {
            changes
                .iter()
                .find(|c| c.collection == REPOSTS && c.op == op && c.key == id.to_string())
                .and_then(|c| c.document.clone())
                .unwrap_or_else(|| panic!("{kind:?}: no {op:?} of {id}: {changes:#?}"))
        };
        for (op, repost) in [
            (ChangeOp::Insert, &by_bob),
            (ChangeOp::Insert, &by_cat),
            (ChangeOp::Delete, &by_bob),
        ] {
            let doc = of(op, repost.id);
            let parsed: socialite::domain::Repost = serde_json::from_value(doc).unwrap();
            assert_eq!(&parsed, repost, "{kind:?} {op:?}");
        }
        let inserts = changes
            .iter()
            .filter(|c| c.collection == REPOSTS && c.op == ChangeOp::Insert)
            .count();
        assert_eq!(inserts, 2, "{kind:?}: the repeated repost wrote nothing");
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

fn notifications_runner(
    store: &Store,
    clock: &std::sync::Arc<socialite::workers::ManualClock>,
) -> socialite::workers::Runner {
    use socialite::workers::notifications::NotificationsWorker;
    socialite::workers::Runner::new(
        std::sync::Arc::new(NotificationsWorker::new(store.notifications.clone())),
        store.leases.clone(),
        store.change_feed.clone(),
        clock.clone(),
        "reposts-test",
        socialite::workers::RunnerSettings {
            lease_ttl_ms: 10_000,
            batch_size: 100,
            refresh_ms: 1_000,
        },
    )
}

async fn settle(worker: &mut socialite::workers::Runner) {
    use socialite::workers::Step;
    loop {
        match worker.step().await.unwrap() {
            Step::Applied(_) | Step::Rebuilt => {}
            Step::Idle => return,
            other => panic!("unexpected step {other:?}"),
        }
    }
}

/// `user`'s notifications as (type, actor, post), sorted.
async fn notified(
    store: &Store,
    user: &str,
) -> Vec<(socialite::domain::NotificationType, String, Option<PostId>)> {
    let filter = socialite::domain::NotificationFilter::default();
    let mut found: Vec<_> = store
        .notifications
        .notifications(user, &filter, None, 100)
        .await
        .unwrap()
        .into_iter()
        .map(|n| (n.kind, n.actor, n.post))
        .collect();
    found.sort();
    found
}

/// What the sources imply, as the rebuild and the audit see it.
async fn implied(
    store: &Store,
) -> std::collections::BTreeSet<socialite::derived::notifications::NotificationKey> {
    let sources = store.notifications.notification_sources().await.unwrap();
    socialite::derived::notifications::expected(&sources)
        .into_keys()
        .collect()
}

#[tokio::test]
async fn a_repost_notifies_the_author_until_it_or_the_original_goes() {
    use socialite::domain::NotificationType::Repost;
    for kind in kinds("a_repost_notifies_the_author_until_it_or_the_original_goes") {
        let t = fresh_store(kind).await;
        let store = &t.store;
        users(store, &["ann", "bob", "cat"]).await;
        let clock = std::sync::Arc::new(socialite::workers::ManualClock::at(now_ms()));
        let mut worker = notifications_runner(store, &clock);
        let original = store
            .content
            .insert_post("ann", "hello", None, now_ms())
            .await
            .unwrap()
            .post
            .id;
        store
            .reposts
            .repost("bob", original, now_ms())
            .await
            .unwrap();
        // One's own repost notifies no one.
        store
            .reposts
            .repost("ann", original, now_ms())
            .await
            .unwrap();
        settle(&mut worker).await;
        let bob = (Repost, "bob".to_owned(), Some(original));
        assert_eq!(notified(store, "ann").await, vec![bob.clone()], "{kind:?}");
        let implied_now = implied(store).await;
        assert_eq!(implied_now.len(), 1, "{kind:?}: {implied_now:?}");

        // An unrepost takes it away.
        store.reposts.unrepost("bob", original).await.unwrap();
        settle(&mut worker).await;
        assert_eq!(notified(store, "ann").await, vec![], "{kind:?}");
        assert!(implied(store).await.is_empty());

        // So does the original's deletion, for every repost of it.
        store
            .reposts
            .repost("bob", original, now_ms())
            .await
            .unwrap();
        store
            .reposts
            .repost("cat", original, now_ms())
            .await
            .unwrap();
        settle(&mut worker).await;
        assert_eq!(notified(store, "ann").await.len(), 2, "{kind:?}");
        let social = common::social(store.clone(), &Default::default());
        social.delete_post(original).await.unwrap();
        settle(&mut worker).await;
        assert_eq!(notified(store, "ann").await, vec![], "{kind:?}");
        assert!(implied(store).await.is_empty());
    }
}

#[tokio::test]
async fn reposts_and_unreposts_are_events() {
    use socialite::domain::EventType;
    use socialite::workers::events::event_of;
    for kind in kinds("reposts_and_unreposts_are_events") {
        let t = fresh_store(kind).await;
        let store = &t.store;
        users(store, &["ann", "bob"]).await;
        let original = store
            .content
            .insert_post("ann", "hello", None, now_ms())
            .await
            .unwrap()
            .post
            .id;
        let repost = store
            .reposts
            .repost("bob", original, now_ms())
            .await
            .unwrap()
            .repost;
        store.reposts.unrepost("bob", original).await.unwrap();
        let mut events = Vec::new();
        for change in all_changes(store).await {
            if let Some(event) = event_of(&change).unwrap() {
                events.push(event);
            }
        }
        let of = |kind: EventType| {
            events
                .iter()
                .find(|e| e.kind == kind)
                .unwrap_or_else(|| panic!("no {kind:?} in {events:#?}"))
                .payload
                .clone()
        };
        for kind in [EventType::PostReposted, EventType::PostUnreposted] {
            assert_eq!(
                of(kind),
                serde_json::json!({
                    "repost": repost.id.to_string(), "user": "bob",
                    "post": original.to_string(), "author": "ann",
                })
            );
        }
    }
}

#[tokio::test]
async fn the_timelines_worker_removes_the_reposts_a_crashed_delete_left() {
    use socialite::workers::timelines::TimelinesWorker;
    for kind in kinds("the_timelines_worker_removes_the_reposts_a_crashed_delete_left") {
        let t = fresh_store(kind).await;
        let store = &t.store;
        users(store, &["ann", "bob"]).await;
        let original = store
            .content
            .insert_post("ann", "hello", None, now_ms())
            .await
            .unwrap()
            .post
            .id;
        store
            .reposts
            .repost("bob", original, now_ms())
            .await
            .unwrap();
        // The store's delete alone: a request that died right after it (on MongoDB the
        // reposts are removed by the next step of the request, which never ran).
        store.content.delete_post(original).await.unwrap();
        let clock = std::sync::Arc::new(socialite::workers::ManualClock::at(now_ms()));
        let settings = socialite::feed::FeedSettings::default();
        let mut worker = socialite::workers::Runner::new(
            std::sync::Arc::new(TimelinesWorker::new(store.clone(), &settings)),
            store.leases.clone(),
            store.change_feed.clone(),
            clock,
            "reposts-test",
            socialite::workers::RunnerSettings {
                lease_ttl_ms: 10_000,
                batch_size: 100,
                refresh_ms: 1_000,
            },
        );
        settle(&mut worker).await;
        assert_eq!(
            store.reposts.reposts_by("bob", None, 10).await.unwrap(),
            vec![],
            "{kind:?}"
        );
    }
}

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
