//! The takings sweep in bounded batches (MongoDB): a backlog of claims left by killed
//! dismissals, larger than one batch, is read a batch at a time and drained whole by
//! the worker's upkeep, oldest first; a claim younger than the cutoff is left, with the
//! group's `taking_at` set to it; and claims written by an earlier version (no
//! `taking_at`, the old sparse index on `takings`) are marked at connect and swept.
//! The claims are written raw, as step 1 of a dismissal killed right after it leaves
//! them. The embedded store keeps no claims: its sweep settles nothing and reads none.

use mongodb::IndexModel;
use mongodb::bson::{Bson, Document, doc, oid::ObjectId};
use mongodb::options::IndexOptions;
use socialite::domain::{PostId, now_ms};
use socialite::store::{Store, SweptTakings};
use socialite::workers::Worker;
use socialite::workers::notifications::NotificationsWorker;

use super::common::raw::raw_store;
use super::common::{Kind, create_user, kinds, mongo_base_uri, mongo_uri_with_database};
use super::races::count_and_standing;
use super::sweep::groups_with_takings;
use super::{post, runner, settle};

/// Posts of `tag`al, each liked by `tag`bo and notified: one like group per post.
async fn liked_posts(store: &Store, tag: &str, n: usize) -> (String, Vec<PostId>) {
    let (al, bo) = (format!("{tag}al"), format!("{tag}bo"));
    create_user(store, &al).await;
    create_user(store, &bo).await;
    let clock = std::sync::Arc::new(socialite::workers::ManualClock::at(now_ms()));
    let mut worker = runner(store, &clock, "W");
    let mut posts = Vec::new();
    for i in 0..n {
        let p = post(store, &al, &format!("post {i}")).await;
        store.activity.like(&bo, p, now_ms()).await.unwrap();
        posts.push(p);
    }
    settle(&mut worker).await;
    (al, posts)
}

/// On `user`'s like group of `p`, a claim under a new token on its notification, made
/// at `at`, with `taking_at` (the current shape) or without (an earlier version's).
async fn claim(db: &mongodb::Database, user: &str, p: PostId, at: i64, new: bool) {
    let post = ObjectId::from_bytes(p.bytes());
    let note = db
        .collection::<Document>("notifications")
        .find_one(doc! { "user": user, "type": "like", "post": post })
        .await
        .unwrap()
        .expect("the like notification");
    let ids: Vec<Bson> = note.get("id").cloned().into_iter().collect();
    let mut set =
        doc! { format!("takings.{}", ObjectId::new().to_hex()): { "ids": ids, "at": at } };
    if new {
        set.insert("taking_at", at);
    }
    let hit = db
        .collection::<Document>("notification_groups")
        .update_one(
            doc! { "user": user, "type": "like", "post": post },
            doc! { "$set": set },
        )
        .await
        .unwrap();
    assert_eq!(hit.matched_count, 1, "no like group for {p}");
}

async fn sweep(store: &Store, cutoff: i64, limit: usize) -> SweptTakings {
    let notifications = &store.notifications;
    notifications
        .sweep_notification_takings(cutoff, limit)
        .await
        .unwrap()
}

/// The notifications worker's upkeep, sweeping in batches of `batch`, due now.
async fn upkeep(store: &Store, batch: usize) {
    let worker = NotificationsWorker::new(store.notifications.clone())
        .settling_takings_after(1_000)
        .sweeping_in_batches_of(batch);
    worker.upkeep(now_ms()).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_backlog_of_claims_larger_than_a_batch_is_swept_whole() {
    const N: usize = 7;
    for kind in kinds("swba") {
        let t = raw_store(kind, "swba").await;
        let store = &t.store;
        let (al, posts) = liked_posts(store, "swba", N + 1).await;
        let Some(db) = t.raw.mongo() else {
            assert_eq!(sweep(store, now_ms() + 1, 2).await, SweptTakings::default());
            for p in &posts {
                assert_eq!(count_and_standing(store, &al, *p).await, (1, 1));
            }
            continue;
        };
        let groups = db.collection::<Document>("notification_groups");
        let old = now_ms() - 60_000;
        for (i, p) in posts[..N].iter().enumerate() {
            claim(db, &al, *p, old + i as i64, true).await;
        }
        // The last group: one old claim and one younger than the cutoff.
        let young = now_ms() + 60_000;
        claim(db, &al, posts[N], old - 1, true).await;
        claim(db, &al, posts[N], young, false).await;

        let first = sweep(store, now_ms(), 2).await;
        assert_eq!(
            first,
            SweptTakings {
                settled: 2,
                more: true
            },
            "one batch read more (or fewer) groups than its limit"
        );
        upkeep(store, 2).await;
        for p in &posts[..N] {
            assert_eq!(
                count_and_standing(store, &al, *p).await,
                (0, 0),
                "a claim of the backlog was left unsettled, or settled twice"
            );
        }
        let last = groups
            .find_one(doc! { "user": &al, "taking_at": { "$exists": true } })
            .await
            .unwrap()
            .expect("the group with the young claim keeps taking_at");
        assert_eq!(last.get_document("takings").unwrap().len(), 1);
        assert_eq!(
            last.get_i64("taking_at").unwrap(),
            young,
            "taking_at is not the oldest claim left"
        );
        assert_eq!(count_and_standing(store, &al, posts[N]).await, (0, 0));
        assert_eq!(
            groups_with_takings(&t, &al).await,
            1,
            "a claim or taking_at left"
        );
        assert_eq!(sweep(store, now_ms(), 2).await, SweptTakings::default());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claims_of_an_earlier_version_are_swept_after_connect() {
    if !kinds("swold").contains(&Kind::Mongo) {
        return;
    }
    let t = raw_store(Kind::Mongo, "swold").await;
    let (al, posts) = liked_posts(&t.store, "swold", 5).await;
    let db = t.raw.mongo().unwrap();
    let groups = db.collection::<Document>("notification_groups");
    for p in &posts {
        claim(db, &al, *p, now_ms() - 60_000, false).await;
    }
    groups.drop_index("taking_at_1").await.unwrap();
    let sparse = IndexOptions::builder().sparse(true).build();
    let old = IndexModel::builder()
        .keys(doc! { "takings": 1 })
        .options(sparse)
        .build();
    groups.create_index(old).await.unwrap();
    assert_eq!(
        sweep(&t.store, now_ms(), 10).await,
        SweptTakings::default(),
        "claims without taking_at were found before the migration"
    );

    let uri = mongo_uri_with_database(&mongo_base_uri().unwrap(), db.name());
    let store = socialite::store::mongo::connect(&uri).await.unwrap();
    let indexes = groups.list_index_names().await.unwrap();
    assert!(!indexes.iter().any(|i| i == "takings_1"), "{indexes:?}");
    assert!(indexes.iter().any(|i| i == "taking_at_1"), "{indexes:?}");
    upkeep(&store, 2).await;
    for p in &posts {
        assert_eq!(
            count_and_standing(&store, &al, *p).await,
            (0, 0),
            "a claim of an earlier version was not swept"
        );
    }
    assert_eq!(
        groups_with_takings(&t, &al).await,
        0,
        "a claim or taking_at left"
    );
}
