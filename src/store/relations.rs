//! The blocks and mutes port: sources, like follows (see `domain::relations`).
//!
//! A block removes the follows between the two users both ways, atomically with the
//! block on the embedded store (one transaction), and on MongoDB, which has no
//! multi-document transactions, by order: the block is stored before the edges are
//! deleted, and a follow, after inserting its edge, looks for a block and removes its
//! own edge when it finds one (see `GraphStore::follow`), so a racing follow and block
//! end with no edge whichever way they interleave. Each removed edge is recorded in the
//! change feed as the unfollow it is, with its counters and retraction marks.
//!
//! Every block, unblock, mute and unmute moves the cache version of each reader whose
//! pages it changes (both users for a block, the muter for a mute), so no kept page
//! (`service::pages`) outlives it.

use async_trait::async_trait;

use super::StoreResult;
use crate::domain::relations::{Hidden, MuteSettings, Relation};

/// A keyset cursor of a list of blocks or mutes, newest first: `(created_ms, other)`.
pub type RelationCursor = (i64, String);

#[async_trait]
pub trait RelationStore: Send + Sync + 'static {
    /// Stores `user`'s block of `other` and removes the follows between them both
    /// ways. `NotFound` when either user is unknown. Returns whether the block is new
    /// and the edges `(follower, followee)` it removed (none when it stood already).
    async fn block(&self, user: &str, other: &str, now_ms: i64) -> StoreResult<Blocked>;
    /// Returns whether a block was removed. Restores no follow.
    async fn unblock(&self, user: &str, other: &str) -> StoreResult<bool>;
    /// Whether `user` blocks `other` (one direction).
    async fn blocks(&self, user: &str, other: &str) -> StoreResult<bool>;
    /// Of `pairs` `(user, other)`, those where `user` blocks `other`, in one read
    /// (embedded: one indexed lookup per pair in one read transaction; MongoDB: one
    /// find by `_id`, a scatter across `user`'s shards). For bulk checks, not hot paths.
    async fn blocks_among(&self, pairs: &[(String, String)]) -> StoreResult<Vec<(String, String)>>;
    /// Stores `user`'s mute of `other`, replacing the settings of a mute that stands.
    /// `NotFound` when either user is unknown. Returns whether the mute is new.
    async fn mute(
        &self,
        user: &str,
        other: &str,
        settings: MuteSettings,
        now_ms: i64,
    ) -> StoreResult<bool>;
    /// Returns whether a mute was removed (an expired one too).
    async fn unmute(&self, user: &str, other: &str) -> StoreResult<bool>;
    /// `user`'s blocks, newest first, strictly after `after`.
    async fn block_list(
        &self,
        user: &str,
        after: Option<RelationCursor>,
        limit: usize,
    ) -> StoreResult<Vec<Relation>>;
    /// `user`'s mutes standing at `now_ms`, newest first, strictly after `after`.
    async fn mute_list(
        &self,
        user: &str,
        after: Option<RelationCursor>,
        now_ms: i64,
        limit: usize,
    ) -> StoreResult<Vec<Relation>>;
    /// `user`'s blocks strictly newer than `after`, oldest first (the nearest first), at
    /// most `limit`: the page just before a cursor of [`RelationStore::block_list`],
    /// from the same index read the other way (embedded: `blocks_by_time (user,
    /// created_ms, other)`; MongoDB: `{user: 1, created_ms: -1, other: -1}`).
    async fn block_list_newer(
        &self,
        user: &str,
        after: RelationCursor,
        limit: usize,
    ) -> StoreResult<Vec<Relation>>;
    /// `user`'s mutes standing at `now_ms` strictly newer than `after`, oldest first, at
    /// most `limit` (embedded: `mutes_by_time`; MongoDB: `{user: 1, created_ms: -1,
    /// other: -1}`).
    async fn mute_list_newer(
        &self,
        user: &str,
        after: RelationCursor,
        now_ms: i64,
        limit: usize,
    ) -> StoreResult<Vec<Relation>>;
    /// What is hidden from `reader` at `now_ms`, in one indexed read (embedded: one
    /// statement; MongoDB: two finds at once, see `mongo::relations`).
    async fn hidden(&self, reader: &str, now_ms: i64) -> StoreResult<Hidden>;
}

/// The refusal of a follow while a block stands between the two (a 403).
pub fn refused(follower: &str, followee: &str) -> super::StoreError {
    super::StoreError::Forbidden(format!(
        "{follower} cannot follow {followee}: a block stands between them"
    ))
}

/// What a block did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Blocked {
    pub added: bool,
    /// The follows it removed, `(follower, followee)`.
    pub removed: Vec<(String, String)>,
}
