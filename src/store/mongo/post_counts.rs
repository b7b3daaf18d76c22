//! A post's `replies_count` and `reposts_count` on MongoDB, and their version.
//!
//! A count moves by `$inc` under its source's claim (a reply's, a repost's: see
//! `claims.rs`), and every write of either count, `$inc` or `$set`, also increments the
//! post's `counter_version` (a post written before it existed has none, which counts as
//! 0), as a user's counters do. A recount from the sources reads the version, counts,
//! and writes only where the version is still the one it read: a move that lands in
//! between is never overwritten by the older count (a lost update), and the recount
//! reads and counts again.
//!
//! A source under a fresh claim mark (younger than `TAKEOVER_MS`) is one whose writer
//! is between its insert and its `+1`, or between its `-1` and its delete: a count that
//! saw it could be one off once the move or the delete lands after the write, and the
//! version cannot tell. So a recount looks for fresh marks on the post's sources after
//! its version read and before its count (a removal whose `-1` already landed, deleted
//! before the write), and again after its count (an insert counted whose `+1` lands
//! after the write), and while it finds one, waits and starts over. It never waits for
//! the source its caller is taking over (`except`), and it ignores stale marks: their
//! settler takes them over and recounts, and a holder that comes back having held its
//! mark for half the takeover age or more recounts after its own move (`claims.rs`).
//! A recount still refused, or still finding fresh marks, after `MARKS_WAIT_MS` (a mark
//! settles or turns stale within `TAKEOVER_MS`, so only a post answered or reposted
//! without pause gets there) writes nothing, logs, and counts it in
//! `socialite_post_recounts_deferred_total`; the counters worker's takeover then fails
//! its batch, leaving the stale mark for its retry to recount, and the other callers
//! leave the count to the counters' rebuild (`audit --repair`), which recounts a post
//! with fresh marks on its sources the same way. So a takeover, a holder back from a
//! stall and the counters worker can all recount the same post, in any order with its
//! moves, and the last write stands on a count that saw every move before it and no
//! source whose move was still to come.

use std::collections::HashSet;

use mongodb::Collection;
use mongodb::bson::{Bson, Document, doc};

use super::claims::{POLL, TAKEOVER_MS};
use super::reposts::{REPOSTS_COLL, REPOSTS_COUNT};
use super::threads::{REPLIES_COUNT, REPLY_TO};
use super::{COUNTER_VERSION, MongoStore, all, db_error, int, oid, post_id, version_is};
use crate::domain::{PostId, ReplyTo, now_ms};
use crate::store::StoreResult;
use crate::store::claims::Counter;

