//! Fanout on read: nothing is materialised; a read merges the newest posts of the reader
//! and everyone the reader follows, through the (author, id) index.

use std::collections::HashMap;

use async_trait::async_trait;

use super::{FeedService, distinct, merged_entries, with_reposts};
use crate::domain::{FeedStrategy, NameStamp, PostId, TimelineEntry, TimelineKind};
use crate::store::{Store, StoreResult};

pub struct FanoutOnRead {
    store: Store,
}

impl FanoutOnRead {
    pub fn new(store: Store) -> Self {
        FanoutOnRead { store }
    }
}

/// The fanout-on-read query, shared with the cache strategy's fallback: the newest
/// posts and reposts by the user and everyone they follow, merged, `want` at most.
pub(crate) async fn read_through(
    store: &Store,
    user: &str,
    before: Option<PostId>,
    want: usize,
) -> StoreResult<Vec<TimelineEntry>> {
    let (posts, reposts) = tokio::try_join!(
        store.content.home_posts(user, before, want),
        store.reposts.home_reposts(user, before, want)
    )?;
    merged_entries(store, &posts, &reposts, before, want).await
}

/// [`read_through`] without the posts of authors hidden from `user` at `now_ms`, left
/// out by the store before it reads them (`ContentStore::shown_home_posts`): what a
/// cache's fallback reads, since the page drops those authors' entries anyway. Post
/// entries carry their text and their author's name as the read found it, so the page
/// looks up no names for them. Reposts are read as [`read_through`] reads them (the
/// page filters them by either author), then stamped with their reposter's name as one
/// lookup finds it (the one the page would make for them), so that a page with them is
/// whole too and may be kept (under the below clock, which every rename moves). A
/// cache's build reads everything.
pub(crate) async fn read_shown(
    store: &Store,
    user: &str,
    before: Option<PostId>,
    want: usize,
    now_ms: i64,
) -> StoreResult<Vec<TimelineEntry>> {
    let (posts, reposts) = tokio::try_join!(
        store.content.shown_home_posts(user, before, want, now_ms),
        store.reposts.home_reposts(user, before, want)
    )?;
    let entries = posts
        .iter()
        .map(|(post, name)| post.entry(true, Some(name)))
        .collect();
    let mut entries = with_reposts(store, entries, &reposts, before, want).await?;
    let unnamed = |e: &TimelineEntry| e.is_repost() && e.name.is_none();
    let reposters: Vec<String> = distinct(
        entries
            .iter()
            .filter(|e| unnamed(e))
            .map(|e| e.author.as_str()),
    )
    .map(str::to_owned)
    .collect();
    if reposters.is_empty() {
        return Ok(entries);
    }
    let stamps: HashMap<String, NameStamp> = store
        .users
        .authors(user, &reposters)
        .await?
        .into_iter()
        .map(|v| (v.id.clone(), v.name_stamp()))
        .collect();
    for entry in entries.iter_mut().filter(|e| unnamed(e)) {
        entry.name = stamps.get(&entry.author).cloned();
    }
    Ok(entries)
}

#[async_trait]
impl FeedService for FanoutOnRead {
    fn strategy(&self) -> FeedStrategy {
        FeedStrategy::FanoutOnRead
    }

    fn kind(&self) -> Option<TimelineKind> {
        None
    }

    /// A read is of posts as they stand, by authors followed as the read finds them.
    fn serves_current(&self) -> bool {
        true
    }

    async fn fan_out(&self, _item: &TimelineEntry, _name: Option<&NameStamp>) -> StoreResult<u64> {
        Ok(0)
    }

    async fn deliver(
        &self,
        _item: &TimelineEntry,
        _name: Option<&NameStamp>,
        _users: &[String],
    ) -> StoreResult<u64> {
        Ok(0)
    }

    async fn retract(&self, _post: PostId) -> StoreResult<()> {
        Ok(())
    }

    async fn followed(
        &self,
        _follower: &str,
        _followee: &str,
        _since_ms: i64,
        _name: Option<&NameStamp>,
    ) -> StoreResult<()> {
        Ok(())
    }

    async fn unfollowed(&self, _follower: &str, _followee: &str) -> StoreResult<()> {
        Ok(())
    }

    async fn entries(
        &self,
        user: &str,
        before: Option<PostId>,
        want: usize,
    ) -> StoreResult<Vec<TimelineEntry>> {
        read_through(&self.store, user, before, want).await
    }
}
