//! The derived data of the social features: notifications (both ways: one missing, one
//! whose cause does not stand), `replies_count`, timelines free of authors in a block
//! with their reader, reposts' delivery markers, and the tag index the tag timeline
//! reads. Each corrupted in the store, named by the audit as exactly
//! its kind and what is wrong, and mended by `--repair`.

use mongodb::bson::{Document, doc, oid::ObjectId};
use socialite::app::build_state;
use socialite::audit::{self, Kind as Audited};
use socialite::config::Config;
use socialite::domain::{FeedStrategy, Post, PostId, TimelineEntry};
use socialite::store::Store;

use super::common::kinds;
use super::{
    Raw, assert_clean, audit_of, config, corrupted, settle_and_stop, skip_the_workers_past_it,
    world,
};

/// `world`, plus bob's reply to ann's post mentioning cat, and dan blocking eve after
/// eve followed dan; every timeline read again, the workers caught up and stopped.
/// Returns ann's post and dan's.
async fn social_world(config: &Config) -> (Store, Post, Post) {
    let store = world(config).await;
    let state = build_state(config, store.clone()).await.unwrap();
    let social = &state.social;
    let ann = social.post("ann", "a question").await.unwrap();
    social
        .post_reply("bob", "an answer, @cat agrees", Some(ann.id))
        .await
        .unwrap();
    social.follow("eve", "dan").await.unwrap();
    let dan = social.post("dan", "dan to eve").await.unwrap();
    social.block("dan", "eve").await.unwrap();
    for user in ["ann", "bob", "cat", "dan", "eve"] {
        social.timeline(user, None, 20).await.unwrap();
    }
    settle_and_stop(&state).await;
    (store, ann, dan)
}

impl Raw {
    async fn drop_notification(&self, user: &str, kind: &str, actor: &str, post: PostId) {
        match self {
            Raw::Embedded(conn) => {
                let sql = "DELETE FROM notifications
                           WHERE user = ?1 AND type = ?2 AND actor = ?3 AND post = ?4";
                let post = post.bytes().to_vec();
                let n = conn
                    .execute(sql, rusqlite::params![user, kind, actor, post])
                    .unwrap();
                assert_eq!(n, 1);
            }
            Raw::Mongo(db) => {
                let id = format!("{user}/{kind}/{actor}/{post}");
                let done = db
                    .collection::<Document>("notifications")
                    .delete_one(doc! { "_id": id, "user": user })
                    .await
                    .unwrap();
                assert_eq!(done.deleted_count, 1);
            }
        }
    }

    /// A follow notification for `user` by `actor`, who does not follow them.
    async fn add_follow_notification(&self, user: &str, actor: &str) {
        let id = PostId::at(socialite::domain::now_ms(), 1);
        match self {
            Raw::Embedded(conn) => {
                let sql = "INSERT INTO notifications (user, type, actor, post, id, at)
                           VALUES (?1, 'follow', ?2, x'', ?3, ?4)";
                let at = id.timestamp_ms();
                let id = id.bytes().to_vec();
                conn.execute(sql, rusqlite::params![user, actor, id, at])
                    .unwrap();
            }
            Raw::Mongo(db) => {
                let notification = doc! {
                    "_id": format!("{user}/follow/{actor}/-"),
                    "user": user, "type": "follow", "actor": actor, "post": null,
                    "id": ObjectId::from_bytes(id.bytes()), "at": id.timestamp_ms(), "seq": 0_i64,
                };
                db.collection::<Document>("notifications")
                    .insert_one(notification)
                    .await
                    .unwrap();
            }
        }
    }

    /// Moves `post`'s `field` (`replies_count`, `reposts_count`) up by one.
    async fn bump(&self, post: PostId, field: &str) {
        match self {
            Raw::Embedded(conn) => {
                let sql = format!("UPDATE posts SET {field} = {field} + 1 WHERE id = ?1");
                let sql = sql.as_str();
                let n = conn.execute(sql, [post.bytes().to_vec()]).unwrap();
                assert_eq!(n, 1);
            }
            Raw::Mongo(db) => {
                let done = db
                    .collection::<Document>("content")
                    .update_one(
                        doc! { "_id": ObjectId::from_bytes(post.bytes()) },
                        doc! { "$inc": { field: 1 } },
                    )
                    .await
                    .unwrap();
                assert_eq!(done.modified_count, 1);
            }
        }
    }
}

