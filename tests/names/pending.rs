//! Renames kept pending on the embedded store: a rename is served from its 2xx on, and
//! pages check names against the profiles only until its propagation ends.

use std::sync::Arc;

use crate::common::{Kind, fresh_store, kinds};
use socialite::domain::{FeedStrategy, PostId, TimelineKind};
use socialite::store::Store;

use super::{ann_and_reader, catch_up, stored};

/// A rename is served from its 2xx on, before the timelines worker stamped a single
/// entry. The embedded store keeps the rename pending until the worker has stamped
/// every timeline, and only then stops checking names at read time.
#[tokio::test]
async fn a_rename_is_served_before_its_propagation_and_stays_pending_until_it_ends() {
    for backend in kinds("a_rename_is_served_before_its_propagation") {
        for strategy in [FeedStrategy::Cache, FeedStrategy::Hybrid] {
            let t = fresh_store(backend).await;
            let (feed, social) = ann_and_reader(&t.store, strategy).await;
            let post = social.post("ann", "hello").await.unwrap();
            let old = t.store.users.user("ann").await.unwrap().unwrap();
            for user in ["reader", "ann"] {
                social.timeline(user, None, 5).await.unwrap();
            }
            catch_up(&t.store, &feed).await;
            let renamed = social.rename("ann", "Ann Renamed").await.unwrap();
            let pending = t.store.timelines.pending_renames().await.unwrap();
            let expected = match backend {
                Kind::Embedded => vec![("ann".to_owned(), renamed.version)],
                Kind::Mongo => Vec::new(),
            };
            assert_eq!(pending, expected, "{backend:?} {strategy}");
            for user in ["reader", "ann"] {
                let stored = stored(&t.store, TimelineKind::Cache, user).await;
                assert_eq!(stored[0].name, Some(old.name_stamp()), "{backend:?} {user}");
                let page = social.timeline(user, None, 5).await.unwrap();
                let served: Vec<(PostId, &str)> = page
                    .items
                    .iter()
                    .map(|i| (i.id, i.author_display_name.as_str()))
                    .collect();
                let want = vec![(post.id, "Ann Renamed")];
                assert_eq!(
                    served, want,
                    "{backend:?} {strategy} {user}: before the worker"
                );
            }
            catch_up(&t.store, &feed).await;
            let pending = t.store.timelines.pending_renames().await.unwrap();
            assert_eq!(pending, Vec::new(), "{backend:?} {strategy}: still pending");
            for user in ["reader", "ann"] {
                let stored = stored(&t.store, TimelineKind::Cache, user).await;
                assert_eq!(
                    stored[0].name,
                    Some(renamed.name_stamp()),
                    "{backend:?} {user}"
                );
                let page = social.timeline(user, None, 5).await.unwrap();
                assert_eq!(page.items[0].author_display_name, "Ann Renamed");
            }
        }
    }
}

/// A database written before renames were kept pending may hold a rename whose
/// propagation never ended. Opening it marks that rename pending, so its stale stamps
/// are never served.
#[tokio::test]
async fn opening_an_older_database_marks_its_unpropagated_renames_pending() {
    let t = fresh_store(Kind::Embedded).await;
    let file = t.embedded_file().unwrap();
    let (feed, social) = ann_and_reader(&t.store, FeedStrategy::Cache).await;
    social.post("ann", "hello").await.unwrap();
    social.timeline("reader", None, 5).await.unwrap();
    catch_up(&t.store, &feed).await;
    // As a version-1 binary renamed: no pending mark, and the worker never got to it.
    let conn = rusqlite::Connection::open(&file).unwrap();
    conn.execute_batch(
        "UPDATE users SET display_name = 'Ann Renamed', version = version + 1 WHERE id = 'ann';
         DELETE FROM meta WHERE key = 'pending_renames';
         PRAGMA user_version = 1;",
    )
    .unwrap();
    let page = social.timeline("reader", None, 5).await.unwrap();
    assert_eq!(
        page.items[0].author_display_name, "Ann",
        "unchecked: as stored"
    );

    let reopened = Store::new(Arc::new(
        socialite::store::embedded::EmbeddedStore::open(
            &file,
            socialite::store::embedded::Synchronous::Normal,
        )
        .unwrap(),
    ));
    let pending = reopened.timelines.pending_renames().await.unwrap();
    assert_eq!(pending, vec![("ann".to_owned(), 1)]);
    let social = crate::common::social(reopened, &feed);
    let page = social.timeline("reader", None, 5).await.unwrap();
    assert_eq!(page.items[0].author_display_name, "Ann Renamed");
}
