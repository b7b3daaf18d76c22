//! Users on MongoDB: `users` `{_id, display_name, followers_count, following_count,
//! posts_count, created_at, version}`.

use async_trait::async_trait;
use mongodb::bson::doc;

use super::{MongoStore, all, db_error, insert_new, user_from};
use crate::domain::{AuthorView, NewUser, User};
use crate::store::{StoreError, StoreResult, UserStore};

impl MongoStore {
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
}
