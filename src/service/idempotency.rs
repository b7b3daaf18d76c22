//! Posts created under a client's `Idempotency-Key` (toot and Mastodon's apps send one
//! with every status): the same author and key within [`POST_KEY_TTL_MS`] answer the
//! first post and create nothing, whatever the retry's text (as Mastodon does: the key
//! names the first request's result). The check is the store's write
//! (`IdempotencyStore::insert_post_once`), never a read before it.

use super::Social;
use crate::domain::{Post, PostId, now_ms};
use crate::store::{KeyedInsert, PostKey, StoreError, StoreResult};

/// How long a key stands for its post: one hour, as on Mastodon.
pub const POST_KEY_TTL_MS: i64 = 3_600_000;

/// The longest key accepted, in bytes.
const MAX_KEY_BYTES: usize = 256;

/// What a keyed post creation answers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyedPost {
    pub post: Post,
    /// Whether this call stored the post (else the key's first request did).
    pub created: bool,
}

impl Social {
    /// [`Social::post_reply`] under `key`: the first call with (`author`, `key`) within
    /// [`POST_KEY_TTL_MS`] (by the service's clock) stores and delivers the post; every
    /// later one answers that post (`created: false`) and stores nothing, whatever its
    /// text or parent. `Invalid` for an empty key or one over 256 bytes; `NotFound` when
    /// the key's post was deleted since (as a read of it would answer), or as
    /// [`Social::post_reply`].
    pub async fn post_once(
        &self,
        author: &str,
        text: &str,
        in_reply_to: Option<PostId>,
        key: &str,
    ) -> StoreResult<KeyedPost> {
        if key.is_empty() || key.len() > MAX_KEY_BYTES {
            return Err(StoreError::Invalid(format!(
                "an Idempotency-Key has 1 to {MAX_KEY_BYTES} bytes, got {}",
                key.len()
            )));
        }
        let key = PostKey {
            author: author.to_owned(),
            key: key.to_owned(),
            at_ms: self.timelines.now_ms(),
            ttl_ms: POST_KEY_TTL_MS,
        };
        let store = &self.store.idempotency;
        match store
            .insert_post_once(&key, text, in_reply_to, now_ms())
            .await?
        {
            KeyedInsert::Created(inserted) => Ok(KeyedPost {
                post: self.deliver_post(inserted).await?,
                created: true,
            }),
            KeyedInsert::Existing(post) => Ok(KeyedPost {
                post,
                created: false,
            }),
            KeyedInsert::Deleted(id) => Err(StoreError::NotFound(format!(
                "post {id} (created under this Idempotency-Key, and deleted since)"
            ))),
        }
    }
}
