//! Reposts on MongoDB: `reposts` `{_id: ObjectId (the repost id), user, post: ObjectId,
//! post_author}`, unique on `{user: 1, post: 1}` (one per reposter and post), indexed
//! `{user: 1, _id: -1}` (a user's reposts) and `{post: 1, _id: 1}` (the reposts of a
//! post). Under the documented shard key `{user: 1, _id: 1}` a user's reposts and the
//! unique index target one shard; the reposts of a post name no reposter, so they go to
//! every shard (a post's delete, a timeline page's seen-once check).
//!
//! The original's `reposts_count` moves by `$inc` under the repost document's claim
//! (`claims.rs`), as a reply moves its parent's `replies_count`: the insert carries a
//! `pending` mark until the count has moved, a second PUT waits for the mark, and the
//! removal is `claims`' protocol with the count in place of the user counters. A
//! deleted repost leaves a tombstone in `deleted_reposts` for the change feed (delete
//! events carry no document), as a deleted post does in `deleted_posts`.

use async_trait::async_trait;
use mongodb::Database;
use mongodb::bson::{Document, doc, oid::ObjectId};

use super::claims::{self, PENDING, Seen};
use super::{IndexSpec, MongoStore, all, db_error, index, insert_new, int, oid, post_id};
use crate::domain::{Change, ChangeOp, NameStamp, PostId, REPOSTS, ReplyTo, Repost};
use crate::store::{Counter, RepostStore, Reposted, StoreError, StoreResult};

mod counts;

pub(super) const REPOSTS_COUNT: &str = "reposts_count";
const DELETED_REPOSTS: &str = "deleted_reposts";
/// The reposts collection (the change-feed name, [`REPOSTS`]).
pub(super) const REPOSTS_COLL: &str = REPOSTS;
/// As long as a deleted post's tombstone (see `content::TOMBSTONE_TTL`).
const TOMBSTONE_TTL: std::time::Duration = std::time::Duration::from_secs(30 * 24 * 3600);

pub(super) fn indexes() -> Vec<IndexSpec> {
    let ttl = mongodb::IndexModel::builder()
        .keys(doc! { "at": 1 })
        .options(
            mongodb::options::IndexOptions::builder()
                .expire_after(TOMBSTONE_TTL)
                .build(),
        )
        .build();
    vec![
        (REPOSTS, index(doc! { "user": 1, "post": 1 }, true)),
        (REPOSTS, index(doc! { "user": 1, "_id": -1 }, false)),
        (REPOSTS, index(doc! { "post": 1, "_id": 1 }, false)),
        (DELETED_REPOSTS, ttl),
    ]
}

/// A repost from its document (or its tombstone).
pub(super) fn repost_from(doc: &Document) -> StoreResult<Repost> {
    Ok(Repost {
        id: post_id(doc.get("_id"))?,
        user: doc.get_str("user").unwrap_or_default().to_owned(),
        post: ReplyTo {
            post: post_id(doc.get("post"))?,
            author: doc.get_str("post_author").unwrap_or_default().to_owned(),
        },
    })
}

/// Fills the document of every repost delete in `changes` from its tombstone.
pub(super) async fn fill_deleted(db: &Database, changes: &mut [Change]) -> StoreResult<()> {
    let deleted = |c: &Change| c.collection == REPOSTS && c.op == ChangeOp::Delete;
    let ids: Vec<ObjectId> = changes
        .iter()
        .filter(|c| deleted(c) && c.document.is_none())
        .filter_map(|c| ObjectId::parse_str(&c.key).ok())
        .collect();
    if ids.is_empty() {
        return Ok(());
    }
    let tombstones = all(db
        .collection::<Document>(DELETED_REPOSTS)
        .find(doc! { "_id": { "$in": ids } }))
    .await?;
    let mut found = std::collections::HashMap::with_capacity(tombstones.len());
    for tombstone in &tombstones {
        let repost = repost_from(tombstone)?;
        let value = serde_json::to_value(&repost).map_err(|e| StoreError::Backend(e.into()))?;
        found.insert(repost.id.to_string(), value);
    }
    for change in changes.iter_mut().filter(|c| deleted(c)) {
        if change.document.is_none() {
            change.document = found.get(&change.key).cloned();
        }
    }
    Ok(())
}

/// The filter of one repost document, with its shard key.
fn filter_of(repost: &Repost) -> Document {
    doc! { "_id": oid(repost.id), "user": &repost.user }
}

impl MongoStore {
    fn reposts_coll(&self) -> mongodb::Collection<Document> {
        self.collection(REPOSTS)
    }

