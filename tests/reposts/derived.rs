//! What the workers derive from reposts: the author's notification (none for one's own
//! repost) until the repost or its original goes, the `post.reposted` and
//! `post.unreposted` events, and the timelines worker's removal of the reposts a crashed
//! delete left.

use socialite::domain::{PostId, now_ms};
use socialite::store::Store;

use super::store::all_changes;
use super::users;
use crate::common::{self, fresh_store, kinds};

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
