//! A post's `replies_count` and `reposts_count` on MongoDB, and their version.
//!
//! A count moves by `$inc` under its source's claim (a reply's, a repost's: see
//! `claims.rs`), and every write of either count, `$inc` or `$set`, also increments the
//! post's `counter_version` (a post written before it existed has none, which counts as
//! 0), as a user's counters do. A recount from the sources reads the version, counts,
//! and writes only where the version is still the one it read: a move that lands in
//! between is never overwritten by the older count (a lost update), and the recount
//! reads and counts again. So a takeover, a holder back from a stall and the counters
//! worker can all recount the same post, in any order with its moves, and the last
//! write stands on a count that saw every move before it.

use mongodb::bson::doc;

use super::reposts::{REPOSTS_COLL, REPOSTS_COUNT};
use super::threads::REPLIES_COUNT;
use super::{COUNTER_VERSION, MongoStore, db_error, int, oid, version_is};
use crate::domain::ReplyTo;
use crate::store::StoreResult;
use crate::store::claims::Counter;

/// Recounts of one post by a call before it is left to the counters' rebuild.
const RECOUNT_ATTEMPTS: usize = 8;

/// The field of a post document that holds `counter`.
pub(super) fn count_field(counter: Counter) -> &'static str {
    match counter {
        Counter::Replies => REPLIES_COUNT,
        Counter::Reposts => REPOSTS_COUNT,
    }
}

impl MongoStore {
    /// Moves `post`'s `counter` by `delta`, and its version; nothing when the post no
    /// longer exists. The filter carries the shard key (`{author, _id}`).
    pub(super) async fn move_post_count(
        &self,
        counter: Counter,
        post: &ReplyTo,
        delta: i64,
    ) -> StoreResult<()> {
        self.content_coll()
            .update_one(
                doc! { "_id": oid(post.post), "author": &post.author },
                doc! { "$inc": { count_field(counter): delta, COUNTER_VERSION: 1_i64 } },
            )
            .await
            .map_err(db_error)?;
        Ok(())
    }

    /// How many sources of `counter` `post` has now: the posts answering it, or the
    /// reposts standing of it.
    async fn count_sources(&self, counter: Counter, post: &ReplyTo) -> StoreResult<i64> {
        let counted = match counter {
            Counter::Replies => {
                self.content_coll()
                    .count_documents(doc! { "reply_to.post": oid(post.post) })
                    .await
            }
            Counter::Reposts => {
                self.collection(REPOSTS_COLL)
                    .count_documents(doc! { "post": oid(post.post) })
                    .await
            }
        };
        Ok(counted.map_err(db_error)? as i64)
    }

    /// Sets `post`'s `counter` from its sources where its version is still `version`,
    /// moving the version on; returns whether it wrote.
    pub(super) async fn set_post_count(
        &self,
        counter: Counter,
        post: &ReplyTo,
        count: i64,
        version: i64,
    ) -> StoreResult<bool> {
        let filter = doc! {
            "_id": oid(post.post), "author": &post.author, COUNTER_VERSION: version_is(version),
        };
        let written = self
            .content_coll()
            .update_one(
                filter,
                doc! {
                    "$set": { count_field(counter): count },
                    "$inc": { COUNTER_VERSION: 1_i64 },
                },
            )
            .await
            .map_err(db_error)?;
        Ok(written.matched_count > 0)
    }

    /// Sets `post`'s `counter` from its sources: read the version, count, write where
    /// the version is unchanged, again when a move landed in between (see the module's
    /// description). Nothing when the post no longer exists. After a few refusals in a
    /// row (a post whose count moves without pause) it logs and leaves the count to the
    /// counters' rebuild (`audit --repair`).
    pub(super) async fn recount_post_count(
        &self,
        counter: Counter,
        post: &ReplyTo,
    ) -> StoreResult<()> {
        for _ in 0..RECOUNT_ATTEMPTS {
            let found = self
                .content_coll()
                .find_one(doc! { "_id": oid(post.post), "author": &post.author })
                .projection(doc! { COUNTER_VERSION: 1 })
                .await
                .map_err(db_error)?;
            let Some(found) = found else {
                return Ok(());
            };
            let version = int(&found, COUNTER_VERSION);
            let count = self.count_sources(counter, post).await?;
            crate::faults::gate("post_count.counted", &post.author).await;
            if self.set_post_count(counter, post, count, version).await? {
                return Ok(());
            }
        }
        tracing::warn!(
            post = %post.post,
            ?counter,
            "a post's count moved on during every recount; left to the counters' rebuild"
        );
        Ok(())
    }
}
