//! The follow graph on MongoDB: one document per edge in `follows`
//! `{_id: "a/b", from: a, to: b, created_at, pending?}` (see `claims`), unique on
//! `{from, to}` and indexed `{to, from}` for the followers' side.
//!
//! One document per pair means the two directions can never disagree: there is no twin
//! to keep in step, so no interleaving of follows and unfollows can leave a "following"
//! edge without its "followers" edge (the layout before this one kept two collections,
//! and a follow racing an unfollow broke them apart). Each counter move is tied to the
//! operation that actually inserted or deleted the edge (the insert's duplicate key, the
//! delete's count), so under any interleaving the counters equal the edges once the
//! calls return; a crash between the edge and its counters is repaired from the change
//! feed.

use async_trait::async_trait;
use futures::TryStreamExt;
use mongodb::Database;
use mongodb::bson::{Document, doc};
use mongodb::options::InsertManyOptions;

use super::claims::{self, Seen};
use super::intents::{self, INTENTS};
use super::{IndexSpec, MongoStore, Side, all, db_error, index, insert_new, int, is_duplicate_key};
use crate::store::{EdgeState, GraphStore, StoreError, StoreResult};

pub(super) const FOLLOWS: &str = "follows";

pub(super) fn indexes() -> Vec<IndexSpec> {
    vec![
        (FOLLOWS, index(doc! { "from": 1, "to": 1 }, true)),
        (FOLLOWS, index(doc! { "to": 1, "from": 1 }, false)),
        // A reader's merged followees (the hybrid strategy's celebrities).
        (FOLLOWS, index(doc! { "from": 1, "merged": 1 }, false)),
    ]
}

/// Copies a graph kept in the earlier two-collection layout (`following`, `followers`)
/// into `follows` once, when `follows` is still empty. Idempotent: a copy interrupted
/// half-way is finished by the next start (duplicates are skipped). The old collections
/// are left for the operator to drop.
pub(super) async fn migrate(db: &Database) -> anyhow::Result<()> {
    let follows = db.collection::<Document>(FOLLOWS);
    let old = db.collection::<Document>("following");
    if follows.find_one(doc! {}).await?.is_some() || old.find_one(doc! {}).await?.is_none() {
        return Ok(());
    }
    let edges: Vec<Document> = old.find(doc! {}).await?.try_collect().await?;
    let copied = edges.len();
    for chunk in edges.chunks(1000) {
        let options = InsertManyOptions::builder().ordered(false).build();
        match follows.insert_many(chunk).with_options(options).await {
            Ok(_) => {}
            Err(error) if is_duplicate_key(&error) => {}
            Err(error) => return Err(error.into()),
        }
    }
    tracing::warn!(
        copied,
        "copied the follow graph from `following` into `follows`; `following` and `followers` are no longer used and can be dropped"
    );
    Ok(())
}

#[async_trait]
impl GraphStore for MongoStore {
    /// The intent, stored before the look for a block, orders this follow against any
    /// block on the pair (see `intents`): a follow refused here never wrote its edge.
    async fn follow(&self, follower: &str, followee: &str, now_ms: i64) -> StoreResult<bool> {
        if !self.exists("users", doc! { "_id": follower }).await? {
            return Err(StoreError::NotFound(format!("user {follower}")));
        }
        let Some(merged) = self.merged(followee).await? else {
            return Err(StoreError::NotFound(format!("user {followee}")));
        };
        let intents = self.collection(INTENTS);
        let intent = intents::declare(&intents, follower, followee).await?;
        let added = self
            .follow_declared(follower, followee, merged, now_ms)
            .await;
        let held = intents::withdraw(&intents, follower, followee, intent).await?;
        let added = added?;
        // A block waited longer than a request lives for this one, took its intent over
        // and may have removed the edges before this one stood: look again.
        if !held && self.blocked_between(follower, followee).await? {
            tracing::warn!(
                follower,
                followee,
                "a follow stalled past its intent's takeover and found a block: its edge is removed and the follow refused"
            );
            self.unfollow(follower, followee).await?;
            return Err(crate::store::relations::refused(follower, followee));
        }
        Ok(added)
    }

