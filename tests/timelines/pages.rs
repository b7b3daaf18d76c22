//! Kept pages (`service::pages`): a rendered page is served again only while its
//! cache's version stands, and every write of a cache's rows moves that version. What a
//! `hybrid` page, which merges celebrities' posts, stands on besides: `kept_merged.rs`.

use std::sync::atomic::{AtomicUsize, Ordering};

use bytes::Bytes;
use socialite::domain::{FeedStrategy, NameStamp, PostId, TimelineEntry, TimelineKind};
use socialite::feed::TimelinePage;
use socialite::service::Social;
use socialite::store::Store;
use socialite::store::timelines::CacheRows;

use crate::common::{Kind, fresh_store, kinds};
use crate::{catch_up, settings, social, users_following};

/// The page as the tests compare it: ids, names and the cursor.
fn render(page: TimelinePage) -> anyhow::Result<Bytes> {
    let items: Vec<(String, String)> = page
        .items
        .iter()
        .map(|i| (i.id.to_string(), i.author_display_name.clone()))
        .collect();
    let cursor = page.next_cursor.map(|id| id.to_string());
    Ok(serde_json::to_vec(&(items, cursor))?.into())
}

/// Reads a page through the kept pages and a fresh one past them, and asserts they are
/// the same; returns the page and whether it was rendered (not served as kept).
pub async fn read(social: &Social, before: Option<PostId>, step: &str) -> (Bytes, bool) {
    let rendered = AtomicUsize::new(0);
    let served = social
        .rendered_timeline("reader", before, 3, |page| {
            rendered.fetch_add(1, Ordering::Relaxed);
            render(page)
        })
        .await
        .unwrap();
    let fresh = render(social.timeline("reader", before, 3).await.unwrap()).unwrap();
    assert_eq!(served, fresh, "{step}: a kept page served past a change");
    (served, rendered.load(Ordering::Relaxed) > 0)
}

/// Every change of what the reader's page shows (a push, a delete, an unfollow, a
/// rename, propagated with no read between or read while pending) is served from the
/// next read on, on every backend; an unchanged page is served as kept on the embedded
/// store, which keeps versions.
#[tokio::test]
async fn a_kept_page_is_served_again_only_while_its_cache_stands() {
    for kind in kinds("a_kept_page_is_served_again_only_while_its_cache_stands") {
        let t = fresh_store(kind).await;
        let settings = settings(FeedStrategy::Cache, true);
        let social = social(&t.store, &settings);
        for id in ["reader", "ann", "bob"] {
            social.create_user(id, id).await.unwrap();
        }
        for author in ["ann", "bob"] {
            social.follow("reader", author).await.unwrap();
        }
        let mut posts = Vec::new(); // a0, b0, a1, b1, ...
        for i in 0..5 {
            posts.push(social.post("ann", &format!("a{i}")).await.unwrap().id);
            posts.push(social.post("bob", &format!("b{i}")).await.unwrap().id);
        }
        let keeps = kind == Kind::Embedded;
        // The first read builds the cache; the next is read from it and kept.
        read(&social, None, "build").await;
        let (mut last, _) = read(&social, None, "first").await;
        let (again, rendered) = read(&social, None, "unchanged").await;
        assert_eq!(again, last);
        assert_eq!(rendered, !keeps, "{kind:?}: an unchanged page is kept");

        let mut changed = |step: &str, page: Bytes| changed(kind, step, &mut last, page);
        let pushed = social.post("ann", "a5").await.unwrap().id;
        changed("a push", read(&social, None, "push").await.0);
        social.delete_post(pushed).await.unwrap();
        changed("a delete", read(&social, None, "delete").await.0);
        social.unfollow("reader", "bob").await.unwrap();
        changed("an unfollow", read(&social, None, "unfollow").await.0);
        // Propagated before any read: the kept page is the only copy of the old names.
        social.rename("ann", "Ann").await.unwrap();
        catch_up(&t.store, &settings).await;
        changed("a rename", read(&social, None, "rename").await.0);
        // Read while pending, then propagated.
        social.rename("ann", "ANN").await.unwrap();
        changed("a rename", read(&social, None, "pending rename").await.0);
        catch_up(&t.store, &settings).await;
        let (page, _) = read(&social, None, "propagated").await;
        assert_eq!(page, last, "{kind:?}: the propagation shows the same names");
        let (_, rendered) = read(&social, None, "settled").await;
        assert_eq!(rendered, !keeps, "{kind:?}: kept again once settled");
        // A page below a cursor is kept apart from the first.
        let (below, _) = read(&social, Some(posts[8]), "below").await;
        assert_ne!(below, last, "{kind:?}");
        let (_, rendered) = read(&social, Some(posts[8]), "below, again").await;
        assert_eq!(rendered, !keeps, "{kind:?}: a page below a cursor is kept");
    }
}

/// Asserts `page` differs from `last` after `step`, and makes it the last.
pub fn changed(kind: Kind, step: &str, last: &mut Bytes, page: Bytes) {
    assert_ne!(page, *last, "{kind:?}: {step} changes the page");
    *last = page;
}

