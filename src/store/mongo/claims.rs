//! Claims that tie a counter move to the one call that changes a source document.
//!
//! On MongoDB a follow's edge and its two counters are three documents, so a counter
//! move cannot be atomic with the edge. What must hold is that a profile never shows a
//! count below what acknowledged writes imply. Two calls on the same edge (or post)
//! broke that: a second follow answered "already following" while the first one's
//! increment was still in flight (or lost to a crash), and a second unfollow moved the
//! counters down a second time before finding the edge gone.
//!
//! So the call that inserts an edge, or claims an edge or a post for removal, marks the
//! document `pending: {op, token, at}` until its counters have moved, and only the
//! holder of that mark moves them. Any other call on the same document waits for the
//! mark to go. A mark older than [`TAKEOVER_MS`] belongs to a call that died (or
//! stalled that long): the waiting call takes the document over, finishes the change
//! and recounts the users (and the parent post, see below) from the sources, which
//! covers whatever part of the dead call's counter move did or did not land. A holder
//! that comes back after a takeover finds its token gone and recounts its users and its
//! parent post again (the taker's recount may have come before the holder's move down,
//! so moving back up would leave a count one above its sources). Every recount writes
//! only where the document's `counter_version` is still the one it read (users:
//! `users.rs`; posts: `post_counts.rs`), so it never overwrites a move that landed
//! after its read, and reads and counts again; a user still refused after a few tries
//! is left to the counters worker. A post's recount also waits while another of its
//! sources carries a fresh mark (its move may land after the write) and ignores stale
//! ones; so a holder that held its mark for half the takeover age or more ([`outlived`])
//! recounts the parent after its move even when its mark was still its own, since a
//! recount in the meantime may have counted its source before that move.

use std::time::Duration;

use mongodb::Collection;
use mongodb::bson::{Document, doc};

use async_trait::async_trait;

use super::content::DELETED_POSTS;
use super::reposts::{REPOSTS_COLL, repost_from};
use super::threads::reply_from;
use super::{MongoStore, all, db_error, int, oid};
use crate::domain::{PostId, ReplyTo, now_ms};
use crate::store::claims::{ClaimStore, Claimed, Counter};
use crate::store::{ContentStore, RepostStore, StoreResult};

/// The counters one document stands for: `(user, field)`, each moved by one.
pub(super) type Counters<'a> = [(&'a str, &'static str)];

pub(super) const PENDING: &str = "pending";
/// A mark this old belongs to a call that died: requests finish well within it.
pub(super) const TAKEOVER_MS: i64 = 2_000;
/// How often a waiting call looks at the mark again.
pub(super) const POLL: Duration = Duration::from_millis(10);

/// A fresh mark for `op`, and its token.
pub(super) fn mark(op: &str) -> (Document, i64) {
    let token = rand::random::<i64>();
    (doc! { "op": op, "token": token, "at": now_ms() }, token)
}

/// Whether a holder whose mark was made at `marked_at` held it long enough for another
/// call to find it stale: a recount of the count it moves (`post_counts.rs`) ignores
/// stale marks and may have counted the source before this holder's move, so the
/// holder, even when still holding its mark, recounts after its move. Half the takeover
/// age: a margin for clocks that differ between processes.
pub(super) fn outlived(marked_at: i64) -> bool {
    now_ms() - marked_at >= TAKEOVER_MS / 2
}

/// The filter field that matches the mark `token`.
pub(super) const TOKEN: &str = "pending.token";

/// A document as a waiting call finds it.
pub(super) enum Seen {
    /// It no longer exists.
    Gone,
    /// It exists with no mark.
    Settled,
    /// Its mark is older than [`TAKEOVER_MS`]: the token to take it over with.
    Stale(i64),
}

/// Waits until the document `filter` matches has no fresh mark.
pub(super) async fn wait(coll: &Collection<Document>, filter: &Document) -> StoreResult<Seen> {
    loop {
        let found = coll
            .find_one(filter.clone())
            .projection(doc! { PENDING: 1 })
            .await
            .map_err(db_error)?;
        let Some(found) = found else {
            return Ok(Seen::Gone);
        };
        let Ok(pending) = found.get_document(PENDING) else {
            return Ok(Seen::Settled);
        };
        if now_ms() - int(pending, "at") >= TAKEOVER_MS {
            return Ok(Seen::Stale(int(pending, "token")));
        }
        tokio::time::sleep(POLL).await;
    }
}

/// Removes the mark `token` from the document `filter` matches, if it is still there:
/// whether it was (false: another call took the document over, see `ClaimStore`).
pub(super) async fn settle(
    coll: &Collection<Document>,
    filter: &Document,
    token: i64,
) -> StoreResult<bool> {
    let mut filter = filter.clone();
    filter.insert(TOKEN, token);
    let done = coll
        .update_one(filter, doc! { "$unset": { PENDING: "" } })
        .await
        .map_err(db_error)?;
    Ok(done.matched_count > 0)
}