    /// The call that claims the edge moves the counters down *before* the edge goes: a
    /// recount (which counts edges) can then never write a count that a decrement still
    /// in flight would take below the edges. A follow moves them up after its insert,
    /// for the same reason. Either way a count is at worst briefly above the truth,
    /// never below an acknowledged write, and the counters worker's recount of the
    /// change settles it. Other calls on the edge wait for the claim (see `claims`).
    async fn unfollow(&self, follower: &str, followee: &str) -> StoreResult<bool> {
        let filter = doc! { "_id": format!("{follower}/{followee}") };
        let counters = [(follower, "following_count"), (followee, "followers_count")];
        self.remove_claimed(
            &self.collection(FOLLOWS),
            &filter,
            &counters,
            None,
            || async { Ok(()) },
        )
        .await
    }

    async fn edge(&self, follower: &str, followee: &str) -> StoreResult<Option<EdgeState>> {
        let key = format!("{follower}/{followee}");
        let found = self
            .collection(FOLLOWS)
            .find_one(doc! { "_id": &key })
            .projection(doc! { "backfilled": 1, "created_at": 1 })
            .await
            .map_err(db_error)?;
        Ok(found.map(|edge| EdgeState {
            created_ms: int(&edge, "created_at"),
            backfilled: edge.get_bool("backfilled").unwrap_or(false),
        }))
    }

    /// An update of the edge reaches the feed as an update, which no worker acts on.
    async fn mark_backfilled(
        &self,
        follower: &str,
        followee: &str,
        created_ms: i64,
    ) -> StoreResult<()> {
        let key = format!("{follower}/{followee}");
        self.collection(FOLLOWS)
            .update_one(
                doc! { "_id": &key, "created_at": created_ms, "backfilled": { "$ne": true } },
                doc! { "$set": { "backfilled": true } },
            )
            .await
            .map_err(db_error)?;
        Ok(())
    }

    async fn unbackfilled(
        &self,
        after: Option<(&str, &str)>,
        limit: usize,
    ) -> StoreResult<Vec<(String, String)>> {
        let mut filter = doc! { "backfilled": { "$ne": true } };
        if let Some((from, to)) = after {
            filter.insert(
                "$or",
                vec![
                    doc! { "from": { "$gt": from } },
                    doc! { "from": from, "to": { "$gt": to } },
                ],
            );
        }
        let docs = all(self
            .collection(FOLLOWS)
            .find(filter)
            .sort(doc! { "from": 1, "to": 1 })
            .limit(limit as i64)
            .projection(doc! { "from": 1, "to": 1 }))
        .await?;
        Ok(docs
            .iter()
            .filter_map(|d| {
                Some((
                    d.get_str("from").ok()?.to_owned(),
                    d.get_str("to").ok()?.to_owned(),
                ))
            })
            .collect())
    }

    async fn celebrity(&self, author: &str) -> StoreResult<bool> {
        let found = self
            .users_coll()
            .find_one(doc! { "_id": author })
            .projection(doc! { "celebrity": 1 })
            .await
            .map_err(db_error)?;
        Ok(found.is_some_and(|u| u.get_bool("celebrity").unwrap_or(false)))
    }

    /// Three writes in the order the port gives; a crash between them leaves the author
    /// merged but not yet a celebrity (posts still fanned out), and the next follow
    /// change reclassifies again.
    async fn reclassify(
        &self,
        author: &str,
        enter_above: u64,
        leave_below: u64,
    ) -> StoreResult<Option<bool>> {
        let found = self
            .users_coll()
            .find_one(doc! { "_id": author })
            .projection(doc! { "followers_count": 1, "celebrity": 1 })
            .await
            .map_err(db_error)?;
        let Some(user) = found else {
            return Ok(None);
        };
        let followers = int(&user, "followers_count").max(0) as u64;
        let celebrity = user.get_bool("celebrity").unwrap_or(false);
        let users = self.users_coll();
        if !celebrity && followers > enter_above {
            users
                .update_one(doc! { "_id": author }, doc! { "$set": { "merged": true } })
                .await
                .map_err(db_error)?;
            self.collection(FOLLOWS)
                .update_many(
                    doc! { "to": author, "merged": { "$ne": true } },
                    doc! { "$set": { "merged": true } },
                )
                .await
                .map_err(db_error)?;
            users
                .update_one(
                    doc! { "_id": author },
                    doc! { "$set": { "celebrity": true } },
                )
                .await
                .map_err(db_error)?;
            return Ok(Some(true));
        }
        if celebrity && followers < leave_below {
            users
                .update_one(
                    doc! { "_id": author },
                    doc! { "$set": { "celebrity": false } },
                )
                .await
                .map_err(db_error)?;
            return Ok(Some(false));
        }
        Ok(None)
    }

