//! Kept pages that read on below the cache: kept while nothing below it changed, and
//! never served past a delete or a rename there, whichever process made it (the below
//! clock, `TimelineStore::below_clock`).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use bytes::Bytes;
use socialite::domain::FeedStrategy;
use socialite::feed::{FeedSettings, TimelinePage};
use socialite::service::Social;
use socialite::store::Store;
use socialite::store::embedded::{EmbeddedStore, Synchronous};

use crate::common::{Kind, fresh_store};
use crate::{catch_up, settings, social};

/// The page as the test compares it: each item's id, author and name, and the cursor.
fn render(page: TimelinePage) -> anyhow::Result<Bytes> {
    let items: Vec<(String, String, String)> = page
        .items
        .iter()
        .map(|i| {
            let id = i.id.to_string();
            (id, i.author.clone(), i.author_display_name.clone())
        })
        .collect();
    let cursor = page.next_cursor.map(|id| id.to_string());
    Ok(serde_json::to_vec(&(items, cursor))?.into())
}

/// Reads the reader's first page of 6 through the kept pages, and asserts it is the page
/// a fresh read past them finds; returns it and whether it was rendered (not served as
/// kept).
async fn read(social: &Social, step: &str) -> (String, bool) {
    let rendered = AtomicUsize::new(0);
    let served = social
        .rendered_timeline("reader", None, 6, |page| {
            rendered.fetch_add(1, Ordering::Relaxed);
            render(page)
        })
        .await
        .unwrap();
    let fresh = render(social.timeline("reader", None, 6).await.unwrap()).unwrap();
    let served = String::from_utf8(served.to_vec()).unwrap();
    let fresh = String::from_utf8(fresh.to_vec()).unwrap();
    assert_eq!(served, fresh, "{step}: a kept page served past a change");
    (served, rendered.load(Ordering::Relaxed) > 0)
}

/// A cache of 4 holds ann's 4 posts; the page of 6 reads bob's older ones below it. The
/// page is kept; a delete of one of bob's posts, and a rename of bob, each made through
/// another process (a second store over the same file, with its own kept pages) and
/// settled by the worker (so nothing is pending that would hold the page back anyway),
/// show on the next read. Without the below clock, the kept page was served with the
/// deleted post and the old name.
#[tokio::test]
async fn a_delete_or_rename_below_the_cache_shows_on_the_next_read() {
    let t = fresh_store(Kind::Embedded).await;
    let settings = FeedSettings {
        cache_size: 4,
        ..settings(FeedStrategy::Cache, true)
    };
    let here = social(&t.store, &settings);
    let file = t.embedded_file().unwrap();
    let other = Store::new(Arc::new(
        EmbeddedStore::open(&file, Synchronous::Normal).unwrap(),
    ));
    let there = social(&other, &settings);
    for id in ["reader", "ann", "bob"] {
        here.create_user(id, id).await.unwrap();
    }
    for author in ["ann", "bob"] {
        here.follow("reader", author).await.unwrap();
    }
    let mut bobs = Vec::new();
    for _ in 0..4 {
        bobs.push(here.post("bob", "old").await.unwrap().id);
    }
    for _ in 0..4 {
        here.post("ann", "new").await.unwrap();
    }
    read(&here, "build").await;
    read(&here, "keep").await;
    let (page, rendered) = read(&here, "kept").await;
    assert!(!rendered, "an unchanged page read below the cache is kept");
    assert!(page.contains(&bobs[3].to_string()), "{page}: bob's newest");

    there.delete_post(bobs[3]).await.unwrap().unwrap();
    catch_up(&t.store, &settings).await;
    let (page, rendered) = read(&here, "deleted").await;
    assert!(rendered, "a delete below the cache: read again");
    assert!(!page.contains(&bobs[3].to_string()), "{page}: deleted");
    let (_, rendered) = read(&here, "deleted, again").await;
    assert!(!rendered, "kept again");

    there.rename("bob", "Bob").await.unwrap();
    catch_up(&t.store, &settings).await;
    let pending = t.store.timelines.pending_renames().await.unwrap();
    assert!(pending.is_empty(), "the rename settled: {pending:?}");
    let (page, rendered) = read(&here, "renamed").await;
    assert!(rendered, "a rename below the cache: read again");
    assert!(page.contains("\"bob\",\"Bob\""), "{page}: the new name");
    let (_, rendered) = read(&here, "renamed, again").await;
    assert!(!rendered, "kept again");
}
