//! Kept pages with reposts: kept under the cache's version and the below clock (read
//! before the reposts and originals a page's repost entries are checked against, see
//! `feed::reposts`), and never served past a change of what those entries show, even
//! one that writes nothing the reader's cache holds, whichever process made it.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use bytes::Bytes;
use socialite::domain::{FeedStrategy, PostId};
use socialite::feed::{FeedSettings, TimelinePage};
use socialite::service::{MuteRequest, Social};
use socialite::store::Store;
use socialite::store::embedded::{EmbeddedStore, Synchronous};

use crate::common::{Kind, TestStore, fresh_store};
use crate::{catch_up, settings, social};

/// The page as the test compares it: each item as `id by author (name)`, with `of
/// original by author (name)` for a repost, and the cursor.
fn render(page: TimelinePage) -> anyhow::Result<Bytes> {
    let items: Vec<String> = page
        .items
        .iter()
        .map(|i| {
            let item = format!("{} by {} ({})", i.id, i.author, i.author_display_name);
            match &i.repost_of {
                None => item,
                Some(of) => format!(
                    "{item} of {} by {} ({})",
                    of.id, of.author, of.author_display_name
                ),
            }
        })
        .collect();
    let cursor = page.next_cursor.map(|id| id.to_string());
    Ok(serde_json::to_vec(&(items, cursor))?.into())
}

/// Reads the reader's first page of `limit` through the kept pages, and asserts it is
/// the page a fresh read past them finds; returns its items and whether it was rendered
/// (not served as kept).
async fn read(social: &Social, limit: usize, step: &str) -> (Vec<String>, bool) {
    let rendered = AtomicUsize::new(0);
    let served = social
        .rendered_timeline("reader", None, limit, |page| {
            rendered.fetch_add(1, Ordering::Relaxed);
            render(page)
        })
        .await
        .unwrap();
    let fresh = render(social.timeline("reader", None, limit).await.unwrap()).unwrap();
    assert_eq!(
        String::from_utf8_lossy(&served),
        String::from_utf8_lossy(&fresh),
        "{step}: a kept page served past a change"
    );
    let (items, _): (Vec<String>, Option<String>) = serde_json::from_slice(&served).unwrap();
    (items, rendered.load(Ordering::Relaxed) > 0)
}

/// This process and a second one over the same file, each with its own kept pages, with
/// `cache_size` 4; `reader`, `ann`, `bob`, `cat` and `dan` exist, and the reader follows
/// `followees`.
async fn two_processes(followees: &[&str]) -> (TestStore, FeedSettings, Social, Social) {
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
    for id in ["reader", "ann", "bob", "cat", "dan"] {
        here.create_user(id, id).await.unwrap();
    }
    for followee in followees {
        here.follow("reader", followee).await.unwrap();
    }
    (t, settings, here, there)
}

fn post(id: PostId, author: &str) -> String {
    format!("{id} by {author} ({author})")
}

fn repost(id: PostId, by: &str, of: PostId, author: &str, name: &str) -> String {
    format!("{id} by {by} ({by}) of {of} by {author} ({name})")
}

