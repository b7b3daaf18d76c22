//! The idempotency port: a post created under a client's `Idempotency-Key` is created
//! once per (author, key) within the key's lifetime; a retry answers the first post.
//!
//! The check is part of the write: a key is a row (embedded: primary key `(author,
//! key)`) or a document (MongoDB: unique `_id {author, key}`) that names the post it
//! stands for, never a read followed by an insert. A crash between steps never loses
//! the post nor makes two: the embedded store claims the key and inserts the post in one
//! transaction; MongoDB claims the key with a post id minted first, then inserts the
//! post under that id (idempotent by the unique `_id`), and a retry that finds a claim
//! whose post is missing, not yet marked done and not deleted since (its delete's
//! tombstone) inserts it. A post deleted before its key was marked done answers
//! `Deleted` on both stores.

use async_trait::async_trait;

use super::{Inserted, StoreResult};
use crate::domain::{Post, PostId};

/// A client's key for one post creation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PostKey {
    pub author: String,
    /// The `Idempotency-Key`, as the client sent it.
    pub key: String,
    /// When this request was made, by the service's clock: a claim made at or before
    /// `at_ms - ttl_ms` has expired and is replaced.
    pub at_ms: i64,
    pub ttl_ms: i64,
}

/// What a keyed insert did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeyedInsert {
    /// This call stored the post (a first request, or a retry that completed the post a
    /// crashed request had claimed): the caller delivers it as any new post.
    Created(Inserted),
    /// The key stands for this post, stored earlier: nothing was created.
    Existing(Post),
    /// The key stands for a post that was deleted since: nothing was created.
    Deleted(PostId),
}

#[async_trait]
pub trait IdempotencyStore: Send + Sync + 'static {
    /// Stores a post as `ContentStore::insert_post` does (`now_ms` dates its id),
    /// unless `key` stands (claimed after `at_ms - ttl_ms`) for an earlier one, which it
    /// answers whatever this call's text: a key is the first request's. `NotFound` as
    /// `insert_post` when the author or the parent is unknown, and then the key is not
    /// kept (embedded: the transaction rolls back; MongoDB: the claim is removed).
    async fn insert_post_once(
        &self,
        key: &PostKey,
        text: &str,
        in_reply_to: Option<PostId>,
        now_ms: i64,
    ) -> StoreResult<KeyedInsert>;
}
