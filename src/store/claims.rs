//! The claims port: what a writer that died between storing a source and moving the
//! count that source moves on another document (a reply its parent's `replies_count`, a
//! repost its original's `reposts_count`) left behind, for the counters worker to settle.
//!
//! The embedded store moves such counts in the source's own transaction, so nothing is
//! ever left and it settles nothing. On MongoDB the count is a separate `$inc`, made
//! under a claim mark on the source document (see `mongo::claims`); a writer killed
//! between its insert and its `$inc` leaves the mark for good, and no later call on that
//! document may ever come. The counters worker, for every reply or repost insert it
//! applies, asks the store to settle it: a mark still fresh is waited for (a request
//! finishes well within [`crate::store::mongo`]'s takeover age), a stale one is taken
//! over (removed, by its token, in one conditional write) and the count recounted from
//! the sources. A writer that was only stalled finds its token gone when it settles,
//! and recounts after its own `$inc` (so the last write of the count is a recount that
//! saw every source and every `$inc` of the two). A removal (a reply's delete, an
//! unrepost) marks its source before it moves the count down and deletes; one killed
//! in between leaves the source standing, marked, with the count one below it. The
//! worker asks the same for every update of a reply or repost (the mark is one), and a
//! stale removal is finished as a second removal would finish it.
//!
//! A keyed post's writer killed after its insert can also leave a post that was deleted
//! standing again (see `settle_deleted_posts`), which the same worker deletes again.

use async_trait::async_trait;

use super::StoreResult;
use crate::domain::PostId;

/// Which count a source moves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Counter {
    /// A reply: its parent's `replies_count`.
    Replies,
    /// A repost: its original's `reposts_count`.
    Reposts,
}

/// A source document whose insert or removal moves a count elsewhere.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Claimed {
    pub counter: Counter,
    /// The reply's post id, or the repost's id.
    pub id: PostId,
    /// Its shard key: the reply's author, or the reposter.
    pub owner: String,
}

#[async_trait]
pub trait ClaimStore: Send + Sync + 'static {
    /// Settles the claims `sources` still carry (see the module's description): waits
    /// for fresh marks, takes a stale insert mark over and recounts what it moves, and
    /// finishes a stale removal as a second removal would. Idempotent. Returns how many
    /// it took over (each one logged).
    async fn settle_claims(&self, sources: &[Claimed]) -> StoreResult<u64>;

    /// Deletes again each of `posts`, just inserted, whose id a delete's tombstone
    /// names: a post deleted, then stored again by a keyed insert that landed after the
    /// delete from a request killed before its second look (MongoDB, see
    /// `mongo::idempotency`). The client's delete stands. Idempotent. Returns how many
    /// it deleted (each one logged). The embedded store keys and inserts a post in one
    /// transaction, so none can be.
    async fn settle_deleted_posts(&self, posts: &[PostId]) -> StoreResult<u64>;
}
