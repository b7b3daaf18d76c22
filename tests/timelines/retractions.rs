//! Retractions and the cache read: a deleted post or an unfollowed author is never
//! served from the delete's or the unfollow's 2xx on, however late a racing push lands,
//! on every backend; and on the embedded store, which serves a cache unchecked while no
//! retraction concerning its owner is pending, the pending marks go with their removal.

use socialite::domain::{PostId, TimelineEntry, TimelineKind};
use socialite::store::Store;
use socialite::store::embedded::{EmbeddedStore, Synchronous};

use crate::common::{Kind, fresh_store, kinds, pending_marks};
use crate::users_following;

async fn post(store: &Store, author: &str, text: &str) -> TimelineEntry {
    let id = store
        .content
        .insert_post(author, text, None, 1_700_000_000_000)
        .await
        .unwrap()
        .post
        .id;
    TimelineEntry {
        id,
        author: author.into(),
        text: Some(text.into()),
        name: None,
        reply_to_author: None,
        repost_of: None,
    }
}

/// What `reader`'s cache read serves, newest first.
async fn served(store: &Store, reader: &str) -> Vec<PostId> {
    let view = store.timelines.cache_current(reader, None, 50).await;
    let view = view.unwrap().expect("a cache");
    view.entries.iter().map(|e| e.id).collect()
}

/// The race of a fan-out's audience snapshot, or a build's read, with an unfollow and
/// a delete: the push lands after the removal. Its entry must stay unserved; a follow
/// again makes the author's entries servable again; settling changes nothing served.
#[tokio::test]
async fn a_push_landing_after_its_removal_is_never_served() {
    for kind in kinds("a_push_landing_after_its_removal_is_never_served") {
        let t = fresh_store(kind).await;
        let s = &t.store;
        let people = ["reader", "ann", "bob"].map(String::from);
        users_following(s, &people, None).await;
        for author in ["ann", "bob"] {
            s.graph.follow("reader", author, 0).await.unwrap();
        }
        let p1 = post(s, "ann", "p1").await;
        let q1 = post(s, "bob", "q1").await;
        let r1 = post(s, "reader", "r1").await;
        let p2 = post(s, "ann", "p2").await;
        let reader = ["reader".to_owned()];
        assert!(s.timelines.cache_start("reader", 0).await.unwrap());
        let built = [p1.clone(), q1.clone(), r1.clone()];
        s.timelines.cache_fill("reader", &built, 50).await.unwrap();
        assert_eq!(served(s, "reader").await, [r1.id, q1.id, p1.id], "{kind:?}");

        // The unfollow's 2xx: from here on, nothing of ann's, before and after the
        // removal, and after a push that raced with both.
        s.graph.unfollow("reader", "ann").await.unwrap();
        assert_eq!(served(s, "reader").await, [r1.id, q1.id], "{kind:?}");
        let cache = TimelineKind::Cache;
        s.timelines
            .remove_author_entries(cache, "reader", "ann")
            .await
            .unwrap();
        s.timelines
            .cache_push(&reader, std::slice::from_ref(&p2), 50)
            .await
            .unwrap();
        assert_eq!(
            served(s, "reader").await,
            [r1.id, q1.id],
            "{kind:?}: late push"
        );

        // The same for a delete.
        s.content.delete_post(q1.id).await.unwrap();
        assert_eq!(served(s, "reader").await, [r1.id], "{kind:?}");
        s.timelines.remove_post_entries(cache, q1.id).await.unwrap();
        s.timelines
            .cache_push(&reader, std::slice::from_ref(&q1), 50)
            .await
            .unwrap();
        assert_eq!(served(s, "reader").await, [r1.id], "{kind:?}: late push");

        // Following ann again serves the entry of hers that the cache still holds.
        s.graph.follow("reader", "ann", 0).await.unwrap();
        assert_eq!(served(s, "reader").await, [p2.id, r1.id], "{kind:?}");
        s.timelines.settle_retractions().await.unwrap();
        assert_eq!(
            served(s, "reader").await,
            [p2.id, r1.id],
            "{kind:?}: settled"
        );
        if let Some(file) = t.embedded_file() {
            assert_eq!(pending_marks(&file), (0, 0), "settling leaves no mark");
        }
    }
}

