//! Kept pages and renames: a rename holds back only the kept pages that show its
//! author, and those from its 2xx on, whichever process renamed.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use bytes::Bytes;
use socialite::domain::{FeedStrategy, PostId};
use socialite::feed::TimelinePage;
use socialite::service::Social;
use socialite::store::Store;
use socialite::store::embedded::{EmbeddedStore, Synchronous};

use crate::common::{Kind, fresh_store};
use crate::{catch_up, settings, social};

/// The page as the test compares it: each item's author and name, and the cursor.
fn render(page: TimelinePage) -> anyhow::Result<Bytes> {
    let items: Vec<(String, String)> = page
        .items
        .iter()
        .map(|i| (i.author.clone(), i.author_display_name.clone()))
        .collect();
    let cursor = page.next_cursor.map(|id| id.to_string());
    Ok(serde_json::to_vec(&(items, cursor))?.into())
}

/// Reads the reader's page of 3 below `before` through the kept pages, and asserts it is
/// the page a fresh read past them finds; returns it and whether it was rendered (not
/// served as kept).
async fn read(social: &Social, before: Option<PostId>, step: &str) -> (String, bool) {
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
    let served = String::from_utf8(served.to_vec()).unwrap();
    (served, rendered.load(Ordering::Relaxed) > 0)
}

/// Whether `page` shows `author` and only under `name`.
fn renamed(page: &str, author: &str, name: &str) -> bool {
    page.contains(&format!("[\"{author}\",\"{name}\"]"))
        && !page.contains(&format!("[\"{author}\",\"{author}\"]"))
}

/// The reader follows ann, bob and zed; zed's posts are the oldest, so the first page
/// (3 of ann's and bob's posts) does not show zed and the page below it does. Renames
/// made in another process (a second store over the same file, with its own kept pages
/// and no worker) while pending, that is before any worker stamped a timeline:
/// - of xav, who is in no timeline, and of zed, who is in the reader's cache but not on
///   the first page: the first page stays kept;
/// - of zed: the page below, which shows zed, is never served with the old name;
/// - of ann, on the first page: it is never served with the old name, and kept again
///   once the rename's propagation ended.
#[tokio::test]
async fn a_rename_holds_back_only_the_kept_pages_that_show_its_author() {
    let t = fresh_store(Kind::Embedded).await;
    let settings = settings(FeedStrategy::Cache, true);
    let here = social(&t.store, &settings);
    let file = t.embedded_file().unwrap();
    let other = Store::new(Arc::new(
        EmbeddedStore::open(&file, Synchronous::Normal).unwrap(),
    ));
    let there = social(&other, &settings);
    for id in ["reader", "ann", "bob", "zed", "xav"] {
        here.create_user(id, id).await.unwrap();
    }
    for author in ["ann", "bob", "zed"] {
        here.follow("reader", author).await.unwrap();
    }
    let mut posts = Vec::new();
    for author in ["zed", "zed", "zed", "zed", "ann", "bob", "ann", "bob"] {
        posts.push(here.post(author, "p").await.unwrap().id);
    }
    let below = Some(posts[4]); // zed's posts
    read(&here, None, "build").await;
    for before in [None, below] {
        read(&here, before, "keep").await;
        let (_, rendered) = read(&here, before, "kept").await;
        assert!(!rendered, "{before:?}: an unchanged page is kept");
    }
    let pending = || async { t.store.timelines.pending_renames().await.unwrap().len() };

    there.rename("xav", "Xav").await.unwrap();
    assert_eq!(pending().await, 1, "the rename is pending");
    let (first, rendered) = read(&here, None, "xav renamed").await;
    assert!(
        !rendered,
        "a rename of an author in no timeline must not hold the page back"
    );

    there.rename("zed", "Zed").await.unwrap();
    assert_eq!(pending().await, 2, "both renames are pending");
    let (page, rendered) = read(&here, None, "zed renamed").await;
    assert!(
        !rendered,
        "a rename of an author the page does not show must not hold it back"
    );
    assert_eq!(page, first);
    let (page, rendered) = read(&here, below, "zed renamed, below").await;
    assert!(rendered, "the page showing zed is read again");
    assert!(renamed(&page, "zed", "Zed"), "{page}: the new name");

    there.rename("ann", "Ann").await.unwrap();
    for step in ["ann renamed", "ann renamed, again"] {
        let (page, rendered) = read(&here, None, step).await;
        assert!(rendered, "{step}: not kept while ann's rename is pending");
        assert!(renamed(&page, "ann", "Ann"), "{page}: the new name");
    }
    catch_up(&t.store, &settings).await;
    assert_eq!(pending().await, 0, "the propagation ended");
    read(&here, None, "settled").await;
    let (_, rendered) = read(&here, None, "settled, again").await;
    assert!(!rendered, "kept again once the propagation ended");
}