#[tokio::test]
async fn notifications_reply_counts_and_blocked_authors_are_audited_and_repaired() {
    for kind in kinds("notifications_reply_counts_and_blocked_authors_are_audited_and_repaired") {
        for strategy in [FeedStrategy::Cache, FeedStrategy::SizedBuckets] {
            let label = format!("{kind:?}/{strategy}");
            let (config, _dir) = config(kind, strategy);
            let (store, ann, dan) = social_world(&config).await;
            skip_the_workers_past_it(&store).await;
            let report = audit_of(&store, &config).await;
            assert_clean(&report, &label);
            for kind in [Audited::Notifications, Audited::Replies, Audited::Reposts] {
                assert!(
                    report.checked.get(&kind).is_some_and(|n| *n > 0),
                    "{label}: {report}"
                );
            }
            let raw = Raw::open(&config).await;
            let reply = store
                .content
                .posts_by_author("bob", None, 1)
                .await
                .unwrap()
                .remove(0);
            assert_eq!(reply.reply_to.as_ref().map(|r| r.post), Some(ann.id));

            // A notification lost: named by its key, as missing.
            raw.drop_notification("ann", "reply", "bob", reply.id).await;
            let named = format!("ann's reply notification by bob of {} is missing", reply.id);
            corrupted(
                &store,
                &config,
                Audited::Notifications,
                &named,
                Some(&named),
            )
            .await;
            raw.drop_notification("cat", "mention", "bob", reply.id)
                .await;
            let named = format!(
                "cat's mention notification by bob of {} is missing",
                reply.id
            );
            corrupted(
                &store,
                &config,
                Audited::Notifications,
                &named,
                Some(&named),
            )
            .await;

            // A notification whose cause never stood: named as held.
            raw.add_follow_notification("eve", "ann").await;
            let named = "eve's follow notification by ann is held: its cause does not stand";
            corrupted(&store, &config, Audited::Notifications, named, Some(named)).await;

            // A reply count off by one.
            raw.bump(ann.id, "replies_count").await;
            let named = format!(
                "post {} by ann: replies_count is 2, the sources say 1",
                ann.id
            );
            corrupted(&store, &config, Audited::Replies, &named, Some(&named)).await;

            // A repost count off by one.
            raw.bump(ann.id, "reposts_count").await;
            let named = format!(
                "post {} by ann: reposts_count is 1, the sources say 0",
                ann.id
            );
            corrupted(&store, &config, Audited::Reposts, &named, Some(&named)).await;

            // An entry of dan's in eve's timeline, though dan blocks eve.
            let entry = TimelineEntry {
                id: dan.id,
                author: "dan".into(),
                text: Some(dan.text.clone()),
                name: None,
                reply_to_author: None,
                repost_of: None,
            };
            let eve = ["eve".to_owned()];
            match strategy {
                FeedStrategy::Cache => assert_eq!(
                    store
                        .timelines
                        .cache_push(&eve, &[entry], 50)
                        .await
                        .unwrap(),
                    1
                ),
                _ => store
                    .timelines
                    .sized_push(&eve, &[entry], 50)
                    .await
                    .unwrap(),
            }
            let named = format!(
                "eve's {} holds {} by dan: an author in a block with the reader",
                if strategy == FeedStrategy::Cache {
                    "cache"
                } else {
                    "sized buckets"
                },
                dan.id
            );
            corrupted(&store, &config, Audited::Timelines, &named, Some(&named)).await;

            // A repost stored whose fan-out never ran (a writer killed after the insert
            // and the workers' positions past it): no delivery marker. ann reposts her
            // own post, which notifies no one, so only the marker is wrong.
            let repost = store
                .reposts
                .repost("ann", ann.id, socialite::domain::now_ms())
                .await
                .unwrap()
                .repost;
            let named = format!(
                "repost {} by ann of {} by ann is not marked delivered",
                repost.id, ann.id
            );
            corrupted(&store, &config, Audited::Deliveries, &named, Some(&named)).await;
            let marked = store.deliveries.delivered(&[repost.id]).await.unwrap();
            assert_eq!(marked, vec![repost.id], "{label}: the repair fanned it out");
        }
    }
}