/// An entry of `author`'s post `id`, named as at `version`.
pub fn entry(id: PostId, author: &str, version: u64) -> TimelineEntry {
    TimelineEntry {
        id,
        author: author.into(),
        text: Some("t".into()),
        name: Some(NameStamp {
            display_name: author.into(),
            version,
        }),
        reply_to_author: None,
        repost_of: None,
    }
}

/// The version of the whole of the reader's cache.
async fn version(store: &Store) -> Option<u64> {
    let rows = CacheRows {
        from: PostId::from_bytes([0; 12]),
        below: None,
    };
    let version = store
        .timelines
        .cache_version("reader", rows, false)
        .await
        .unwrap();
    let version = version.map(|v| v.cache);
    let view = store
        .timelines
        .cache_current("reader", None, 1)
        .await
        .unwrap();
    assert_eq!(
        view.and_then(|v| v.version),
        version,
        "read and check agree"
    );
    version
}

/// Each port call that writes a cache's rows moves its version to one it never had;
/// one that writes nothing leaves it. The embedded store keeps versions; MongoDB none.
#[tokio::test]
async fn every_write_of_a_cache_moves_its_version() {
    let t = fresh_store(Kind::Embedded).await;
    let s = &t.store;
    users_following(s, &["reader".into(), "ann".into(), "bob".into()], None).await;
    s.graph.follow("reader", "ann", 0).await.unwrap();
    s.graph.follow("reader", "bob", 0).await.unwrap();
    let mut ids = Vec::new();
    for i in 0..6 {
        let post = s
            .content
            .insert_post("ann", &format!("p{i}"), None, 0)
            .await;
        ids.push(post.unwrap().post.id);
    }
    let reader = ["reader".to_owned()];
    let mut seen: Vec<u64> = Vec::new();
    let mut moved = |step: &str, version: Option<u64>| {
        let version = version.unwrap_or_else(|| panic!("{step}: a version"));
        assert!(
            !seen.contains(&version),
            "{step}: the version moved to a new one"
        );
        seen.push(version);
    };
    assert!(s.timelines.cache_start("reader", 0).await.unwrap());
    assert_eq!(version(s).await, None, "not ready");
    let timelines = &s.timelines;
    timelines
        .cache_fill("reader", &[entry(ids[0], "ann", 0)], 3)
        .await
        .unwrap();
    moved("a fill", version(s).await);
    timelines
        .cache_push(&reader, &[entry(ids[1], "ann", 0)], 3)
        .await
        .unwrap();
    moved("a push", version(s).await);
    let before = version(s).await;
    timelines
        .cache_push(&reader, &[entry(ids[1], "ann", 0)], 3)
        .await
        .unwrap();
    assert_eq!(version(s).await, before, "a push of nothing new");
    let audience = [entry(ids[2], "ann", 0)];
    timelines
        .cache_push_to_audience("ann", &audience, 3)
        .await
        .unwrap();
    moved("a push to the audience", version(s).await);
    timelines
        .cache_backfill("reader", &[entry(ids[3], "ann", 0)], 3, false)
        .await
        .unwrap();
    moved("a backfill that trims", version(s).await);
    let name = NameStamp {
        display_name: "Ann".into(),
        version: 1,
    };
    timelines
        .rename_author(TimelineKind::Cache, &reader, "ann", &name)
        .await
        .unwrap();
    moved("a rename", version(s).await);
    timelines
        .remove_post_entries(TimelineKind::Cache, ids[3])
        .await
        .unwrap();
    moved("a post's removal", version(s).await);
    // A delete whose removal was lost: the settling removes the entry it marked.
    s.content.delete_post(ids[2]).await.unwrap();
    assert_eq!(version(s).await, None, "a removal pending");
    timelines.settle_retractions().await.unwrap();
    moved("a settling of a delete", version(s).await);
    // A push of a post already deleted lands, and marks what it needs: pending, no
    // version, until the settling removes it.
    s.content.delete_post(ids[4]).await.unwrap();
    timelines
        .cache_push(&reader, &[entry(ids[4], "ann", 1)], 3)
        .await
        .unwrap();
    assert_eq!(version(s).await, None, "a removal pending");
    timelines.settle_retractions().await.unwrap();
    moved("a settling", version(s).await);
    // An unfollow whose removal was lost: the settling removes the entries it marked.
    let bob = s
        .content
        .insert_post("bob", "q", None, 0)
        .await
        .unwrap()
        .post
        .id;
    timelines
        .cache_push(&reader, &[entry(bob, "bob", 0)], 3)
        .await
        .unwrap();
    moved("a push", version(s).await);
    s.graph.unfollow("reader", "bob").await.unwrap();
    assert_eq!(version(s).await, None, "a removal pending");
    timelines.settle_retractions().await.unwrap();
    moved("a settling of an unfollow", version(s).await);
    timelines
        .remove_author_entries(TimelineKind::Cache, "reader", "ann")
        .await
        .unwrap();
    moved("an author's removal", version(s).await);
    // Dropped and built again: never an earlier version.
    assert!(s.audit.drop_cache("reader").await.unwrap());
    assert_eq!(version(s).await, None, "no cache");
    assert!(timelines.cache_start("reader", 0).await.unwrap());
    timelines
        .cache_fill("reader", &[entry(ids[5], "ann", 1)], 3)
        .await
        .unwrap();
    moved("a cache built again", version(s).await);
}
