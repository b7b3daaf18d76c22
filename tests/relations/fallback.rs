//! The read ceiling when pages read on below the cache: the reader's hidden set is kept
//! for such pages too (under the cache version read alone), so a reader whose visible
//! entries fall short of their cache does not read their whole block and mute lists at
//! every page; and the kept set is still never served past a block or a mute.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use async_trait::async_trait;
use socialite::domain::FeedStrategy;
use socialite::domain::clock::{Clock, ManualClock};
use socialite::domain::relations::{Hidden, MuteSettings, Relation};
use socialite::feed::FeedSettings;
use socialite::service::{MuteRequest, Social};
use socialite::store::relations::{Blocked, RelationCursor, RelationStore};
use socialite::store::{Store, StoreResult};

use crate::common::{Kind, fresh_store, kinds};

/// The relations port, counting the reads of whole hidden sets.
struct Counting {
    inner: Arc<dyn RelationStore>,
    hidden: AtomicUsize,
}

#[async_trait]
impl RelationStore for Counting {
    async fn block(&self, user: &str, other: &str, now_ms: i64) -> StoreResult<Blocked> {
        self.inner.block(user, other, now_ms).await
    }
    async fn unblock(&self, user: &str, other: &str) -> StoreResult<bool> {
        self.inner.unblock(user, other).await
    }
    async fn blocks(&self, user: &str, other: &str) -> StoreResult<bool> {
        self.inner.blocks(user, other).await
    }
    async fn blocks_among(&self, pairs: &[(String, String)]) -> StoreResult<Vec<(String, String)>> {
        self.inner.blocks_among(pairs).await
    }
    async fn mute(
        &self,
        user: &str,
        other: &str,
        settings: MuteSettings,
        now_ms: i64,
    ) -> StoreResult<bool> {
        self.inner.mute(user, other, settings, now_ms).await
    }
    async fn unmute(&self, user: &str, other: &str) -> StoreResult<bool> {
        self.inner.unmute(user, other).await
    }
    async fn block_list(
        &self,
        user: &str,
        after: Option<RelationCursor>,
        limit: usize,
    ) -> StoreResult<Vec<Relation>> {
        self.inner.block_list(user, after, limit).await
    }
    async fn mute_list(
        &self,
        user: &str,
        after: Option<RelationCursor>,
        now_ms: i64,
        limit: usize,
    ) -> StoreResult<Vec<Relation>> {
        self.inner.mute_list(user, after, now_ms, limit).await
    }
    async fn block_list_newer(
        &self,
        user: &str,
        after: RelationCursor,
        limit: usize,
    ) -> StoreResult<Vec<Relation>> {
        self.inner.block_list_newer(user, after, limit).await
    }
    async fn mute_list_newer(
        &self,
        user: &str,
        after: RelationCursor,
        now_ms: i64,
        limit: usize,
    ) -> StoreResult<Vec<Relation>> {
        self.inner.mute_list_newer(user, after, now_ms, limit).await
    }
    async fn hidden(&self, reader: &str, now_ms: i64) -> StoreResult<Hidden> {
        self.hidden.fetch_add(1, Ordering::SeqCst);
        self.inner.hidden(reader, now_ms).await
    }
}

const FOREVER: MuteRequest = MuteRequest {
    notifications: true,
    duration_ms: None,
};

/// The authors of `reader`'s first page of `limit`, as served (through the kept pages:
/// a page that reads below the cache is kept too, and never served past a change of
/// what it hides).
async fn authors(social: &Social, reader: &str, limit: usize) -> Vec<String> {
    let body = social
        .rendered_timeline(reader, None, limit, |page| {
            let authors: Vec<String> = page.items.into_iter().map(|i| i.author).collect();
            Ok(serde_json::to_vec(&authors)?.into())
        })
        .await
        .unwrap();
    serde_json::from_slice(&body).unwrap()
}

/// A cache of 4 holding only a muted followee's posts: every page reads on below it.
/// After the first such page, the pages read no hidden set from the store while nothing
/// changed; a mute or block through another process is obeyed at once all the same.
/// Before, each of those pages read the reader's whole set again.
#[tokio::test]
async fn a_page_below_the_cache_does_not_read_the_hidden_set_again() {
    for strategy in [FeedStrategy::Cache, FeedStrategy::Hybrid] {
        let t = fresh_store(Kind::Embedded).await;
        let counting = Arc::new(Counting {
            inner: t.store.relations.clone(),
            hidden: AtomicUsize::new(0),
        });
        let store = Store {
            relations: counting.clone(),
            ..t.store.clone()
        };
        let settings = FeedSettings {
            strategy,
            inline_fanout_max: u64::MAX,
            cache_size: 4,
            ..FeedSettings::default()
        };
        let one = crate::common::social(store.clone(), &settings);
        let two = crate::common::social(t.store.clone(), &settings);
        for id in ["reader", "bob", "cat", "dan"] {
            one.create_user(id, id).await.unwrap();
        }
        for author in ["bob", "cat", "dan"] {
            one.follow("reader", author).await.unwrap();
        }
        for author in ["cat", "dan"] {
            for _ in 0..2 {
                one.post(author, "hi").await.unwrap();
            }
        }
        for _ in 0..6 {
            one.post("bob", "hi").await.unwrap();
        }
        one.mute("reader", "bob", FOREVER).await.unwrap();
        let step = |s: &str| format!("{strategy:?}: {s}");
        // The first read builds the cache; the second reads the set under its version.
        authors(&one, "reader", 3).await;
        assert_eq!(authors(&one, "reader", 3).await, ["dan", "dan", "cat"]);
        let before = counting.hidden.load(Ordering::SeqCst);
        for limit in [2, 3, 4, 5] {
            let seen = authors(&one, "reader", limit).await;
            assert!(!seen.contains(&"bob".to_owned()), "{}", step("muted"));
            assert_eq!(seen.len(), limit.min(4), "{}: {seen:?}", step("muted"));
        }
        let reads = counting.hidden.load(Ordering::SeqCst) - before;
        assert_eq!(reads, 0, "{}: hidden sets read for 4 pages", step("kept"));
        // Through another process: obeyed from each write's return on.
        two.mute("reader", "dan", FOREVER).await.unwrap();
        assert_eq!(
            authors(&one, "reader", 5).await,
            ["cat", "cat"],
            "{}",
            step("dan")
        );
        two.unmute("reader", "bob").await.unwrap();
        let seen = authors(&one, "reader", 3).await;
        assert_eq!(seen, ["bob", "bob", "bob"], "{}", step("unmuted"));
        two.block("cat", "reader").await.unwrap();
        two.mute("reader", "bob", FOREVER).await.unwrap();
        assert!(
            authors(&one, "reader", 5).await.is_empty(),
            "{}",
            step("blocked")
        );
    }
}