    async fn tombstone_repost(&self, repost: &Repost) -> StoreResult<()> {
        let fields = doc! {
            "user": &repost.user, "post": oid(repost.post.post),
            "post_author": &repost.post.author, "at": mongodb::bson::DateTime::now(),
        };
        self.collection(DELETED_REPOSTS)
            .update_one(doc! { "_id": oid(repost.id) }, doc! { "$set": fields })
            .upsert(true)
            .await
            .map_err(db_error)?;
        Ok(())
    }

    async fn standing_repost(&self, user: &str, post: PostId) -> StoreResult<Option<Repost>> {
        let found = self
            .reposts_coll()
            .find_one(doc! { "user": user, "post": oid(post) })
            .await
            .map_err(db_error)?;
        found.as_ref().map(repost_from).transpose()
    }

    /// Removes `repost` if this call is the one that removes it, moving the count down
    /// (`claims::remove_claimed`'s protocol, with no user counters); returns whether it
    /// did.
    async fn remove_repost(&self, repost: &Repost) -> StoreResult<bool> {
        let parent = Some((Counter::Reposts, &repost.post));
        let tombstone = || self.tombstone_repost(repost);
        self.remove_claimed(
            &self.reposts_coll(),
            &filter_of(repost),
            &[],
            parent,
            tombstone,
        )
        .await
    }
}

#[async_trait]
impl RepostStore for MongoStore {
    async fn repost(&self, user: &str, post: PostId, now_ms: i64) -> StoreResult<Reposted> {
        let Some(found) = self
            .users_coll()
            .find_one(doc! { "_id": user })
            .projection(doc! { "followers_count": 1, "display_name": 1, "version": 1 })
            .await
            .map_err(db_error)?
        else {
            return Err(StoreError::NotFound(format!("user {user}")));
        };
        let reposter_followers = int(&found, "followers_count").max(0) as u64;
        let reposter_name = NameStamp {
            display_name: found.get_str("display_name").unwrap_or(user).to_owned(),
            version: int(&found, "version").max(0) as u64,
        };
        let answer = |repost, created| Reposted {
            repost,
            created,
            reposter_followers,
            reposter_name: reposter_name.clone(),
        };
        for _ in 0..16 {
            if let Some(standing) = self.standing_repost(user, post).await? {
                // Answered only once the call that made it has moved the count.
                match claims::wait(&self.reposts_coll(), &filter_of(&standing)).await? {
                    Seen::Gone => continue,
                    Seen::Settled | Seen::Stale(_) => return Ok(answer(standing, false)),
                }
            }
            let original = self.reply_parent(post).await?;
            let id = self.ids.next(now_ms);
            let repost = Repost {
                id,
                user: user.to_owned(),
                post: original,
            };
            let (pending, token) = claims::mark("insert");
            let marked_at = int(&pending, "at");
            let doc = doc! {
                "_id": oid(id), "user": user, "post": oid(post),
                "post_author": &repost.post.author, PENDING: pending,
            };
            if insert_new(&self.reposts_coll(), doc, &["user"]).await? {
                crate::faults::gate("repost.stored", user).await;
                self.move_post_count(Counter::Reposts, &repost.post, 1)
                    .await?;
                let (coll, filter) = (self.reposts_coll(), filter_of(&repost));
                let settled = claims::settle(&coll, &filter, token).await?;
                if !settled || claims::outlived(marked_at) {
                    // Taken over after a stall (see `store::claims`), or held so long that
                    // a recount took the mark for stale: that recount may have run before
                    // this `$inc`; one more, after it, is exact.
                    self.recount_post_count(Counter::Reposts, &repost.post, None)
                        .await?;
                }
                return Ok(answer(repost, true));
            }
            // A repost of the same post by the same user won the unique index (or,
            // rarely, another process handed out the same id): look again.
        }
        Err(StoreError::Backend(anyhow::anyhow!(
            "could not store the repost of {post} by {user}"
        )))
    }

    async fn unrepost(&self, user: &str, post: PostId) -> StoreResult<Option<Repost>> {
        let Some(repost) = self.standing_repost(user, post).await? else {
            return Ok(None);
        };
        Ok(self.remove_repost(&repost).await?.then_some(repost))
    }

    async fn remove_reposts_of(&self, post: PostId) -> StoreResult<Vec<Repost>> {
        let docs = all(self.reposts_coll().find(doc! { "post": oid(post) })).await?;
        let mut removed = Vec::with_capacity(docs.len());
        for doc in &docs {
            let repost = repost_from(doc)?;
            if self.remove_repost(&repost).await? {
                removed.push(repost);
            }
        }
        Ok(removed)
    }