impl MongoStore {
    /// Moves every one of `counters` by `delta`.
    pub(super) async fn move_counters(
        &self,
        counters: &Counters<'_>,
        delta: i64,
    ) -> StoreResult<()> {
        for (user, field) in counters {
            self.inc_user(user, field, delta).await?;
        }
        Ok(())
    }

    /// Removes the document `filter` matches, moving `counters` down by one, if this
    /// call is the one that removes it; `before` runs first on each path that deletes
    /// (a post's tombstone). The claim's holder moves the counters down before its
    /// delete, and recounts them from the sources if a takeover deleted first; a call
    /// that finds a fresh claim waits for it, and one that finds a stale claim deletes
    /// and recounts. Returns whether this call removed the document.
    ///
    /// `parent`: the post whose count the removed document moves (a reply's parent's
    /// `replies_count`, a repost's original's `reposts_count`), moved and recounted with
    /// `counters`.
    pub(super) async fn remove_claimed<F, Fut>(
        &self,
        coll: &Collection<Document>,
        filter: &Document,
        counters: &Counters<'_>,
        parent: Option<(Counter, &ReplyTo)>,
        before: F,
    ) -> StoreResult<bool>
    where
        F: Fn() -> Fut,
        Fut: Future<Output = StoreResult<()>>,
    {
        let holding = |token: i64| {
            let mut held = filter.clone();
            held.insert(TOKEN, token);
            held
        };
        loop {
            let (pending, token) = mark("remove");
            let marked_at = int(&pending, "at");
            let mut unclaimed = filter.clone();
            unclaimed.insert(PENDING, doc! { "$exists": false });
            let claimed = coll
                .update_one(unclaimed, doc! { "$set": { PENDING: pending } })
                .await
                .map_err(db_error)?;
            if claimed.matched_count > 0 {
                before().await?;
                self.move_counters(counters, -1).await?;
                if let Some((counter, parent)) = parent {
                    self.move_post_count(counter, parent, -1).await?;
                }
                // The gate's key: the first counter's user (a post's author, an edge's
                // follower), else the document's user (a repost's reposter).
                let owner = counters
                    .first()
                    .map(|(user, _)| *user)
                    .or_else(|| filter.get_str("user").ok())
                    .unwrap_or_default();
                crate::faults::gate("claim.moved", owner).await;
                let removed = coll.delete_one(holding(token)).await.map_err(db_error)?;
                if removed.deleted_count == 0 {
                    // Taken over after a stall: the taker deleted and recounted, before
                    // or after this call's move down. Moving back up is right only in
                    // the first case; a recount from the sources (whose write fails on
                    // any move since its read) is right in both, for the users and the
                    // parent post alike.
                    let users: Vec<&str> = counters.iter().map(|(user, _)| *user).collect();
                    self.recount_now(&users).await?;
                    if let Some((counter, parent)) = parent {
                        self.recount_post_count(counter, parent, None).await?;
                    }
                    return Ok(false);
                }
                if let Some((counter, parent)) = parent
                    && outlived(marked_at)
                {
                    self.recount_post_count(counter, parent, None).await?;
                }
                return Ok(true);
            }
            match wait(coll, filter).await? {
                Seen::Gone => return Ok(false),
                Seen::Settled => continue,
                Seen::Stale(token) => {
                    before().await?;
                    let removed = coll.delete_one(holding(token)).await.map_err(db_error)?;
                    if removed.deleted_count > 0 {
                        let users: Vec<&str> = counters.iter().map(|(user, _)| *user).collect();
                        self.recount_now(&users).await?;
                        if let Some((counter, parent)) = parent {
                            self.recount_post_count(counter, parent, None).await?;
                        }
                        return Ok(true);
                    }
                }
            }
        }
    }
}

/// The insert marks a dead writer left (see `crate::store::claims`): each one still
/// carrying its mark is waited for until settled or stale; a stale insert mark is taken
/// over by recounting the count it moves and then removing the mark with its token (one
/// conditional write, so of two settlers only one reports the takeover; a settler that
/// dies between the two leaves the mark, and the next one recounts again); a stale
/// removal mark is finished as a second removal would finish it (`delete_post`,
/// `unrepost`: the dead call's removal was never answered, so completing it is one of its
/// allowed outcomes).
#[async_trait]
impl ClaimStore for MongoStore {
    async fn settle_claims(&self, sources: &[Claimed]) -> StoreResult<u64> {
        let mut taken = 0;
        for counter in [Counter::Replies, Counter::Reposts] {
            let ids: Vec<_> = sources
                .iter()
                .filter(|s| s.counter == counter)
                .map(|s| oid(s.id))
                .collect();
            if ids.is_empty() {
                continue;
            }
            let (coll, owner) = match counter {
                Counter::Replies => (self.content_coll(), "author"),
                Counter::Reposts => (self.collection(REPOSTS_COLL), "user"),
            };
            // One read finds the few still marked; almost always none.
            let marked =
                all(coll.find(doc! { "_id": { "$in": ids }, PENDING: { "$exists": true } }))
                    .await?;
            for found in &marked {
                let who = found.get_str(owner).unwrap_or_default();
                let filter = doc! {
                    "_id": found.get("_id").cloned().unwrap_or_default(),
                    owner: who,
                };
                if self.settle_one(&coll, &filter, who, counter, found).await? {
                    taken += 1;
                }
            }
        }
        Ok(taken)
    }

