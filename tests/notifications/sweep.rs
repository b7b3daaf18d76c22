//! The takings sweep: a dismissal or clear killed part way (its task dropped at a gate,
//! as a `kill -9` would leave it), then nobody dismissing again; the notifications
//! worker's upkeep finishes it once its claim is older than the configured age, and
//! not before. Each notification leaves its group once, the group's count is its
//! standing notifications, and no empty claim field is left on the group. Two sweeps at
//! once move the group once. On the embedded store each taking is one transaction: the
//! same steps find everything already right and the sweep settles nothing.

use std::sync::Arc;

use mongodb::bson::{Document, doc};
use socialite::domain::{PostId, now_ms};
use socialite::feed::FeedSettings;
use socialite::store::Store;
use socialite::workers::notifications::SETTLE_TAKINGS_AFTER_MS;
use socialite::workers::{Clock, ManualClock};

use super::common::raw::{RawStore, raw_store};
use super::common::{Kind, kinds};
use super::races::{count_and_standing, held, like_of, one_more_like};
use super::settle;
use super::takings::two_likes_on;

/// How many of `user`'s groups carry a `takings` or a `taking_at` field (MongoDB; 0 on
/// the embedded store, which keeps no claims).
pub(super) async fn groups_with_takings(t: &RawStore, user: &str) -> u64 {
    let Some(db) = t.raw.mongo() else {
        return 0;
    };
    let either = [
        doc! { "takings": { "$exists": true } },
        doc! { "taking_at": { "$exists": true } },
    ];
    db.collection::<Document>("notification_groups")
        .count_documents(doc! { "user": user, "$or": either.to_vec() })
        .await
        .unwrap()
}

/// Moves `clock` so that everything written until now is older than the sweep's age.
fn past_the_age(clock: &ManualClock) {
    clock.advance(now_ms() - clock.now_ms() + SETTLE_TAKINGS_AFTER_MS + 1);
}

/// Starts `al`'s dismissal of `bo`'s like (or a clear) and kills it at `place`
/// (MongoDB); on the embedded store, or with no place, it runs whole.
async fn killed_taking(
    store: &Store,
    kind: Kind,
    place: Option<&'static str>,
    (al, bo, p): (&str, &str, PostId),
    clear: bool,
) {
    let id = like_of(store, al, bo, p).await.unwrap();
    let gate = place.and_then(|place| held(kind, place, al));
    let social = Arc::new(super::common::social(
        store.clone(),
        &FeedSettings::default(),
    ));
    let al = al.to_owned();
    let taking = tokio::spawn(async move {
        if clear {
            social.notifications().clear(&al).await
        } else {
            social.notifications().dismiss(&al, id).await
        }
    });
    match &gate {
        Some(gate) => {
            gate.reached.notified().await;
            taking.abort();
            assert!(taking.await.unwrap_err().is_cancelled());
        }
        None => taking.await.unwrap().unwrap(),
    }
}

/// A dismissal (or clear) killed at `place`; the worker steps before the claim's age
/// (which leaves it) and after it (which settles it), with no other dismissal.
async fn killed_then_swept(tag: &str, place: &'static str, clear: bool) {
    for kind in kinds(tag) {
        let t = raw_store(kind, tag).await;
        let store = &t.store;
        let ([al, bo, _, dy], p, mut worker, clock) = two_likes_on(store, tag).await;
        killed_taking(store, kind, Some(place), (&al, &bo, p), clear).await;
        let left = if clear { 0 } else { 1 };
        let mongo = kind == Kind::Mongo;

        settle(&mut worker).await;
        assert_eq!(
            groups_with_takings(&t, &al).await,
            u64::from(mongo),
            "{kind:?}: a claim younger than the age was settled, or none was left"
        );

        past_the_age(&clock);
        settle(&mut worker).await;
        assert_eq!(
            count_and_standing(store, &al, p).await,
            (left, left),
            "{kind:?}: after the sweep, the group's count is not its standing notifications"
        );
        assert_eq!(
            groups_with_takings(&t, &al).await,
            0,
            "{kind:?}: the sweep left a claim, or an empty takings field, on the group"
        );
        let again = store
            .notifications
            .sweep_notification_takings(now_ms() + 1, 100);
        assert_eq!(again.await.unwrap().settled, 0, "{kind:?}: swept twice");

        one_more_like(store, &mut worker, (&al, &dy, p), clear, left, kind).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dismissal_killed_after_its_claim_is_swept() {
    killed_then_swept("swdi", "notification.intended", false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dismissal_killed_after_its_take_is_swept() {
    killed_then_swept("swdt", "notification.taken", false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dismissal_killed_after_its_count_is_swept() {
    killed_then_swept("swdc", "notification.counted", false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_clear_killed_after_its_take_is_swept() {
    killed_then_swept("swct", "notification.taken", true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_clear_killed_after_its_count_is_swept() {
    killed_then_swept("swcc", "notification.counted", true).await;
}

/// Two sweeps of the same killed dismissal at once move its group once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_sweeps_at_once_move_the_group_once() {
    for kind in kinds("swtw") {
        let t = raw_store(kind, "swtw").await;
        let store = &t.store;
        let ([al, bo, ..], p, _, _) = two_likes_on(store, "swtw").await;
        killed_taking(
            store,
            kind,
            Some("notification.taken"),
            (&al, &bo, p),
            false,
        )
        .await;
        let sweep = || {
            store
                .notifications
                .sweep_notification_takings(now_ms() + 1, 100)
        };
        let (a, b) = tokio::join!(sweep(), sweep());
        let swept = a.unwrap().settled + b.unwrap().settled;
        assert!(
            swept <= u64::from(kind == Kind::Mongo) * 2,
            "{kind:?}: swept {swept}"
        );
        assert_eq!(
            count_and_standing(store, &al, p).await,
            (1, 1),
            "{kind:?}: two sweeps at once did not move the group exactly once"
        );
        assert_eq!(
            groups_with_takings(&t, &al).await,
            0,
            "{kind:?}: a claim left"
        );
    }
}

/// A dismissal run whole leaves no empty `takings` on its group, and an empty one left
/// behind (by a move killed before its tidy: the last claim gone, its `taking_at` kept)
/// is removed by the sweep, with `taking_at`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_empty_takings_field_is_left_on_a_group() {
    for kind in kinds("swem") {
        let t = raw_store(kind, "swem").await;
        let store = &t.store;
        let ([al, bo, cy, _], p, _, _) = two_likes_on(store, "swem").await;
        killed_taking(store, kind, None, (&al, &bo, p), false).await;
        assert_eq!(count_and_standing(store, &al, p).await, (1, 1), "{kind:?}");
        assert_eq!(
            groups_with_takings(&t, &al).await,
            0,
            "{kind:?}: takings left"
        );
        let Some(db) = t.raw.mongo() else {
            continue;
        };
        let groups = db.collection::<Document>("notification_groups");
        groups
            .update_many(
                doc! { "user": &al },
                doc! { "$set": { "takings": {}, "taking_at": now_ms() - 60_000 } },
            )
            .await
            .unwrap();
        assert_eq!(groups_with_takings(&t, &al).await, 1);
        let swept = store
            .notifications
            .sweep_notification_takings(now_ms(), 100);
        assert_eq!(swept.await.unwrap().settled, 0);
        assert_eq!(
            groups_with_takings(&t, &al).await,
            0,
            "an empty takings was kept"
        );
        let id = like_of(store, &al, &cy, p).await;
        assert!(
            id.is_some(),
            "the sweep took a notification nobody dismissed"
        );
    }
}
