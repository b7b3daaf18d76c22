//! The conformance suite: the storage port and the timeline semantics, run unchanged
//! against every backend, for every feed strategy, with content embedded and linked.
//!
//! This file holds the shared setups and the timeline model; the tests are by topic:
//! timeline semantics, backfill and the cache in `conformance/timelines.rs`, concurrent
//! writers in `conformance/concurrency.rs`, counters in `conformance/counters.rs`, the
//! change feed in `conformance/changes.rs`, API tokens in `conformance/tokens.rs`, the
//! content port's reads across authors in `conformance/content.rs` and the
//! notifications port's reads both ways in `conformance/notifications.rs`, Mastodon's
//! markers in `conformance/markers.rs`, the account lists read the other way from a
//! cursor in `conformance/lists.rs`, the display-name word index in
//! `conformance/name_words.rs`, the accounts by id prefix and by ids in
//! `conformance/users.rs`, and (real MongoDB only) the account reads' plans in
//! `conformance/account_plans.rs`.

#[path = "conformance/account_plans.rs"]
mod account_plans;
#[path = "conformance/changes.rs"]
mod changes;
mod common;
#[path = "conformance/concurrency.rs"]
mod concurrency;
#[path = "conformance/content.rs"]
mod content;
#[path = "conformance/counters.rs"]
mod counters;
#[path = "conformance/lists.rs"]
mod lists;
#[path = "conformance/markers.rs"]
mod markers;
#[path = "conformance/name_words.rs"]
mod name_words;
#[path = "conformance/notifications.rs"]
mod notifications;
#[path = "conformance/oauth.rs"]
mod oauth;
#[path = "conformance/relations.rs"]
mod relations;
#[path = "conformance/reposts.rs"]
mod reposts;
#[path = "conformance/timelines.rs"]
mod timelines;
#[path = "conformance/tokens.rs"]
mod tokens;
#[path = "conformance/users.rs"]
mod users;

use common::{TestStore, fresh_store, kinds};
use socialite::domain::{FeedStrategy, PostId};
use socialite::feed::FeedSettings;
use socialite::service::Social;

/// Small sizes so that a few posts span many buckets and run past the cache.
fn settings(strategy: FeedStrategy, embed_content: bool) -> FeedSettings {
    FeedSettings {
        strategy,
        cache_size: 4,
        bucket_size: 3,
        bucket_span_ms: 3,
        embed_content,
        backfill_on_follow: 100,
        ..FeedSettings::default()
    }
}

struct Setup {
    label: String,
    social: Social,
    store: TestStore,
}

async fn setups(test: &str) -> Vec<Setup> {
    let mut all = Vec::new();
    for kind in kinds(test) {
        for strategy in FeedStrategy::ALL {
            for embed in [true, false] {
                let store = fresh_store(kind).await;
                let social = crate::common::social(store.store.clone(), &settings(strategy, embed));
                all.push(Setup {
                    label: format!("{kind:?}/{strategy}/embed={embed}"),
                    social,
                    store,
                });
            }
        }
    }
    all
}

async fn users(social: &Social, ids: &[&str]) {
    for id in ids {
        social.create_user(id, id).await.unwrap();
    }
}

/// Every page of the timeline, checking page sizes, cursors and duplicates.
async fn walk(social: &Social, user: &str, limit: usize) -> Vec<(PostId, String, String)> {
    let mut items = Vec::new();
    let mut before = None;
    for _ in 0..1000 {
        let page = social.timeline(user, before, limit).await.unwrap();
        assert!(page.items.len() <= limit);
        for item in &page.items {
            items.push((item.id, item.author.clone(), item.text.clone()));
        }
        match page.next_cursor {
            Some(cursor) => {
                assert_eq!(page.items.len(), limit, "a non-final page is full");
                assert_eq!(cursor, page.items.last().unwrap().id);
                before = Some(cursor);
            }
            None => break,
        }
    }
    let ids: Vec<PostId> = items.iter().map(|i| i.0).collect();
    let mut sorted = ids.clone();
    sorted.sort_by_key(|id| std::cmp::Reverse(*id));
    sorted.dedup();
    assert_eq!(ids, sorted, "newest first, no duplicates");
    items
}

/// What the timeline must be: live posts by the user or their followees, newest first.
struct Model {
    posts: Vec<(PostId, String, String)>,
}

impl Model {
    fn expected(&self, authors: &[&str]) -> Vec<(PostId, String, String)> {
        let mut expected: Vec<_> = self
            .posts
            .iter()
            .filter(|p| authors.contains(&p.1.as_str()))
            .cloned()
            .collect();
        expected.sort_by_key(|p| std::cmp::Reverse(p.0));
        expected
    }

    async fn post(&mut self, social: &Social, author: &str) -> PostId {
        let text = format!("post {} by {author}", self.posts.len());
        let post = social.post(author, &text).await.unwrap();
        self.posts.push((post.id, author.to_owned(), text));
        post.id
    }

    async fn delete(&mut self, social: &Social, id: PostId) {
        assert!(social.delete_post(id).await.unwrap().is_some());
        self.posts.retain(|p| p.0 != id);
    }
}
