//! What a page read from a cache stands on (see `TimelineStore::cache_version`), so that
//! a rendered copy of it can be served again while it stands (`service::pages`).

use std::sync::Arc;

use crate::domain::PostId;

/// A page's version, as [`super::TimelineStore::cache_version`] reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CacheVersion {
    /// The cache's rows, and which of the owner's edges are flagged merged: every write
    /// of either moves it to a value it never had ([`super::CacheView::version`] when
    /// the rows are read).
    pub cache: u64,
    /// The cache's rows the page shows: a rename of one of their authors holds the page
    /// back while pending, a rename of anyone else does not.
    pub rows: CacheRows,
    /// What a `hybrid` page merges beside the cache; `None` when not asked.
    pub merged: Option<MergedVersion>,
    /// For a page read on below the cache (by fanout on read), or one that serves from
    /// repost entries: the store's below clock as read before the rows below the cache,
    /// or before the reposts and originals those entries are checked against (see
    /// [`super::TimelineStore::below_clock`]), which every delete of a post, every
    /// removal of a repost and every rename moves. Which authors those rows are by is
    /// covered by [`CacheVersion::cache`] (every change of the owner's edges, blocks and
    /// mutes moves it), and rows inserted later get ids above every page's. `None` for
    /// a page read from the cache alone, without reposts.
    pub below: Option<u64>,
}

/// A page's span of a cache's rows: those at or above `from` and below `below` (every
/// row above `from` without it), which a page reads newest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CacheRows {
    pub from: PostId,
    pub below: Option<PostId>,
}

/// What a `hybrid` page merges: the posts, reposts and names of the followees whose
/// edge is flagged merged. Which followees those are is covered by
/// [`CacheVersion::cache`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MergedVersion {
    /// The store's merge clock, moved with every followee's merge version: while it
    /// stands, so do they all, and one read of it checks them all.
    pub clock: u64,
    /// Each followee whose edge is flagged merged, with their merge version, which
    /// every insert or delete of their posts or reposts and every rename of theirs
    /// moves.
    pub followees: Arc<[(String, u64)]>,
}

impl CacheVersion {
    /// The bytes a kept copy of the version holds, beyond its own size.
    pub fn heap_size(&self) -> usize {
        self.merged.as_ref().map_or(0, |merged| {
            merged
                .followees
                .iter()
                .map(|(id, _)| id.len() + std::mem::size_of::<(String, u64)>())
                .sum()
        })
    }
}