    /// One read of the posts' tombstones (almost always none), then a delete of each
    /// post a tombstone names, as a second delete of it would (waiting for a fresh claim,
    /// taking a stale one over).
    async fn settle_deleted_posts(&self, posts: &[PostId]) -> StoreResult<u64> {
        if posts.is_empty() {
            return Ok(0);
        }
        let ids: Vec<_> = posts.iter().map(|p| oid(*p)).collect();
        let tombstoned = all(self
            .collection(DELETED_POSTS)
            .find(doc! { "_id": { "$in": ids } })
            .projection(doc! { "_id": 1 }))
        .await?;
        let mut deleted = 0;
        for found in &tombstoned {
            let id = super::post_id(found.get("_id"))?;
            if self.delete_post(id).await?.is_some() {
                tracing::warn!(
                    post = %id,
                    "a deleted post was stored again by a keyed insert that landed after its delete; deleted it again"
                );
                deleted += 1;
            }
        }
        Ok(deleted)
    }
}

impl MongoStore {
    /// Sets the count that the source `found` moves from its sources, never waiting for
    /// `found`'s own mark (stale: this call is taking it over). An error when the recount
    /// was deferred (see `recount_post_count`): the caller leaves the mark, and the
    /// counters worker, retrying its batch, takes it over again.
    async fn recount_source(&self, counter: Counter, found: &Document) -> StoreResult<()> {
        let post = match counter {
            Counter::Replies => match reply_from(found)? {
                Some(parent) => parent,
                None => return Ok(()),
            },
            Counter::Reposts => repost_from(found)?.post,
        };
        if self
            .recount_post_count(counter, &post, found.get("_id"))
            .await?
        {
            return Ok(());
        }
        Err(anyhow::anyhow!("the recount of post {} was deferred", post.post).into())
    }

    /// Settles the mark on one source (see [`ClaimStore::settle_claims`]), the one
    /// `filter` names, owned by `owner` (the key of its fault gate): whether this call
    /// took it over.
    async fn settle_one(
        &self,
        coll: &Collection<Document>,
        filter: &Document,
        owner: &str,
        counter: Counter,
        found: &Document,
    ) -> StoreResult<bool> {
        loop {
            let token = match wait(coll, filter).await? {
                Seen::Gone | Seen::Settled => return Ok(false),
                Seen::Stale(token) => token,
            };
            let mut held = filter.clone();
            held.insert(TOKEN, token);
            let op = coll
                .find_one(held)
                .projection(doc! { PENDING: 1 })
                .await
                .map_err(db_error)?
                .and_then(|d| {
                    d.get_document(PENDING)
                        .ok()
                        .map(|p| p.get_str("op").unwrap_or_default().to_owned())
                });
            match (op.as_deref(), counter) {
                // The mark moved on meanwhile: look again.
                (None, _) => continue,
                (Some("insert"), _) => {
                    // Recount, then remove the mark: a settler that dies between the
                    // two leaves the mark for the next one, which recounts again. (The
                    // other order lost the recount for good: the soak's divergence of
                    // 2026-11-28, a `replies_count` one short.)
                    self.recount_source(counter, found).await?;
                    crate::faults::point("claims.recounted").await;
                    crate::faults::gate("claims.recounted", owner).await;
                    if !settle(coll, filter, token).await? {
                        // Settled by its writer meanwhile, whose move may have landed
                        // after the recount read: count once more from the sources.
                        self.recount_source(counter, found).await?;
                        continue;
                    }
                    tracing::warn!(
                        source = %found.get("_id").map(ToString::to_string).unwrap_or_default(),
                        ?counter,
                        "a writer died between its insert and its count's move; took its claim over and recounted"
                    );
                    return Ok(true);
                }
                (Some(_), Counter::Replies) => {
                    let id = super::post_id(found.get("_id"))?;
                    return Ok(self.delete_post(id).await?.is_some());
                }
                (Some(_), Counter::Reposts) => {
                    let repost = repost_from(found)?;
                    return Ok(self
                        .unrepost(&repost.user, repost.post.post)
                        .await?
                        .is_some());
                }
            }
        }
    }
}
