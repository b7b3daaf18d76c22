//! Dismissing and clearing notifications, on both stores: a dismissal is a source, so
//! the worker's effect, the rebuild, the derived definition and the grouped view all
//! leave the dismissed notification out; the same cause done again after it notifies
//! again; one notification by id; and the `/v1` routes.

use std::sync::Arc;

use reqwest::StatusCode;
use socialite::derived::notifications::{expected, groups};
use socialite::domain::{NotificationFilter, NotificationType, now_ms};
use socialite::feed::FeedSettings;
use socialite::store::{NotificationEffect, RebuildBounds, Recipient, StoreError};
use socialite::workers::ManualClock;

use super::{TTL, all_of, create_user, fence, post, runner, settle, stored_and_expected};

use crate::common::{self, TestServer, fresh_config, fresh_store, kinds};

#[tokio::test]
async fn a_dismissal_is_a_source_the_worker_and_the_rebuild_respect() {
    for kind in kinds("a_dismissal_is_a_source_the_worker_and_the_rebuild_respect") {
        let t = fresh_store(kind).await;
        let store = &t.store;
        let users = ["al", "bo", "cy"];
        for u in users {
            create_user(store, u).await;
        }
        let start = now_ms();
        let clock = Arc::new(ManualClock::at(start));
        let mut worker = runner(store, &clock, "W");
        let p = post(store, "al", "one").await;
        store.graph.follow("bo", "al", now_ms()).await.unwrap();
        store.activity.like("bo", p, now_ms()).await.unwrap();
        store.activity.like("cy", p, now_ms()).await.unwrap();
        settle(&mut worker).await;
        let social = common::social(store.clone(), &FeedSettings::default());
        let service = social.notifications();
        let all = NotificationFilter::default();
        let mine = all_of(store, "al", &all, 100).await;
        assert_eq!(mine.len(), 3, "{kind:?}: {mine:?}");
        let like = mine
            .iter()
            .find(|n| n.kind == NotificationType::Like && n.actor == "bo")
            .unwrap()
            .clone();

        // One by id: the owner's only.
        assert_eq!(service.get("al", like.id).await.unwrap().id, like.id);
        let foreign = service.get("bo", like.id).await;
        assert!(
            matches!(foreign, Err(StoreError::NotFound(_))),
            "{foreign:?}"
        );

        service.dismiss("al", like.id).await.unwrap();
        let gone = service.get("al", like.id).await;
        assert!(
            matches!(gone, Err(StoreError::NotFound(_))),
            "{kind:?}: {gone:?}"
        );
        let again = service.dismiss("al", like.id).await;
        assert!(matches!(again, Err(StoreError::NotFound(_))), "{again:?}");
        let left = all_of(store, "al", &all, 100).await;
        assert_eq!(left.len(), 2, "{kind:?}: {left:?}");
        let stored_groups = store
            .notifications
            .notification_groups("al", &all, None, 100)
            .await
            .unwrap();
        assert_eq!(stored_groups, groups(&left), "{kind:?}");

        // The definition leaves it out, and so does the rebuild.
        let (stored, implied) = stored_and_expected(store, &users).await;
        assert_eq!(stored, implied, "{kind:?}");
        let f = fence(store, "R", start + TTL + 1).await;
        store
            .notifications
            .rebuild_notifications(&f, RebuildBounds::default())
            .await
            .unwrap();
        let (stored, implied) = stored_and_expected(store, &users).await;
        assert_eq!(stored, implied, "{kind:?}: the rebuild brought it back");
        assert_eq!(stored.len(), 2, "{kind:?}: {stored:?}");
        let rebuilt = all_of(store, "al", &all, 100).await;
        let stored_groups = store
            .notifications
            .notification_groups("al", &all, None, 100)
            .await
            .unwrap();
        assert_eq!(stored_groups, groups(&rebuilt), "{kind:?}");

        // The worker's effect of the same cause, replayed, adds nothing...
        let add = |at_ms| NotificationEffect::Add {
            to: Recipient::User("al".into()),
            kind: NotificationType::Like,
            actor: "bo".into(),
            post: Some(p),
            at_ms,
        };
        let seq = 1_000_000;
        store
            .notifications
            .apply_notification(&f, seq, &add(like.at_ms))
            .await
            .unwrap();
        assert_eq!(all_of(store, "al", &all, 100).await.len(), 2, "{kind:?}");
        // ... but the cause done again after the dismissal notifies again.
        let later = now_ms() + 60_000;
        store
            .notifications
            .apply_notification(&f, seq + 1, &add(later))
            .await
            .unwrap();
        let back = all_of(store, "al", &all, 100).await;
        assert_eq!(back.len(), 3, "{kind:?}: {back:?}");

        // A clear takes everything there is now, for good.
        service.clear("al").await.unwrap();
        assert!(all_of(store, "al", &all, 100).await.is_empty(), "{kind:?}");
        let page = service.groups("al", &all, None, 100).await.unwrap();
        assert!(page.items.is_empty(), "{kind:?}: {page:?}");
        let f = fence(store, "S", start + 2 * TTL + 2).await;
        store
            .notifications
            .rebuild_notifications(&f, RebuildBounds::default())
            .await
            .unwrap();
        assert!(all_of(store, "al", &all, 100).await.is_empty(), "{kind:?}");
        let sources = store.notifications.notification_sources().await.unwrap();
        assert!(
            expected(&sources).keys().all(|(user, ..)| user != "al"),
            "{kind:?}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_api_gets_dismisses_and_clears_notifications() {
    for kind in kinds("the_api_gets_dismisses_and_clears_notifications") {
        let server = TestServer::start(fresh_config(kind)).await;
        let api = server.api();
        for u in ["al", "bo", "cy"] {
            api.user(u).await;
        }
        let p = api.say("al", "hello").await;
        for u in ["bo", "cy"] {
            let (status, _) = api.put(&format!("/v1/users/{u}/likes/{p}")).await;
            assert_eq!(status, StatusCode::NO_CONTENT);
        }
        server.settle().await;
        let (_, page) = api.get("/v1/users/al/notifications").await;
        let items = page["items"].as_array().unwrap().clone();
        assert_eq!(items.len(), 2, "{kind:?}: {page}");
        let id = items[0]["id"].as_str().unwrap();
        let path = format!("/v1/users/al/notifications/{id}");
        let (status, one) = api.get(&path).await;
        assert_eq!(status, StatusCode::OK, "{kind:?}: {one}");
        assert_eq!(one, items[0]);
        // Someone else's credentials: refused; a malformed id names nothing.
        let bo = api.token("bo");
        let (status, _) = api
            .send_as(common::As::Token(&bo), reqwest::Method::GET, &path, None)
            .await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{kind:?}");
        assert_eq!(
            api.get("/v1/users/al/notifications/nope").await.0,
            StatusCode::NOT_FOUND
        );

        assert_eq!(
            api.delete(&path).await.0,
            StatusCode::NO_CONTENT,
            "{kind:?}"
        );
        assert_eq!(api.get(&path).await.0, StatusCode::NOT_FOUND, "{kind:?}");
        assert_eq!(api.delete(&path).await.0, StatusCode::NOT_FOUND, "{kind:?}");
        let (_, page) = api.get("/v1/users/al/notifications").await;
        assert_eq!(
            page["items"].as_array().unwrap().len(),
            1,
            "{kind:?}: {page}"
        );
        let (_, grouped) = api.get("/v1/users/al/notifications?grouped=true").await;
        assert_eq!(grouped["groups"][0]["count"], 1, "{kind:?}: {grouped}");

        assert_eq!(
            api.delete("/v1/users/al/notifications").await.0,
            StatusCode::NO_CONTENT
        );
        let (_, page) = api.get("/v1/users/al/notifications").await;
        assert_eq!(page["items"], serde_json::json!([]), "{kind:?}: {page}");
        let (_, grouped) = api.get("/v1/users/al/notifications?grouped=true").await;
        assert_eq!(
            grouped["groups"],
            serde_json::json!([]),
            "{kind:?}: {grouped}"
        );
        server.stop().await;
    }
}
