//! Users on MongoDB: `users` `{_id, display_name, followers_count, following_count,
//! posts_count, created_at, version}`.

use std::future::IntoFuture;

use async_trait::async_trait;
use futures::{StreamExt, TryStreamExt};
use mongodb::bson::{Bson, Document, doc};

use super::{MongoStore, all, db_error, insert_new, user_from};
use crate::domain::{AuthorView, Fence, NewUser, User};
use crate::store::{Recount, StoreError, StoreResult, UserStore};

/// Users recounted at once.
const RECOUNTS_IN_FLIGHT: usize = 8;
/// Users read per page by a full recount.
const RECOUNT_PAGE: i64 = 500;

/// A user's counts as the sources hold them now.
struct Counts {
    posts: i64,
    following: i64,
    followers: i64,
}

impl MongoStore {
    /// Counts `user`'s posts and edges, the three counts at once (each one index range:
    /// `{author, _id}`, `{from, to}`, `{to, from}`).
    async fn counts(&self, user: &str) -> StoreResult<Counts> {
        let (content, follows) = (self.content_coll(), self.collection(super::graph::FOLLOWS));
        let (posts, following, followers) = futures::try_join!(
            content
                .count_documents(doc! { "author": user })
                .into_future(),
            follows.count_documents(doc! { "from": user }).into_future(),
            follows.count_documents(doc! { "to": user }).into_future(),
        )
        .map_err(db_error)?;
        Ok(Counts {
            posts: posts as i64,
            following: following as i64,
            followers: followers as i64,
        })
    }

    /// Sets `user`'s counts where `fence` (a filter on the user document) still holds;
    /// returns whether it wrote.
    async fn set_counts(
        &self,
        user: &str,
        counts: &Counts,
        fence: Document,
        seq: Bson,
    ) -> StoreResult<bool> {
        let mut filter = doc! { "_id": user };
        filter.extend(fence);
        let written = self
            .users_coll()
            .update_one(
                filter,
                doc! { "$set": {
                    "posts_count": counts.posts,
                    "following_count": counts.following,
                    "followers_count": counts.followers,
                    "counted_seq": seq,
                } },
            )
            .await
            .map_err(db_error)?;
        Ok(written.modified_count > 0)
    }

    /// The users that exist among `ids`, in no particular order.
    async fn users(&self, ids: &[String]) -> StoreResult<Vec<User>> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let docs = all(self.users_coll().find(doc! { "_id": { "$in": ids } })).await?;
        docs.iter().map(user_from).collect()
    }

    /// The subset of `candidates` that `user` follows.
    pub(super) async fn followed_among(
        &self,
        user: &str,
        candidates: &[String],
    ) -> StoreResult<Vec<String>> {
        if candidates.is_empty() {
            return Ok(Vec::new());
        }
        let docs = all(self
            .collection(super::graph::FOLLOWS)
            .find(doc! { "from": user, "to": { "$in": candidates } })
            .projection(doc! { "to": 1, "_id": 0 }))
        .await?;
        Ok(docs
            .iter()
            .filter_map(|d| d.get_str("to").ok().map(str::to_owned))
            .collect())
    }
}

#[async_trait]
impl UserStore for MongoStore {
    async fn create_user(&self, user: &NewUser) -> StoreResult<User> {
        let doc = doc! {
            "_id": &user.id, "display_name": &user.display_name,
            "followers_count": 0_i64, "following_count": 0_i64, "posts_count": 0_i64,
            "created_at": user.created_at_ms, "version": 0_i64,
        };
        if insert_new(&self.users_coll(), doc.clone(), &[]).await? {
            user_from(&doc)
        } else {
            Err(StoreError::Conflict(format!("user {}", user.id)))
        }
    }

    async fn user(&self, id: &str) -> StoreResult<Option<User>> {
        let found = self
            .users_coll()
            .find_one(doc! { "_id": id })
            .await
            .map_err(db_error)?;
        found.as_ref().map(user_from).transpose()
    }