    async fn following(
        &self,
        user: &str,
        after: Option<&str>,
        limit: usize,
    ) -> StoreResult<Vec<String>> {
        self.neighbours(Side::Followees, user, after, false, limit)
            .await
    }

    async fn followers(
        &self,
        user: &str,
        after: Option<&str>,
        limit: usize,
    ) -> StoreResult<Vec<String>> {
        self.neighbours(Side::Followers, user, after, false, limit)
            .await
    }

    async fn following_below(
        &self,
        user: &str,
        below: &str,
        limit: usize,
    ) -> StoreResult<Vec<String>> {
        self.neighbours(Side::Followees, user, Some(below), true, limit)
            .await
    }

    async fn followers_below(
        &self,
        user: &str,
        below: &str,
        limit: usize,
    ) -> StoreResult<Vec<String>> {
        self.neighbours(Side::Followers, user, Some(below), true, limit)
            .await
    }
}

impl MongoStore {
    /// The accounts `user` follows through an edge flagged merged (index `{from: 1,
    /// merged: 1}`, on the reader's chunk): whose posts and reposts `hybrid` merges.
    pub(super) async fn merged_followees(&self, user: &str) -> StoreResult<Vec<String>> {
        let edges = all(self
            .collection(FOLLOWS)
            .find(doc! { "from": user, "merged": true })
            .projection(doc! { "to": 1 }))
        .await?;
        Ok(edges
            .iter()
            .filter_map(|edge| edge.get_str("to").ok().map(str::to_owned))
            .collect())
    }

    /// Whether `user` was ever a celebrity (`None`: no such user).
    async fn merged(&self, user: &str) -> StoreResult<Option<bool>> {
        let found = self
            .users_coll()
            .find_one(doc! { "_id": user })
            .projection(doc! { "merged": 1 })
            .await
            .map_err(db_error)?;
        Ok(found.map(|u| u.get_bool("merged").unwrap_or(false)))
    }

    /// The follow under its intent: refused if a block stands, else the edge and its
    /// counters.
    async fn follow_declared(
        &self,
        follower: &str,
        followee: &str,
        merged: bool,
        now_ms: i64,
    ) -> StoreResult<bool> {
        if self.blocked_between(follower, followee).await? {
            return Err(crate::store::relations::refused(follower, followee));
        }
        crate::faults::gate("follow.checked", follower).await;
        // The insert decides whether this call added the follow, and so whether it moves
        // the counters; its mark tells other calls on the edge that they are in flight.
        let key = format!("{follower}/{followee}");
        let (pending, token) = claims::mark("add");
        let counters = [(follower, "following_count"), (followee, "followers_count")];
        let edge = doc! {
            "_id": &key, "from": follower, "to": followee, "created_at": now_ms, "merged": merged,
            claims::PENDING: pending,
        };
        let follows = self.collection(FOLLOWS);
        let filter = doc! { "_id": &key };
        if !insert_new(&follows, edge, &["from", "to"]).await? {
            // Another call made the edge, or is removing it. Answer only once its counter
            // move has landed, so that no profile read after this answer misses it.
            if let Seen::Stale(token) = claims::wait(&follows, &filter).await? {
                self.recount_now(&[follower, followee]).await?;
                claims::settle(&follows, &filter, token).await?;
            }
            return Ok(false);
        }
        // A promotion that marked the followee merged after the read above may have
        // flagged the edges before this one existed: read again, and flag it.
        if !merged && self.merged(followee).await? == Some(true) {
            follows
                .update_one(filter.clone(), doc! { "$set": { "merged": true } })
                .await
                .map_err(db_error)?;
        }
        // Where a test holds a follow between its edge and its counters' move.
        crate::faults::gate("follow.inserted", follower).await;
        self.move_counters(&counters, 1).await?;
        if !claims::settle(&follows, &filter, token).await? {
            // Taken over after a stall (see `claims`): the taker's recount may have
            // counted the edge before this move, which would leave both counts one
            // above it; one more recount, after the move, is exact.
            self.recount_now(&[follower, followee]).await?;
        }
        Ok(true)
    }
}