/// The embedded store serves a cache unchecked only while no mark concerns its owner,
/// so every removal must take its mark with it, and a mark must exist only while a
/// cache holds what it hides. (A mark left behind costs every read its checks.)
#[tokio::test]
async fn each_removal_takes_its_pending_mark_with_it() {
    let t = fresh_store(Kind::Embedded).await;
    let (s, file) = (&t.store, t.embedded_file().unwrap());
    let people = ["reader", "ann", "bob", "cat"].map(String::from);
    users_following(s, &people, None).await;
    for author in ["ann", "bob", "cat"] {
        s.graph.follow("reader", author, 0).await.unwrap();
    }
    let p = post(s, "ann", "p").await;
    let q = post(s, "bob", "q").await;
    let c = post(s, "cat", "c").await;
    s.timelines.cache_start("reader", 0).await.unwrap();
    let built = [p.clone(), q.clone()];
    s.timelines.cache_fill("reader", &built, 50).await.unwrap();

    // Nothing cached to hide: no mark.
    s.content.delete_post(c.id).await.unwrap();
    s.graph.unfollow("reader", "cat").await.unwrap();
    assert_eq!(pending_marks(&file), (0, 0), "nothing cached was retracted");

    s.content.delete_post(q.id).await.unwrap();
    s.graph.unfollow("reader", "ann").await.unwrap();
    assert_eq!(
        pending_marks(&file),
        (1, 1),
        "both retractions hide a cached entry"
    );
    let cache = TimelineKind::Cache;
    s.timelines.remove_post_entries(cache, q.id).await.unwrap();
    assert_eq!(pending_marks(&file), (0, 1), "the delete's removal");
    s.timelines
        .remove_author_entries(cache, "reader", "ann")
        .await
        .unwrap();
    assert_eq!(pending_marks(&file), (0, 0), "the unfollow's removal");

    // A push that lands after the removals marks what it brings back; a follow again
    // takes the author's mark away, a settle the post's.
    let reader = ["reader".to_owned()];
    s.timelines.cache_push(&reader, &[p, q], 50).await.unwrap();
    assert_eq!(pending_marks(&file), (1, 1), "a late push is marked");
    s.graph.follow("reader", "ann", 0).await.unwrap();
    assert_eq!(pending_marks(&file), (1, 0), "following again");
    assert_eq!(s.timelines.settle_retractions().await.unwrap(), 1);
    assert_eq!(pending_marks(&file), (0, 0), "settled");
}

/// A database written before the marks existed may hold entries only the per-entry
/// checks hid. Opening it deletes them once, so the unchecked read never serves them.
#[tokio::test]
async fn opening_an_older_database_deletes_the_entries_it_left_unmarked() {
    let t = fresh_store(Kind::Embedded).await;
    let (s, file) = (&t.store, t.embedded_file().unwrap());
    let people = ["reader", "ann", "bob"].map(String::from);
    users_following(s, &people, None).await;
    s.graph.follow("reader", "ann", 0).await.unwrap();
    let kept = post(s, "ann", "kept").await;
    let deleted = post(s, "ann", "deleted").await;
    let unfollowed = post(s, "bob", "not followed").await;
    s.timelines.cache_start("reader", 0).await.unwrap();
    s.timelines
        .cache_fill("reader", std::slice::from_ref(&kept), 50)
        .await
        .unwrap();
    // As the older version left them: stale entries with no mark.
    let conn = rusqlite::Connection::open(&file).unwrap();
    conn.execute_batch("DELETE FROM meta WHERE key = 'retraction_marks'")
        .unwrap();
    conn.execute("DELETE FROM posts WHERE id = ?1", [&deleted.id.bytes()[..]])
        .unwrap();
    for e in [&deleted, &unfollowed] {
        conn.execute(
            "INSERT INTO cache_entries (user, post_id, author, text) VALUES ('reader', ?1, ?2, ?3)",
            rusqlite::params![&e.id.bytes()[..], e.author, e.text],
        )
        .unwrap();
    }
    assert_eq!(pending_marks(&file), (0, 0));
    assert_eq!(
        served(s, "reader").await.len(),
        3,
        "unchecked: served as stored"
    );

    let reopened = Store::new(std::sync::Arc::new(
        EmbeddedStore::open(&file, Synchronous::Normal).unwrap(),
    ));
    assert_eq!(served(&reopened, "reader").await, [kept.id]);
    let cache = reopened.timelines.cache("reader").await.unwrap().unwrap();
    assert_eq!(cache.entries.len(), 1, "deleted, not hidden");
}
