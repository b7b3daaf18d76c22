//! Idempotency keys on MongoDB: `post_keys` `{_id: {author, key}, author, post:
//! ObjectId, at: ms, done: bool, expire_at: Date}`, the unique `_id` making one claim per
//! (author, key), and a TTL index on `expire_at` removing claims once they have expired
//! (MongoDB sweeps about once a minute; the claim's `at` decides expiry, not the sweep).
//!
//! A keyed insert claims the key with a post id minted first (one upsert: the check is
//! the write), then inserts the post under that id (idempotent: the posts' `_id` is
//! unique), then marks the claim `done`. A crash between the claim and the insert leaves
//! a claim whose post is missing and not done: the next request with the key inserts the
//! post under the claimed id. A claim whose post is missing stands for a deleted post
//! when it is done, or when the post's delete left its tombstone in `deleted_posts`
//! (written before the post goes, kept 30 days, longer than a key): so a post deleted
//! between its insert and `done` (a crash there, or a request still on its way) is
//! answered `Deleted` to a retry, never inserted again. Whoever inserts under a claimed
//! id looks for that tombstone again after its insert: a delete may have landed between
//! its first look and the insert (the retry read before the first request's insert, the
//! post was then deleted), and the insert just made it stand again; it deletes it again
//! (a second delete change, which the workers retract) and answers `Deleted`. The
//! first look keeps the common case from inserting at all; the second makes every
//! interleaving end with the post deleted.

use async_trait::async_trait;
use mongodb::bson::{DateTime, Document, doc};

use super::content::DELETED_POSTS;
use super::{IndexSpec, MongoStore, db_error, insert_new, int, oid, post_id};
use crate::domain::{Post, PostId};
use crate::store::idempotency::{IdempotencyStore, KeyedInsert, PostKey};
use crate::store::{ContentStore, StoreError, StoreResult};

pub(super) const POST_KEYS: &str = "post_keys";

pub(super) fn indexes() -> Vec<IndexSpec> {
    let ttl = mongodb::IndexModel::builder()
        .keys(doc! { "expire_at": 1 })
        .options(
            mongodb::options::IndexOptions::builder()
                .expire_after(std::time::Duration::ZERO)
                .build(),
        )
        .build();
    vec![(POST_KEYS, ttl)]
}

/// The claim's filter, shard key (`author`) included.
fn claim_filter(key: &PostKey) -> Document {
    doc! { "_id": { "author": &key.author, "key": &key.key }, "author": &key.author }
}

impl MongoStore {
    /// Claims `key` for a post under `fresh`, or answers the claim that stands: `Ok(id)`
    /// is the post id this call must make sure of (`fresh`, or a crashed claim's),
    /// `Err(answer)` the key's answer when its post was stored (or deleted) already.
    async fn claim_key(
        &self,
        key: &PostKey,
        fresh: PostId,
    ) -> StoreResult<Option<Result<PostId, KeyedInsert>>> {
        let coll = self.collection(POST_KEYS);
        let claim = |post: PostId| {
            doc! {
                "post": oid(post),
                "at": key.at_ms,
                "done": false,
                "expire_at": DateTime::from_millis(key.at_ms.saturating_add(key.ttl_ms)),
            }
        };
        let mut new = claim_filter(key);
        new.extend(claim(fresh));
        if insert_new(&coll, new, &["author"]).await? {
            return Ok(Some(Ok(fresh)));
        }
        let Some(found) = coll.find_one(claim_filter(key)).await.map_err(db_error)? else {
            return Ok(None); // Swept in between: claim again.
        };
        let claimed = post_id(found.get("post"))?;
        if int(&found, "at") <= key.at_ms - key.ttl_ms {
            // Expired: replaced only if no other request replaced it first.
            let mut filter = claim_filter(key);
            filter.insert("post", oid(claimed));
            let replaced = coll
                .update_one(filter, doc! { "$set": claim(fresh) })
                .await
                .map_err(db_error)?;
            return Ok((replaced.modified_count == 1).then_some(Ok(fresh)));
        }
        if let Some(post) = self.post(claimed).await? {
            return Ok(Some(Err(KeyedInsert::Existing(post))));
        }
        // Missing: deleted (done, or its delete's tombstone stands; read after the post,
        // so a delete that removed it left its tombstone first), or not inserted yet.
        if found.get_bool("done").unwrap_or(false) || self.was_deleted(claimed).await? {
            return Ok(Some(Err(KeyedInsert::Deleted(claimed))));
        }
        // Claimed by a request that has not stored its post (crashed, or still on its
        // way: then one of the two inserts wins on the post's `_id`).
        Ok(Some(Ok(claimed)))
    }

    /// Whether a delete of post `id` left its tombstone (see `ContentStore::delete_post`:
    /// written before the post is removed).
    async fn was_deleted(&self, id: PostId) -> StoreResult<bool> {
        super::exists(&self.collection(DELETED_POSTS), doc! { "_id": oid(id) }).await
    }

    async fn mark_done(&self, key: &PostKey, post: PostId) -> StoreResult<()> {
        let mut filter = claim_filter(key);
        filter.insert("post", oid(post));
        self.collection(POST_KEYS)
            .update_one(filter, doc! { "$set": { "done": true } })
            .await
            .map_err(db_error)?;
        Ok(())
    }
}

impl MongoStore {
    /// After this call inserted post `id`: whether a delete of it had landed, or has since
    /// (its tombstone stands). Then the insert may have brought a deleted post back, and
    /// it is deleted again, as the client asked: the key answers `Deleted`.
    async fn deleted_meanwhile(&self, key: &PostKey, id: PostId) -> StoreResult<bool> {
        crate::faults::gate("post_key.inserted", &key.author).await;
        if !self.was_deleted(id).await? {
            return Ok(false);
        }
        ContentStore::delete_post(self, id).await?;
        Ok(true)
    }
}

#[async_trait]
impl IdempotencyStore for MongoStore {
    async fn insert_post_once(
        &self,
        key: &PostKey,
        text: &str,
        in_reply_to: Option<PostId>,
        now_ms: i64,
    ) -> StoreResult<KeyedInsert> {
        // `NotFound` before any claim: an unknown author or parent keeps no key.
        let prepared = self.prepare_post(&key.author, in_reply_to).await?;
        for _ in 0..16 {
            let id = match self.claim_key(key, self.ids.next(now_ms)).await? {
                None => continue,
                Some(Err(answer)) => return Ok(answer),
                Some(Ok(id)) => id,
            };
            crate::faults::point("post_key.claimed").await;
            let answer = match self
                .insert_post_as(id, &key.author, text, &prepared)
                .await?
            {
                Some(inserted) if !self.deleted_meanwhile(key, id).await? => {
                    KeyedInsert::Created(inserted)
                }
                Some(_) => KeyedInsert::Deleted(id),
                // Taken: by this post, inserted by a racing request with the key.
                None => match self.post(id).await? {
                    Some(post) if post.author == key.author => KeyedInsert::Existing(post),
                    Some(Post { .. }) => {
                        return Err(StoreError::Backend(anyhow::anyhow!(
                            "post id {id}, claimed by a key, was taken by another post"
                        )));
                    }
                    None => KeyedInsert::Deleted(id),
                },
            };
            self.mark_done(key, id).await?;
            return Ok(answer);
        }
        Err(StoreError::Backend(anyhow::anyhow!(
            "could not claim idempotency key {:?}",
            key.key
        )))
    }
}