    /// One `update_one` that sets the name and bumps the version, so no counter `$inc`
    /// can make it fail or retry, then a read of the profile as it stands. (Not
    /// `findOneAndUpdate`: the test stand-in leaves it out of the oplog, and so out of
    /// the change feed; an update event reaches the feed with the full document through
    /// `updateLookup`.) With renames racing, the answer is the newest profile, which may
    /// carry the other rename's name.
    async fn rename_user(&self, id: &str, display_name: &str) -> StoreResult<Option<User>> {
        let renamed = self
            .users_coll()
            .update_one(
                doc! { "_id": id },
                doc! { "$set": { "display_name": display_name }, "$inc": { "version": 1_i64 } },
            )
            .await
            .map_err(db_error)?;
        if renamed.matched_count == 0 {
            return Ok(None);
        }
        self.user(id).await
    }

    /// Two queries, run at once.
    async fn authors(&self, reader: &str, authors: &[String]) -> StoreResult<Vec<AuthorView>> {
        let (users, followed) =
            futures::try_join!(self.users(authors), self.followed_among(reader, authors))?;
        let followed: std::collections::HashSet<String> = followed.into_iter().collect();
        Ok(users
            .into_iter()
            .map(|user| AuthorView {
                followed: followed.contains(&user.id),
                version: user.version,
                id: user.id,
                display_name: user.display_name,
            })
            .collect())
    }

    /// Per user: the three counts, then one `update_one` whose filter is the fence
    /// (`counted_seq` below the recount's seq; unless `always`, a count that differs).
    /// The counts are read before the write, so a write that lands in between is not in
    /// them; its own change has a higher seq and recounts the user again.
    async fn recount(&self, users: &[Recount]) -> StoreResult<u64> {
        let writes: Vec<_> = users
            .iter()
            .map(|recount| async move {
                let counts = self.counts(&recount.user).await?;
                let seq = recount.seq as i64;
                let mut fence = doc! { "counted_seq": { "$not": { "$gte": seq } } };
                if !recount.always {
                    fence.insert(
                        "$or",
                        vec![
                            doc! { "posts_count": { "$ne": counts.posts } },
                            doc! { "following_count": { "$ne": counts.following } },
                            doc! { "followers_count": { "$ne": counts.followers } },
                        ],
                    );
                }
                self.set_counts(&recount.user, &counts, fence, Bson::Int64(seq))
                    .await
            })
            .collect();
        let written: Vec<bool> = futures::stream::iter(writes)
            .buffer_unordered(RECOUNTS_IN_FLIGHT)
            .try_collect()
            .await?;
        Ok(written.into_iter().filter(|w| *w).count() as u64)
    }

    /// Every user, a page at a time: read `counted_seq`, count, then write only where
    /// `counted_seq` is still what was read, so an incremental recount that landed
    /// meanwhile (it counted later) is never overwritten. The lease is not consulted per
    /// write; a stale holder's write is a true count of a moment since the read, and any
    /// later write has its own change, which recounts the user.
    async fn recount_all(&self, _fence: &Fence) -> StoreResult<u64> {
        let mut written = 0;
        let mut after: Option<String> = None;
        loop {
            let filter = match &after {
                Some(after) => doc! { "_id": { "$gt": after } },
                None => doc! {},
            };
            let page = all(self
                .users_coll()
                .find(filter)
                .sort(doc! { "_id": 1 })
                .limit(RECOUNT_PAGE)
                .projection(doc! { "_id": 1, "counted_seq": 1 }))
            .await?;
            let Some(last) = page.last() else {
                return Ok(written);
            };
            after = last.get_str("_id").ok().map(str::to_owned);
            let writes: Vec<_> = page
                .iter()
                .map(|user| async move {
                    let id = user.get_str("_id").unwrap_or_default();
                    let seq = user.get("counted_seq").cloned();
                    let fence = match &seq {
                        Some(seq) => doc! { "counted_seq": seq.clone() },
                        None => doc! { "counted_seq": { "$exists": false } },
                    };
                    let counts = self.counts(id).await?;
                    let seq = seq.unwrap_or(Bson::Int64(-1));
                    self.set_counts(id, &counts, fence, seq).await
                })
                .collect();
            let done: Vec<bool> = futures::stream::iter(writes)
                .buffer_unordered(RECOUNTS_IN_FLIGHT)
                .try_collect()
                .await?;
            written += done.into_iter().filter(|w| *w).count() as u64;
            if (page.len() as i64) < RECOUNT_PAGE {
                return Ok(written);
            }
        }
    }
}
