//! The sweep's write of a group's `taking_at` racing a new claim on the group (MongoDB).
//! The sweep settles the group's stale claim and is held (`notification.settled`) before
//! it sets `taking_at` to the claim it left, one written by a process whose clock runs a
//! minute ahead; a dismissal then writes a new claim on the group and is killed there.
//! The sweep's write, made only while `takings` is as the sweep read it, misses, so
//! `taking_at` stays no later than the new claim's `at`, and a later sweep past that
//! claim's age (below the one left) finds the group and settles it. Had the write landed,
//! `taking_at` would be the later claim's, and the sweeps below it would skip the new
//! one. The embedded store keeps no claims.

use std::time::Duration;

use mongodb::bson::{Document, doc, oid::ObjectId};
use socialite::domain::{PostId, now_ms};
use socialite::feed::FeedSettings;
use socialite::store::Store;
use socialite::workers::Worker;
use socialite::workers::notifications::{NotificationsWorker, SETTLE_TAKINGS_AFTER_MS};

use super::common::raw::raw_store;
use super::common::{Kind, kinds};
use super::races::{count_and_standing, like_of};
use super::settle;
use super::sweep::groups_with_takings;
use super::takings::two_likes_on;

/// How far ahead runs the clock of the process that wrote the claim the sweep leaves.
const AHEAD_MS: i64 = 60_000;

/// The notifications worker's upkeep at `now_ms`: a sweep of the claims older than its
/// default age. A new worker each time, so none is skipped as too soon after the last.
async fn upkeep_at(store: &Store, now_ms: i64) {
    let worker = NotificationsWorker::new(store.notifications.clone());
    worker.upkeep(now_ms).await.unwrap();
}

/// `al`'s dismissal of `actor`'s like of `p`, killed once its claim is written
/// (`notification.intended`), as a `kill -9` would leave it.
async fn killed_dismissal(store: &Store, al: &str, actor: &str, p: PostId) {
    let id = like_of(store, al, actor, p).await.expect("the like");
    let gate = socialite::faults::hold("notification.intended", al);
    let social = super::common::social(store.clone(), &FeedSettings::default());
    let al = al.to_owned();
    let dismissal = tokio::spawn(async move { social.notifications().dismiss(&al, id).await });
    tokio::time::timeout(Duration::from_secs(10), gate.reached.notified())
        .await
        .expect("the dismissal writes its claim");
    dismissal.abort();
    assert!(dismissal.await.unwrap_err().is_cancelled());
}

/// On `al`'s like group of `p`, a claim on `actor`'s like as a dismissal's step 1 leaves
/// it, written by a process whose clock runs `AHEAD_MS` ahead: its token.
async fn claim_ahead(db: &mongodb::Database, al: &str, actor: &str, p: PostId) -> String {
    let post = ObjectId::from_bytes(p.bytes());
    let like = doc! { "user": al, "type": "like", "post": post, "actor": actor };
    let notes = db.collection::<Document>("notifications");
    let note = notes.find_one(like).await.unwrap().expect("the like");
    let id = note.get("id").cloned().expect("a standing like has an id");
    let (token, at) = (ObjectId::new().to_hex(), now_ms() + AHEAD_MS);
    let claim = doc! {
        "$set": { format!("takings.{token}"): { "ids": [id], "at": at } },
        "$min": { "taking_at": at },
    };
    let groups = db.collection::<Document>("notification_groups");
    let filter = doc! { "user": al, "type": "like", "post": post };
    let hit = groups.update_one(filter, claim).await.unwrap();
    assert_eq!(hit.matched_count, 1, "no like group for {p}");
    token
}

/// `al`'s like group of `p`: its claims (token, `at`) and its `taking_at`.
async fn claims(db: &mongodb::Database, al: &str, p: PostId) -> (Vec<(String, i64)>, Option<i64>) {
    let post = ObjectId::from_bytes(p.bytes());
    let groups = db.collection::<Document>("notification_groups");
    let group = groups.find_one(doc! { "user": al, "type": "like", "post": post });
    let group = group.await.unwrap().expect("the like group");
    let takings = group.get_document("takings").cloned().unwrap_or_default();
    let claims = takings
        .iter()
        .map(|(token, claim)| {
            let at = claim.as_document().unwrap().get_i64("at").unwrap();
            (token.clone(), at)
        })
        .collect();
    (claims, group.get_i64("taking_at").ok())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_claim_written_while_the_sweep_sets_taking_at_is_swept_once_stale() {
    if !kinds("swra").contains(&Kind::Mongo) {
        return;
    }
    let t = raw_store(Kind::Mongo, "swra").await;
    let (store, db) = (&t.store, t.raw.mongo().unwrap());
    let ([al, bo, cy, dy], p, mut worker, _) = two_likes_on(store, "swra").await;
    store.activity.like(&dy, p, now_ms()).await.unwrap();
    settle(&mut worker).await;
    assert_eq!(count_and_standing(store, &al, p).await, (3, 3));

    // A stale claim on the group (a dismissal of `bo`'s like, killed), and a fresh one
    // (on `cy`'s) from a clock ahead.
    killed_dismissal(store, &al, &bo, p).await;
    let ahead = claim_ahead(db, &al, &cy, p).await;
    let (before, _) = claims(db, &al, p).await;
    assert_eq!(before.len(), 2);

    // The sweep settles the stale claim, and is held before its write of `taking_at`.
    let gate = socialite::faults::hold("notification.settled", &al);
    let sweep = {
        let store = store.clone();
        let now = now_ms() + SETTLE_TAKINGS_AFTER_MS + 1;
        tokio::spawn(async move { upkeep_at(&store, now).await })
    };
    tokio::time::timeout(Duration::from_secs(10), gate.reached.notified())
        .await
        .expect("the sweep reaches its write of taking_at");
    assert_eq!(count_and_standing(store, &al, p).await, (2, 2));
    // A new claim on the group: a dismissal of `dy`'s like, killed after writing it.
    killed_dismissal(store, &al, &dy, p).await;
    gate.release.notify_one();
    sweep.await.unwrap();

    let (after, taking_at) = claims(db, &al, p).await;
    assert_eq!(after.len(), 2, "{after:?}");
    let &(_, new_at) = after.iter().find(|(token, _)| *token != ahead).unwrap();
    let taking_at = taking_at.expect("a group with claims keeps taking_at");
    assert!(
        taking_at <= new_at,
        "taking_at {taking_at} is later than the new claim's at {new_at}: a sweep below it \
         skips the claim"
    );

    // A sweep past the new claim's age, below the claim ahead's: the new claim settled.
    upkeep_at(store, new_at + SETTLE_TAKINGS_AFTER_MS + 1).await;
    let (left, _) = claims(db, &al, p).await;
    assert_eq!(
        left.iter().map(|(token, _)| token).collect::<Vec<_>>(),
        [&ahead],
        "the new claim was not swept once stale"
    );
    assert_eq!(count_and_standing(store, &al, p).await, (1, 1));
    // And past the claim ahead's: nothing left unsettled.
    upkeep_at(store, now_ms() + AHEAD_MS + SETTLE_TAKINGS_AFTER_MS + 1).await;
    assert_eq!(count_and_standing(store, &al, p).await, (0, 0));
    assert_eq!(
        groups_with_takings(&t, &al).await,
        0,
        "a claim or taking_at left"
    );
}
