//! Users on MongoDB: `users` `{_id, display_name, followers_count, following_count,
//! posts_count, created_at, version}`.

use async_trait::async_trait;
use mongodb::bson::doc;

use super::{MongoStore, all, db_error, int, is_duplicate_key, user_from};
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
    async fn followed_among(&self, user: &str, candidates: &[String]) -> StoreResult<Vec<String>> {
        if candidates.is_empty() {
            return Ok(Vec::new());
        }
        let docs = all(self
            .collection("following")
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
        match self.users_coll().insert_one(doc.clone()).await {
            Ok(_) => user_from(&doc),
            Err(error) if is_duplicate_key(&error) => {
                Err(StoreError::Conflict(format!("user {}", user.id)))
            }
            Err(error) => Err(db_error(error)),
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

    /// A read and a guarded `replace_one`, retried when a counter moved in between:
    /// replace events carry the whole document on every server, which keeps the change
    /// feed's user documents complete.
    async fn rename_user(&self, id: &str, display_name: &str) -> StoreResult<Option<User>> {
        for _ in 0..16 {
            let Some(current) = self
                .users_coll()
                .find_one(doc! { "_id": id })
                .await
                .map_err(db_error)?
            else {
                return Ok(None);
            };
            let mut next = current.clone();
            next.insert("display_name", display_name);
            next.insert("version", int(&current, "version") + 1);
            let replaced = self
                .users_coll()
                .replace_one(current, next.clone())
                .await
                .map_err(db_error)?;
            if replaced.matched_count == 1 {
                return user_from(&next).map(Some);
            }
        }
        Err(StoreError::Backend(anyhow::anyhow!(
            "renaming {id} kept racing with counter updates"
        )))
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
                id: user.id,
                display_name: user.display_name,
            })
            .collect())
    }
}