impl Raw {
    /// Takes `post` out of the tag index (embedded: its `post_tags` rows; MongoDB: its
    /// `tags`), and files `other` under `#ghost`, which its text does not have.
    async fn corrupt_tag_index(&self, post: PostId, other: PostId) {
        match self {
            Raw::Embedded(conn) => {
                let n = conn
                    .execute("DELETE FROM post_tags WHERE post = ?1", [&post.bytes()[..]])
                    .unwrap();
                assert_eq!(n, 1);
                conn.execute(
                    "INSERT INTO post_tags (tag, post) VALUES ('ghost', ?1)",
                    [&other.bytes()[..]],
                )
                .unwrap();
            }
            Raw::Mongo(db) => {
                let content = db.collection::<Document>("content");
                let oid = |p: PostId| ObjectId::from_bytes(p.bytes());
                let done = content
                    .update_one(doc! { "_id": oid(post) }, doc! { "$unset": { "tags": "" } })
                    .await
                    .unwrap();
                assert_eq!(done.modified_count, 1);
                let done = content
                    .update_one(
                        doc! { "_id": oid(other) },
                        doc! { "$set": { "tags": ["ghost"] } },
                    )
                    .await
                    .unwrap();
                assert_eq!(done.modified_count, 1);
            }
        }
    }
}

/// The tag index: a post left out of it and a post filed under a tag its text lacks are
/// each named (tag, held, wanted) and mended by `--repair`; the tag timeline serves the
/// mended index.
#[tokio::test]
async fn the_tag_index_is_audited_against_the_posts_text_and_written_again() {
    for kind in kinds("the_tag_index_is_audited_against_the_posts_text_and_written_again") {
        let label = format!("{kind:?}");
        let (config, _dir) = config(kind, FeedStrategy::Cache);
        let (store, ann, _) = social_world(&config).await;
        let state = build_state(&config, store.clone()).await.unwrap();
        let tagged = state.social.post("ann", "about #rust").await.unwrap();
        // The post's derived effects (the author's activity log on MongoDB) are the
        // workers'; skipping past an unprocessed change would leave them undone.
        settle_and_stop(&state).await;
        skip_the_workers_past_it(&store).await;
        let report = audit_of(&store, &config).await;
        assert_clean(&report, &label);
        assert!(
            report
                .checked
                .get(&Audited::TagIndex)
                .is_some_and(|n| *n > 0),
            "{label}: {report}"
        );
        Raw::open(&config)
            .await
            .corrupt_tag_index(tagged.id, ann.id)
            .await;
        let report = audit_of(&store, &config).await;
        assert_eq!(
            report.wrong_kinds(),
            [Audited::TagIndex],
            "{label}: {report}"
        );
        let text = report.to_string();
        for named in [
            "the tag index holds 0 posts under #rust, the posts' text 1",
            "the tag index holds 1 posts under #ghost, the posts' text 0",
        ] {
            assert!(text.contains(named), "{label}: {named}: {report}");
        }
        let done = audit::repair::repair(&config, &store, &report)
            .await
            .unwrap();
        assert!(
            done.iter()
                .any(|d| d.contains("tag index") && d.contains("2 posts changed")),
            "{label}: {done:?}"
        );
        assert_clean(
            &audit_of(&store, &config).await,
            &format!("{label}, repaired"),
        );
        let served = store
            .content
            .tagged_posts("rust", socialite::store::PostRange::Older(None), 10)
            .await
            .unwrap();
        assert_eq!(
            served.iter().map(|p| p.id).collect::<Vec<_>>(),
            vec![tagged.id],
            "{label}"
        );
    }
}
