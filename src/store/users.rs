//! The users port: profiles and what a timeline page needs about its authors.

use async_trait::async_trait;

use super::StoreResult;
use crate::domain::{AccountView, AuthorView, Fence, NewUser, User};

/// One entry of the display-name word index: `user`'s name has the word `word`.
/// Entries are ordered by (word, user), bytewise, on both stores.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct NameWord {
    pub word: String,
    pub user: String,
}

/// One user for the counters worker to recount from the sources.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Recount {
    pub user: String,
    /// The highest feed `seq` among the changes that touched the user. The counts are
    /// written only where the user's `counted_seq` is below it, and it becomes the new
    /// `counted_seq`: a recount for older changes never overwrites a newer one.
    pub seq: u64,
    /// Write even when the stored counts already equal the recount, so that
    /// `counted_seq` moves on (a post or a follow touched the user). When only the user
    /// document changed (a counter `$inc`, a rename, or the worker's own write, which
    /// reach the MongoDB feed as user updates), only a correction is written, so the
    /// worker's writes settle after one round instead of feeding themselves.
    pub always: bool,
}

/// A user's counts as the sources held them when read for a [`Recount`], and the
/// version of the user's counters read before them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Counted {
    pub user: String,
    /// The recount's `seq`, to become the user's `counted_seq`.
    pub seq: u64,
    pub posts: u64,
    pub following: u64,
    pub followers: u64,
    /// Every write to the user's counters (a request's increment, a recount) adds one,
    /// so an unchanged version means no counter moved since the read.
    pub version: u64,
}

/// Changes here are appended to the change feed atomically with the change.
#[async_trait]
pub trait UserStore: Send + Sync + 'static {
    /// `Conflict` when the id is taken.
    async fn create_user(&self, user: &NewUser) -> StoreResult<User>;
    async fn user(&self, id: &str) -> StoreResult<Option<User>>;
    /// The existing users among `ids`, in one read (any order; unknown ids left out).
    async fn users(&self, ids: &[String]) -> StoreResult<Vec<User>>;
    /// The existing users among `ids` as accounts show them: each profile with the id of
    /// the user's newest existing post or repost (any order; unknown ids left out). One
    /// batched read, never a lookup per user: embedded, one statement per chunk of ids,
    /// seeking `posts_by_author (author, id)` and `reposts_by_user_id (user, id)` once
    /// per user; MongoDB, the profiles' `$in` and, beside it, one `$sort`/`$group`
    /// (`$first`) aggregation over `{author: 1, _id: -1}` of the posts and one over
    /// `{user: 1, _id: -1}` of the reposts.
    async fn accounts(&self, ids: &[String]) -> StoreResult<Vec<AccountView>>;
    /// The accounts (as [`UserStore::accounts`] reads them) of the users whose id starts
    /// with `prefix` (a valid user id), by id ascending, at most `limit`: one range of the
    /// id index, between `prefix` and [`prefix_end`], each profile read once. Embedded:
    /// one statement, the range with each user's two seeks; MongoDB: the `_id` range
    /// (sorted, limited), then the two aggregations of `accounts` over the ids found.
    async fn accounts_by_prefix(&self, prefix: &str, limit: usize)
    -> StoreResult<Vec<AccountView>>;
    /// Up to `limit` entries of the display-name word index (`domain::name_words` of each
    /// profile's name) whose word starts with `prefix` (a lower-cased word), in
    /// (word, user) order, strictly after `after`: one range of the index, never a scan
    /// of users. Embedded: written with the name, in its transaction. MongoDB: written
    /// right after the name, so an entry may briefly lag its profile (see
    /// `sync_name_words`); callers check each hit against the profile.
    async fn name_word_entries(
        &self,
        prefix: &str,
        after: Option<&NameWord>,
        limit: usize,
    ) -> StoreResult<Vec<NameWord>>;
    /// The index entries held for each of `users`, in no order (the audit's read).
    async fn name_words_of(&self, users: &[String]) -> StoreResult<Vec<NameWord>>;
    /// Brings the index entries of each of `users` in line with their profile as it
    /// stands; answers how many entries were written or removed. Idempotent. Embedded:
    /// one transaction. MongoDB: the words of the name as read, stamped with the
    /// profile's version, upserted, then the user's other entries older than it removed,
    /// then the version read again and the sync run again if it moved.
    async fn sync_name_words(&self, users: &[String]) -> StoreResult<u64>;
    /// Every user's entries written again from the profiles, every other entry of
    /// theirs removed (on MongoDB whatever its version stamp), and every entry of no
    /// user removed (the counters worker's rebuild, the audit's repair); answers how
    /// many entries were written or removed.
    async fn rebuild_name_words(&self) -> StoreResult<u64>;
    /// `None` when the user is unknown.
    async fn rename_user(&self, id: &str, display_name: &str) -> StoreResult<Option<User>>;
    /// The existing users among `authors`, with their display names and whether `reader`
    /// follows them: everything a timeline page needs about its authors, in one call.
    async fn authors(&self, reader: &str, authors: &[String]) -> StoreResult<Vec<AuthorView>>;
    /// The first half of a recount, reading only: for each of `users` that needs a write
    /// (it exists, its `counted_seq` is below the recount's `seq`, and unless `always`
    /// a stored count differs from the sources), its counters' version, then a count of
    /// its follow edges and posts as they exist now. The version is read no later than
    /// the sources, so a write whose counter moved after the read is not in the counts.
    async fn count_sources(&self, users: &[Recount]) -> StoreResult<Vec<Counted>>;
    /// The second half: sets each user's `followers_count`, `following_count`,
    /// `posts_count` and `counted_seq` to `counted`, and moves its version on, only
    /// where the version is still the one read: a counter moved since the read is never
    /// overwritten by a count that predates its write. Returns the users so refused;
    /// each is counted again by a retry or by the change that moved its counter. Writes
    /// nothing to the embedded change feed.
    async fn write_counts(&self, counted: &[Counted]) -> StoreResult<Vec<String>>;
    /// Recounts every user (the counters worker's rebuild after history was lost), each
    /// write conditional on the user's counters not having moved since they were read
    /// (embedded: one transaction, fenced by the lease); then every post's
    /// `replies_count` from the posts answering it (MongoDB: each write guarded by the
    /// count it replaces). Returns how many users and posts were written.
    async fn recount_all(&self, fence: &Fence) -> StoreResult<u64>;
}

/// The least id above every id starting with `prefix` (a valid user id, so ASCII
/// letters, digits and `_`): `prefix` with its last byte moved on by one. Ids compare
/// bytewise on both stores.
pub fn prefix_end(prefix: &str) -> String {
    let mut end = prefix.as_bytes().to_vec();
    if let Some(last) = end.last_mut() {
        *last += 1;
    }
    String::from_utf8(end).expect("an ASCII id stays ASCII")
}
