//! Fanout on read: nothing is materialised; a read merges the newest posts of the reader
//! and everyone the reader follows, through the (author, id) index.

use async_trait::async_trait;

use super::{FeedService, merged_entries, with_reposts};
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
/// page filters them by either author). A cache's build reads everything.
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
    with_reposts(store, entries, &reposts, before, want).await
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