/// The read below a cache (`ContentStore::shown_home_posts`) leaves out the followees
/// hidden at the instant it is given, and only those: a timed mute stops leaving its
/// author out at its expiry; everything else is as `home_posts` reads it. Both stores.
#[tokio::test]
async fn the_read_below_a_cache_leaves_out_the_authors_hidden_then() {
    for kind in kinds("the_read_below_a_cache_leaves_out") {
        let t = fresh_store(kind).await;
        let clock = Arc::new(ManualClock::at(socialite::domain::now_ms()));
        let social = crate::social(&t.store, &crate::settings(FeedStrategy::Cache))
            .with_clock(clock.clone());
        for id in ["reader", "bob", "cat", "eve"] {
            social.create_user(id, id).await.unwrap();
        }
        for author in ["bob", "cat", "eve"] {
            social.follow("reader", author).await.unwrap();
        }
        for author in ["reader", "bob", "cat", "eve"] {
            social.post(author, "hi").await.unwrap();
        }
        let hour = 3_600_000;
        let timed = MuteRequest {
            notifications: true,
            duration_ms: Some(hour),
        };
        social.mute("reader", "bob", FOREVER).await.unwrap();
        social.mute("reader", "cat", timed).await.unwrap();
        let now = clock.now_ms();
        let content = &t.store.content;
        let authors = |posts: Vec<socialite::domain::Post>| {
            let mut authors: Vec<String> = posts.into_iter().map(|p| p.author).collect();
            authors.sort();
            authors
        };
        let shown = |posts: Vec<(socialite::domain::Post, socialite::domain::NameStamp)>| {
            authors(posts.into_iter().map(|(p, _)| p).collect())
        };
        let all = authors(content.home_posts("reader", None, 10).await.unwrap());
        assert_eq!(all, ["bob", "cat", "eve", "reader"], "{kind:?}");
        let muted = content.shown_home_posts("reader", None, 10, now);
        assert_eq!(shown(muted.await.unwrap()), ["eve", "reader"], "{kind:?}");
        let later = content.shown_home_posts("reader", None, 10, now + hour - 1);
        assert_eq!(shown(later.await.unwrap()), ["eve", "reader"], "{kind:?}");
        let expired = content.shown_home_posts("reader", None, 10, now + hour);
        assert_eq!(
            shown(expired.await.unwrap()),
            ["cat", "eve", "reader"],
            "{kind:?}"
        );
    }
}

/// A timed mute of an author whose posts are all below the reader's cache stops hiding
/// them at its expiry, by the injectable clock, in a page that reads below the cache.
#[tokio::test]
async fn a_timed_mute_expires_at_once_below_the_cache() {
    for kind in kinds("a_timed_mute_expires_at_once_below") {
        let t = fresh_store(kind).await;
        let clock = Arc::new(ManualClock::at(socialite::domain::now_ms()));
        let settings = FeedSettings {
            strategy: FeedStrategy::Cache,
            inline_fanout_max: u64::MAX,
            cache_size: 4,
            ..FeedSettings::default()
        };
        let social = crate::common::social(t.store.clone(), &settings).with_clock(clock.clone());
        for id in ["reader", "bob", "cat"] {
            social.create_user(id, id).await.unwrap();
        }
        for author in ["bob", "cat"] {
            social.follow("reader", author).await.unwrap();
        }
        for _ in 0..2 {
            social.post("cat", "hi").await.unwrap();
        }
        for _ in 0..6 {
            social.post("bob", "hi").await.unwrap();
        }
        let hour = 3_600_000;
        let timed = MuteRequest {
            notifications: true,
            duration_ms: Some(hour),
        };
        social.mute("reader", "bob", FOREVER).await.unwrap();
        social.mute("reader", "cat", timed).await.unwrap();
        for limit in [3, 4] {
            assert!(
                authors(&social, "reader", limit).await.is_empty(),
                "{kind:?}"
            );
        }
        clock.advance(hour - 1);
        assert!(authors(&social, "reader", 5).await.is_empty(), "{kind:?}");
        clock.advance(1);
        assert_eq!(
            authors(&social, "reader", 6).await,
            ["cat", "cat"],
            "{kind:?}"
        );
    }
}