/// ann's post (the reader does not follow ann) is reposted by bob, then dan posts 4, and
/// the reader's cache of 4 is built: bob's repost lies below it. cat's later repost of
/// the same post lands in the cache, at the top of the page of 2, which drops it (bob's
/// is the first) and is kept. Each change below is made by the second process and
/// settled by the worker (so nothing pending holds the page back anyway), and each
/// shows on the next read, which is kept again after it:
/// - bob's repost, below the cache, undone: cat's is the first now (the unrepost's
///   below clock; nothing of the reader's cache is written);
/// - ann renamed: the repost shows the original's author's new name (the rename's
///   below clock: the cache holds no entry of ann's);
/// - cat muted, then unmuted: the repost hidden, then shown (the mute's cache version);
/// - the reader follows ann: the original wins at once (the follow's cache version: the
///   follow's backfill writes nothing, ann's post being below the cache).
#[tokio::test]
async fn a_kept_page_with_reposts_shows_an_unrepost_below_the_cache_a_rename_and_a_follow() {
    let (t, settings, here, there) = two_processes(&["bob", "cat", "dan"]).await;
    let original = here.post("ann", "passed on").await.unwrap().id;
    let (first, _) = here.repost("bob", original).await.unwrap();
    let mut dans = Vec::new();
    for n in 0..4 {
        dans.push(here.post("dan", &format!("filler {n}")).await.unwrap().id);
    }
    read(&here, 2, "build").await;
    let (second, _) = here.repost("cat", original).await.unwrap();
    let second = second.repost.id;
    assert!(first.repost.id < dans[0] && dans[3] < second);
    let unshown = [post(dans[3], "dan"), post(dans[2], "dan")];
    let (page, _) = read(&here, 2, "keep").await;
    assert_eq!(page, unshown, "cat's repost is not the first");
    let (_, rendered) = read(&here, 2, "kept").await;
    assert!(!rendered, "a page that examined a repost entry is kept");

    there.unrepost("bob", original).await.unwrap().unwrap();
    catch_up(&t.store, &settings).await;
    let (page, rendered) = read(&here, 2, "unreposted").await;
    assert!(
        rendered,
        "the first repost undone, below the cache: read again"
    );
    let shown = |name: &str| {
        [
            repost(second, "cat", original, "ann", name),
            post(dans[3], "dan"),
        ]
    };
    assert_eq!(page, shown("ann"), "cat's repost is the first now");
    let (_, rendered) = read(&here, 2, "unreposted, again").await;
    assert!(!rendered, "a page showing a repost is kept");

    there.rename("ann", "Ann").await.unwrap();
    catch_up(&t.store, &settings).await;
    let pending = t.store.timelines.pending_renames().await.unwrap();
    assert!(pending.is_empty(), "the rename settled: {pending:?}");
    let (page, rendered) = read(&here, 2, "renamed").await;
    assert!(rendered, "the original's author renamed: read again");
    assert_eq!(page, shown("Ann"), "the new name");
    let (_, rendered) = read(&here, 2, "renamed, again").await;
    assert!(!rendered, "kept again");

    let forever = MuteRequest {
        notifications: true,
        duration_ms: None,
    };
    there.mute("reader", "cat", forever).await.unwrap();
    let (page, rendered) = read(&here, 2, "muted").await;
    assert!(rendered, "the reposter muted: read again");
    assert_eq!(page, unshown, "the repost hidden with its reposter");
    there.unmute("reader", "cat").await.unwrap();
    let (page, _) = read(&here, 2, "unmuted").await;
    assert_eq!(page, shown("Ann"), "shown again");
    let (_, rendered) = read(&here, 2, "unmuted, again").await;
    assert!(!rendered, "kept again");

    there.follow("reader", "ann").await.unwrap();
    catch_up(&t.store, &settings).await;
    let (page, rendered) = read(&here, 2, "followed").await;
    assert!(rendered, "the original's author followed: read again");
    assert_eq!(page, unshown, "the original wins, below the page");
    let (_, rendered) = read(&here, 2, "followed, again").await;
    assert!(!rendered, "kept again");
}

/// bob's repost of ann's post lies below the reader's cache of 4 (dan's 4 posts): the
/// page of 6 reads it below the cache, and is kept. Made by the second process, a block
/// of the reader by ann hides it (the block moves the blocked reader's cache version
/// too), and ann's post deleted (which removes the repost, in a transaction that writes
/// no cache: no cache holds the repost) shows on the next read (the delete's below
/// clock).
#[tokio::test]
async fn a_kept_page_with_a_repost_below_the_cache_shows_its_originals_delete() {
    let (t, settings, here, there) = two_processes(&["bob", "dan"]).await;
    let original = here.post("ann", "passed on").await.unwrap().id;
    let (reposted, _) = here.repost("bob", original).await.unwrap();
    let mut dans = Vec::new();
    for n in 0..4 {
        dans.push(here.post("dan", &format!("filler {n}")).await.unwrap().id);
    }
    let mut expected: Vec<String> = dans.iter().rev().map(|id| post(*id, "dan")).collect();
    read(&here, 6, "build").await;
    let (page, _) = read(&here, 6, "keep").await;
    let (_, rendered) = read(&here, 6, "kept").await;
    assert!(
        !rendered,
        "a page with a repost read below the cache is kept"
    );
    let with = repost(reposted.repost.id, "bob", original, "ann", "ann");
    expected.push(with);
    assert_eq!(page, expected, "the repost, below dan's posts");

    there.block("ann", "reader").await.unwrap();
    let (page, rendered) = read(&here, 6, "blocked").await;
    assert!(
        rendered,
        "the original's author blocks the reader: read again"
    );
    assert_eq!(
        page.as_slice(),
        &expected[..4],
        "hidden with its original's author"
    );
    there.unblock("ann", "reader").await.unwrap();
    let (page, _) = read(&here, 6, "unblocked").await;
    assert_eq!(page, expected, "shown again");
    let (_, rendered) = read(&here, 6, "unblocked, again").await;
    assert!(!rendered, "kept again");

    there.delete_post(original).await.unwrap().unwrap();
    catch_up(&t.store, &settings).await;
    let (page, rendered) = read(&here, 6, "deleted").await;
    assert!(rendered, "the original deleted: read again");
    expected.pop();
    assert_eq!(page, expected, "the repost gone with its original");
    let (_, rendered) = read(&here, 6, "deleted, again").await;
    assert!(!rendered, "kept again");
}
