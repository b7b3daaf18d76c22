//! Users on MongoDB: `users` `{_id, display_name, followers_count, following_count,
//! posts_count, created_at, version, counted_seq, counter_version}`. `version` moves
//! with renames, `counter_version` with every counter write (see `Counted`); a profile
//! written before `counter_version` existed has none, which counts as 0.

use std::collections::HashMap;
use std::future::IntoFuture;

use async_trait::async_trait;
use futures::{StreamExt, TryStreamExt};
use mongodb::bson::{Document, doc};

use super::{COUNTER_VERSION, MongoStore, all, db_error, insert_new, int, user_from, version_is};
use crate::domain::{AccountView, AuthorView, Fence, NewUser, User};
use crate::store::{Counted, Counter, NameWord, Recount, StoreError, StoreResult, UserStore};

mod accounts;

/// Users recounted at once.
const RECOUNTS_IN_FLIGHT: usize = 8;
/// Users read per page by a full recount.
const RECOUNT_PAGE: i64 = 500;

/// Recounts of one user by a request before it is left to the counters worker.
const RECOUNT_NOW_ATTEMPTS: usize = 5;

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

    /// Recounts `users` from the sources now, for a call that took over a change whose
    /// counter move may be half done (see `claims`). Each write is conditional on the
    /// version read before the count, so a counter moved meanwhile is never overwritten;
    /// after a few refusals the user is left to the counters worker, which recounts the
    /// change that moved it.
    ///
    /// Unlike a post's recount (`post_counts.rs`) it does not wait for fresh marks on the
    /// user's sources: a count that saw an edge or post whose `+1` lands after the write
    /// (or whose delete lands after, its `-1` before) is one above the sources until the
    /// counters worker applies that late move's own change (a counter update, or the
    /// edge's or post's delete), which it recounts after; every write of a user's
    /// counters is such a change, so the last one is always recounted after it
    /// (`tests/counter_claims/users.rs`).
    pub(super) async fn recount_now(&self, users: &[&str]) -> StoreResult<()> {
        for user in users {
            for _ in 0..RECOUNT_NOW_ATTEMPTS {
                let found = self
                    .users_coll()
                    .find_one(doc! { "_id": *user })
                    .projection(doc! { COUNTER_VERSION: 1 })
                    .await
                    .map_err(db_error)?;
                let Some(found) = found else {
                    break;
                };
                let counts = self.counts(user).await?;
                if self
                    .set_counts(user, &counts, int(&found, COUNTER_VERSION), None)
                    .await?
                {
                    break;
                }
            }
        }
        Ok(())
    }

    /// Sets `user`'s counts (and `counted_seq`, when given) where its counters' version
    /// is still `version`, moving the version on; returns whether it wrote.
    async fn set_counts(
        &self,
        user: &str,
        counts: &Counts,
        version: i64,
        seq: Option<i64>,
    ) -> StoreResult<bool> {
        let mut set = doc! {
            "posts_count": counts.posts,
            "following_count": counts.following,
            "followers_count": counts.followers,
        };
        if let Some(seq) = seq {
            set.insert("counted_seq", seq);
        }
        let written = self
            .users_coll()
            .update_one(
                doc! { "_id": user, COUNTER_VERSION: version_is(version) },
                doc! { "$set": set, "$inc": { COUNTER_VERSION: 1_i64 } },
            )
            .await
            .map_err(db_error)?;
        Ok(written.matched_count > 0)
    }

    /// The name's words synced right after the name's write (see `name_words`). The
    /// name is written: a failure here is logged, not answered, and the counters worker
    /// syncs the user when it applies the change.
    async fn sync_words_after_write(&self, user: &str) {
        if let Err(error) = super::name_words::sync_user(&self.db, user).await {
            tracing::warn!(user, %error, "name words not synced; the counters worker will");
        }
    }

    /// The users that exist among `ids`, in no particular order.
    pub(super) async fn users_among(&self, ids: &[String]) -> StoreResult<Vec<User>> {
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
            "created_at": user.created_at_ms, "version": 0_i64, COUNTER_VERSION: 0_i64,
        };
        if insert_new(&self.users_coll(), doc.clone(), &[]).await? {
            self.sync_words_after_write(&user.id).await;
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

    async fn users(&self, ids: &[String]) -> StoreResult<Vec<User>> {
        self.users_among(ids).await
    }

    async fn accounts(&self, ids: &[String]) -> StoreResult<Vec<AccountView>> {
        self.accounts_among(ids).await
    }

    async fn accounts_by_prefix(
        &self,
        prefix: &str,
        limit: usize,
    ) -> StoreResult<Vec<AccountView>> {
        self.accounts_by_prefix_of(prefix, limit).await
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
        self.sync_words_after_write(id).await;
        self.user(id).await
    }

    async fn name_word_entries(
        &self,
        prefix: &str,
        after: Option<&NameWord>,
        limit: usize,
    ) -> StoreResult<Vec<NameWord>> {
        super::name_words::entries(&self.db, prefix, after, limit).await
    }

    async fn name_words_of(&self, users: &[String]) -> StoreResult<Vec<NameWord>> {
        super::name_words::of_users(&self.db, users).await
    }

    async fn sync_name_words(&self, users: &[String]) -> StoreResult<u64> {
        super::name_words::sync_users(&self.db, users).await
    }

    async fn rebuild_name_words(&self) -> StoreResult<u64> {
        super::name_words::rebuild(&self.db).await
    }

    /// Two queries, run at once.
    async fn authors(&self, reader: &str, authors: &[String]) -> StoreResult<Vec<AuthorView>> {
        let (users, followed) = futures::try_join!(
            self.users_among(authors),
            self.followed_among(reader, authors)
        )?;
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

    /// One query for the users' `counted_seq`, counters and versions, then the three
    /// counts of each user that needs a write, a few users at once.
    async fn count_sources(&self, users: &[Recount]) -> StoreResult<Vec<Counted>> {
        let ids: Vec<&str> = users.iter().map(|r| r.user.as_str()).collect();
        let projection = doc! {
            "counted_seq": 1, COUNTER_VERSION: 1,
            "posts_count": 1, "following_count": 1, "followers_count": 1,
        };
        let stored = all(self
            .users_coll()
            .find(doc! { "_id": { "$in": &ids } })
            .projection(projection))
        .await?;
        let stored: HashMap<&str, &Document> = stored
            .iter()
            .filter_map(|d| Some((d.get_str("_id").ok()?, d)))
            .collect();
        let reads: Vec<_> = users
            .iter()
            .filter_map(|recount| {
                let user = *stored.get(recount.user.as_str())?;
                let counted_seq = match user.get("counted_seq") {
                    Some(_) => int(user, "counted_seq"),
                    None => -1,
                };
                (counted_seq < recount.seq as i64).then_some((recount, user))
            })
            .map(|(recount, user)| async move {
                let counts = self.counts(&recount.user).await?;
                let differs = counts.posts != int(user, "posts_count")
                    || counts.following != int(user, "following_count")
                    || counts.followers != int(user, "followers_count");
                StoreResult::Ok((recount.always || differs).then(|| Counted {
                    user: recount.user.clone(),
                    seq: recount.seq,
                    posts: counts.posts.max(0) as u64,
                    following: counts.following.max(0) as u64,
                    followers: counts.followers.max(0) as u64,
                    version: int(user, COUNTER_VERSION).max(0) as u64,
                }))
            })
            .collect();
        let counted: Vec<Option<Counted>> = futures::stream::iter(reads)
            .buffer_unordered(RECOUNTS_IN_FLIGHT)
            .try_collect()
            .await?;
        Ok(counted.into_iter().flatten().collect())
    }

    /// One `update_one` per user, filtered on the version read, a few at once.
    async fn write_counts(&self, counted: &[Counted]) -> StoreResult<Vec<String>> {
        let writes: Vec<_> = counted
            .iter()
            .map(|c| async move {
                let counts = Counts {
                    posts: c.posts as i64,
                    following: c.following as i64,
                    followers: c.followers as i64,
                };
                let written = self
                    .set_counts(&c.user, &counts, c.version as i64, Some(c.seq as i64))
                    .await?;
                StoreResult::Ok((!written).then(|| c.user.clone()))
            })
            .collect();
        let refused: Vec<Option<String>> = futures::stream::iter(writes)
            .buffer_unordered(RECOUNTS_IN_FLIGHT)
            .try_collect()
            .await?;
        Ok(refused.into_iter().flatten().collect())
    }

    /// Every user, a page at a time: read the counters' versions, count, then write only
    /// where the version is still the one read, so neither a request's `$inc` nor an
    /// incremental recount that landed meanwhile is overwritten by an older count. The
    /// lease is not consulted per write; a stale holder's write is a true count of a
    /// moment no counter moved since, and any later write has its own change, which
    /// recounts the user.
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
                .projection(doc! { "_id": 1, COUNTER_VERSION: 1 }))
            .await?;
            let Some(last) = page.last() else {
                break;
            };
            after = last.get_str("_id").ok().map(str::to_owned);
            let writes: Vec<_> = page
                .iter()
                .map(|user| async move {
                    let id = user.get_str("_id").unwrap_or_default();
                    let counts = self.counts(id).await?;
                    self.set_counts(id, &counts, int(user, COUNTER_VERSION), None)
                        .await
                })
                .collect();
            let done: Vec<bool> = futures::stream::iter(writes)
                .buffer_unordered(RECOUNTS_IN_FLIGHT)
                .try_collect()
                .await?;
            written += done.into_iter().filter(|w| *w).count() as u64;
            if (page.len() as i64) < RECOUNT_PAGE {
                break;
            }
        }
        // Every post's `replies_count` and `reposts_count` too (see `threads.rs`,
        // `reposts.rs`).
        let posts = self.recount_every_post(Counter::Replies).await?
            + self.recount_every_post(Counter::Reposts).await?;
        Ok(written + posts)
    }
}