    async fn reposts_by(
        &self,
        user: &str,
        before: Option<PostId>,
        limit: usize,
    ) -> StoreResult<Vec<Repost>> {
        let mut filter = doc! { "user": user };
        if let Some(before) = before {
            filter.insert("_id", doc! { "$lt": oid(before) });
        }
        let docs = all(self
            .reposts_coll()
            .find(filter)
            .sort(doc! { "_id": -1 })
            .limit(limit as i64))
        .await?;
        docs.iter().map(repost_from).collect()
    }

    /// The followee list in batches, each one query of `{user: 1, _id: -1}`, as
    /// `home_posts` reads posts.
    async fn home_reposts(
        &self,
        user: &str,
        before: Option<PostId>,
        limit: usize,
    ) -> StoreResult<Vec<Repost>> {
        let mut users = self
            .neighbours(super::Side::Followees, user, None, false, usize::MAX >> 2)
            .await?;
        users.push(user.to_owned());
        let mut found = Vec::new();
        for batch in users.chunks(100) {
            let mut filter = doc! { "user": { "$in": batch } };
            if let Some(before) = before {
                filter.insert("_id", doc! { "$lt": oid(before) });
            }
            let docs = all(self
                .reposts_coll()
                .find(filter)
                .sort(doc! { "_id": -1 })
                .limit(limit as i64))
            .await?;
            for doc in &docs {
                found.push(repost_from(doc)?);
            }
        }
        found.sort_unstable_by_key(|r| std::cmp::Reverse(r.id));
        found.dedup_by_key(|r| r.id);
        found.truncate(limit);
        Ok(found)
    }

    /// Two queries, as `merged_posts`: the flagged followees, then their reposts, one
    /// query of `{user: 1, _id: -1}` on those reposters' chunks.
    async fn merged_reposts(
        &self,
        user: &str,
        before: Option<PostId>,
        above: Option<PostId>,
        limit: usize,
    ) -> StoreResult<Vec<Repost>> {
        let reposters = self.merged_followees(user).await?;
        if reposters.is_empty() || limit == 0 {
            return Ok(Vec::new());
        }
        let mut filter = doc! { "user": { "$in": &reposters } };
        super::within_ids(&mut filter, before, above);
        let docs = all(self
            .reposts_coll()
            .find(filter)
            .sort(doc! { "_id": -1 })
            .limit(limit as i64))
        .await?;
        docs.iter().map(repost_from).collect()
    }

    async fn reposts_by_ids(&self, ids: &[PostId]) -> StoreResult<Vec<Repost>> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let ids: Vec<ObjectId> = ids.iter().map(|id| oid(*id)).collect();
        let docs = all(self.reposts_coll().find(doc! { "_id": { "$in": ids } })).await?;
        docs.iter().map(repost_from).collect()
    }

    async fn reposts_of(
        &self,
        posts: &[PostId],
        reposters: &[String],
        below: PostId,
    ) -> StoreResult<Vec<Repost>> {
        if posts.is_empty() || reposters.is_empty() {
            return Ok(Vec::new());
        }
        let posts: Vec<ObjectId> = posts.iter().map(|id| oid(*id)).collect();
        let filter = doc! {
            "post": { "$in": posts },
            "user": { "$in": reposters },
            "_id": { "$lt": oid(below) },
        };
        let docs = all(self.reposts_coll().find(filter)).await?;
        docs.iter().map(repost_from).collect()
    }

    async fn reposts_of_post(
        &self,
        post: PostId,
        before: Option<PostId>,
        limit: usize,
    ) -> StoreResult<Vec<Repost>> {
        let mut filter = doc! { "post": oid(post) };
        if let Some(before) = before {
            filter.insert("_id", doc! { "$lt": oid(before) });
        }
        self.reposts_of_post_page(filter, -1, limit).await
    }

    async fn reposts_of_post_newer(
        &self,
        post: PostId,
        after: PostId,
        limit: usize,
    ) -> StoreResult<Vec<Repost>> {
        let filter = doc! { "post": oid(post), "_id": { "$gt": oid(after) } };
        self.reposts_of_post_page(filter, 1, limit).await
    }
}

impl MongoStore {
    /// A post's reposts by `filter`, on `{post: 1, _id: 1}`, in `order` of ids.
    async fn reposts_of_post_page(
        &self,
        filter: Document,
        order: i32,
        limit: usize,
    ) -> StoreResult<Vec<Repost>> {
        let docs = all(self
            .reposts_coll()
            .find(filter)
            .sort(doc! { "_id": order })
            .limit(limit as i64))
        .await?;
        docs.iter().map(repost_from).collect()
    }
}