/// Refused writes of one recount before it gives up (see `recount_post_count`).
const RECOUNT_ATTEMPTS: usize = 8;
/// How long one recount waits for its sources' fresh marks to go: a mark settles or
/// turns stale within [`TAKEOVER_MS`], so only marks made again and again (a post
/// answered or reposted without pause) outlast it.
const MARKS_WAIT_MS: i64 = TAKEOVER_MS + 500;
/// The time a source's mark was made.
const MARKED_AT: &str = "pending.at";

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

    /// Where `counter`'s sources are, and their field naming the post they count toward:
    /// the posts answering it, or the reposts standing of it.
    fn sources_of(&self, counter: Counter) -> (Collection<Document>, &'static str) {
        match counter {
            Counter::Replies => (self.content_coll(), "reply_to.post"),
            Counter::Reposts => (self.collection(REPOSTS_COLL), "post"),
        }
    }

    /// How many sources of `counter` `post` has now.
    async fn count_sources(&self, counter: Counter, post: &ReplyTo) -> StoreResult<i64> {
        let (coll, field) = self.sources_of(counter);
        let counted = coll.count_documents(doc! { field: oid(post.post) }).await;
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

    /// Whether a source of `post`'s `counter` other than `except` carries a fresh claim
    /// mark (younger than [`TAKEOVER_MS`]): a writer between its insert and its `$inc`,
    /// or between its claim of a removal and its delete.
    async fn fresh_mark_on_sources(
        &self,
        counter: Counter,
        post: &ReplyTo,
        except: Option<&Bson>,
    ) -> StoreResult<bool> {
        let (coll, field) = self.sources_of(counter);
        let mut filter = doc! {
            field: oid(post.post), MARKED_AT: { "$gt": now_ms() - TAKEOVER_MS },
        };
        if let Some(except) = except {
            filter.insert("_id", doc! { "$ne": except.clone() });
        }
        let found = coll
            .find_one(filter)
            .projection(doc! { "_id": 1 })
            .await
            .map_err(db_error)?;
        Ok(found.is_some())
    }

    /// Those of `posts` a source of whose `counter` carries a fresh claim mark (see
    /// `fresh_mark_on_sources`): one query.
    pub(super) async fn fresh_marked_among(
        &self,
        counter: Counter,
        posts: &[PostId],
    ) -> StoreResult<HashSet<PostId>> {
        let ids: Vec<_> = posts.iter().map(|id| oid(*id)).collect();
        let (coll, field) = self.sources_of(counter);
        let filter = doc! {
            field: { "$in": ids }, MARKED_AT: { "$gt": now_ms() - TAKEOVER_MS },
        };
        let marked = all(coll.find(filter).projection(doc! { field: 1 })).await?;
        marked
            .iter()
            .map(|source| {
                let parent = match counter {
                    Counter::Replies => source
                        .get_document(REPLY_TO)
                        .ok()
                        .and_then(|r| r.get("post")),
                    Counter::Reposts => source.get("post"),
                };
                post_id(parent)
            })
            .collect()
    }

    /// Sets `post`'s `counter` from its sources: read the version, look for fresh marks,
    /// count, look again, write where the version is unchanged; again when a move landed
    /// in between or a source was marked (see the module's description). `except`: the
    /// source whose stale mark the caller is taking over (never waited for). `true` once
    /// written, or when the post no longer exists; `false` when the count kept moving, or
    /// its sources kept carrying fresh marks, for longer than the recount waits: logged,
    /// counted (`socialite_post_recounts_deferred_total`), nothing written.
    pub(super) async fn recount_post_count(
        &self,
        counter: Counter,
        post: &ReplyTo,
        except: Option<&Bson>,
    ) -> StoreResult<bool> {
        let until = now_ms() + MARKS_WAIT_MS;
        let mut refused = 0;
        loop {
            let found = self
                .content_coll()
                .find_one(doc! { "_id": oid(post.post), "author": &post.author })
                .projection(doc! { COUNTER_VERSION: 1 })
                .await
                .map_err(db_error)?;
            let Some(found) = found else {
                return Ok(true);
            };
            let version = int(&found, COUNTER_VERSION);
            // Before the count: a removal whose `-1` landed before the version read and
            // whose delete lands after the count. After it: an insert counted whose
            // `+1` lands after the write.
            if !self.fresh_mark_on_sources(counter, post, except).await? {
                crate::faults::gate("post_count.looked", &post.author).await;
                let count = self.count_sources(counter, post).await?;
                crate::faults::gate("post_count.counted", &post.author).await;
                if !self.fresh_mark_on_sources(counter, post, except).await? {
                    if self.set_post_count(counter, post, count, version).await? {
                        return Ok(true);
                    }
                    refused += 1;
                    if refused < RECOUNT_ATTEMPTS {
                        continue;
                    }
                    return Ok(deferred(post, counter, "moved on during every recount"));
                }
            }
            if now_ms() >= until {
                return Ok(deferred(post, counter, "carried fresh marks throughout"));
            }
            crate::faults::gate("post_count.marked", &post.author).await;
            tokio::time::sleep(POLL).await;
        }
    }
}

/// Logs and counts a recount that wrote nothing; `false`.
fn deferred(post: &ReplyTo, counter: Counter, why: &str) -> bool {
    metrics::counter!("socialite_post_recounts_deferred_total").increment(1);
    tracing::warn!(post = %post.post, ?counter, "a post's recount deferred: its sources {why}");
    false
}
