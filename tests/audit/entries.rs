//! Every field a timeline entry carries is held to its sources: an entry whose embedded
//! text or name stamp was changed in the store is named wrong (it used to pass, since
//! only ids and authors were compared), `--repair` makes it anew, pages serve the
//! post's text and the author's name again, and a second audit is clean.

use mongodb::bson::{Document, doc, oid::ObjectId};
use socialite::app::build_state;
use socialite::config::Config;
use socialite::domain::{FeedStrategy, PostId};
use socialite::store::Store;

use super::common::kinds;
use super::{Audited, Raw, audit_of, config, corrupted, settle_and_stop, world};

/// Which field of an entry a corruption changes.
#[derive(Debug, Clone, Copy)]
enum Field {
    Text,
    Name,
}

impl Raw {
    /// Sets `field` of the entry of `post` in `owner`'s cache or buckets to `value`, in
    /// every table that could hold it; asserts that one did.
    async fn set_entry(&self, owner: &str, post: PostId, field: Field, value: &str) {
        match self {
            Raw::Embedded(conn) => {
                let column = match field {
                    Field::Text => "text",
                    Field::Name => "name",
                };
                let mut changed = 0;
                for table in ["cache_entries", "bucket_entries"] {
                    let sql = format!(
                        "UPDATE {table} SET {column} = ?1 WHERE user = ?2 AND post_id = ?3"
                    );
                    changed += conn
                        .execute(&sql, rusqlite::params![value, owner, &post.bytes()[..]])
                        .unwrap();
                }
                assert_eq!(changed, 1, "{owner}'s entry {post}");
            }
            Raw::Mongo(db) => {
                let key = match field {
                    Field::Text => "c.$.m",
                    Field::Name => "c.$.n",
                };
                let id = ObjectId::from_bytes(post.bytes());
                let mut changed = 0;
                for (coll, owner_key) in [("timeline_cache", "_id"), ("sized_buckets", "u")] {
                    let done = db
                        .collection::<Document>(coll)
                        .update_one(
                            doc! { owner_key: owner, "c._id": id },
                            doc! { "$set": { key: value } },
                        )
                        .await
                        .unwrap();
                    changed += done.modified_count;
                }
                assert_eq!(changed, 1, "{owner}'s entry {post}");
            }
        }
    }
}

/// `bob`'s timeline as a page serves it, `(id, author's name, text)` per item, read by a
/// fresh process state (no kept page), whose reads build his cache when it was dropped.
async fn served(config: &Config, store: &Store) -> Vec<(PostId, String, String)> {
    let state = build_state(config, store.clone()).await.unwrap();
    state.workers.stop().await;
    let page = state.social.timeline("bob", None, 50).await.unwrap();
    page.items
        .into_iter()
        .map(|i| (i.id, i.author_display_name, i.text))
        .collect()
}

#[tokio::test]
async fn a_wrong_text_or_name_in_an_entry_is_named_repaired_and_served_right_again() {
    for kind in kinds("a_wrong_text_or_name_in_an_entry_is_named_repaired_and_served_right_again") {
        // `bob` follows `ann`, who has a single follower: not merged under `hybrid`, so
        // her posts are in bob's cache under every strategy that keeps one.
        for strategy in [
            FeedStrategy::Cache,
            FeedStrategy::Hybrid,
            FeedStrategy::SizedBuckets,
        ] {
            let label = format!("{kind:?}/{strategy}");
            let (config, _dir) = config(kind, strategy);
            let store = world(&config).await;
            let ann = store
                .content
                .posts_by_author("ann", None, 10)
                .await
                .unwrap();
            let right = served(&config, &store).await;
            assert!(
                right.iter().any(|(id, _, _)| *id == ann[0].id),
                "{label}: {right:?}"
            );
            let raw = Raw::open(&config).await;
            for (field, post, value, named) in [
                (
                    Field::Text,
                    ann[0].id,
                    "tampered",
                    r#"carries the text "tampered", the post's is "ann 2 #t0""#,
                ),
                (
                    Field::Name,
                    ann[1].id,
                    "Mallory",
                    r#"carries the name "Mallory", the author's profile says "ann""#,
                ),
            ] {
                let label = format!("{label}: {field:?}");
                raw.set_entry("bob", post, field, value).await;
                let report = audit_of(&store, &config).await;
                assert_eq!(
                    report.wrong_kinds(),
                    [Audited::Timelines],
                    "{label}: {report}"
                );
                let text = report.to_string();
                assert!(
                    text.contains("bob's ") && text.contains(&post.to_string()),
                    "{label}: {report}"
                );
                assert!(text.contains(named), "{label}: {report}");
                // The audit after the repair is clean (`corrupted` asserts it).
                corrupted(&store, &config, Audited::Timelines, &label, None).await;
                assert_eq!(served(&config, &store).await, right, "{label}");
            }
        }
    }
}

/// A stamp may trail its author's profile while the rename is on its way: with the
/// timelines worker not run since the rename, the old names are pending, not wrong; once
/// it has run, nothing is left.
#[tokio::test]
async fn a_name_trailing_a_rename_not_yet_applied_is_pending_not_wrong() {
    for kind in kinds("a_name_trailing_a_rename_not_yet_applied_is_pending_not_wrong") {
        // Buckets' entries are compared alike (see the test above).
        let strategy = FeedStrategy::Cache;
        let label = format!("{kind:?}/{strategy}");
        let (config, _dir) = config(kind, strategy);
        let store = world(&config).await;
        assert!(
            store
                .users
                .rename_user("ann", "Annie")
                .await
                .unwrap()
                .is_some()
        );
        let report = audit_of(&store, &config).await;
        assert!(report.clean(), "{label}: {report}");
        assert!(
            report.pending_count(Audited::Timelines) > 0,
            "{label}: {report}"
        );
        assert!(
            report
                .to_string()
                .contains(r#"carries the name "ann", the author's profile says "Annie""#),
            "{label}: {report}"
        );
        let state = build_state(&config, store.clone()).await.unwrap();
        settle_and_stop(&state).await;
        let report = audit_of(&store, &config).await;
        assert!(report.clean(), "{label}: {report}");
        assert_eq!(
            report.pending_count(Audited::Timelines),
            0,
            "{label}: {report}"
        );
    }
}
