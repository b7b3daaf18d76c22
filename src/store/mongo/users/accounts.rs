//! Accounts on MongoDB (`UserStore::accounts`, `accounts_by_prefix`): the profiles and
//! each user's newest post and newest repost, one `$sort`/`$group` aggregation per
//! collection over the index that leads with the user (`{author: 1, _id: -1}`,
//! `{user: 1, _id: -1}`), which MongoDB answers with one index seek per user (a
//! `DISTINCT_SCAN`). By ids, the profiles' `$in` and the two aggregations run together;
//! by prefix, the aggregations follow the `_id` range, over the ids it found. One
//! aggregation over both collections would need `$unionWith`, which the test stand-in
//! does not run.

use std::collections::HashMap;

use futures::TryStreamExt;
use mongodb::Collection;
use mongodb::bson::{Document, doc};

use super::super::reposts::REPOSTS_COLL;
use super::super::{MongoStore, all, db_error, post_id, user_from};
use crate::domain::{AccountView, PostId, User};
use crate::store::StoreResult;
use crate::store::users::prefix_end;

/// The newest `_id` of each value of `field` among `ids` in `coll`.
async fn newest_by(
    coll: Collection<Document>,
    field: &str,
    ids: &[String],
) -> StoreResult<HashMap<String, PostId>> {
    let pipeline = [
        doc! { "$match": { field: { "$in": ids } } },
        doc! { "$sort": { field: 1, "_id": -1 } },
        doc! { "$group": { "_id": format!("${field}"), "newest": { "$first": "$_id" } } },
    ];
    let mut groups = coll.aggregate(pipeline).await.map_err(db_error)?;
    let mut newest = HashMap::new();
    while let Some(group) = groups.try_next().await.map_err(db_error)? {
        if let Ok(user) = group.get_str("_id") {
            newest.insert(user.to_owned(), post_id(group.get("newest"))?);
        }
    }
    Ok(newest)
}

/// Each of `users` with the newer of its newest post and newest repost.
fn with_last_status(
    users: Vec<User>,
    (posts, reposts): (HashMap<String, PostId>, HashMap<String, PostId>),
) -> Vec<AccountView> {
    users
        .into_iter()
        .map(|user| {
            let last_status = posts
                .get(&user.id)
                .copied()
                .max(reposts.get(&user.id).copied());
            AccountView { user, last_status }
        })
        .collect()
}

impl MongoStore {
    /// The newest post and the newest repost of each of `ids` that has one, the two
    /// aggregations run together.
    async fn newest_statuses(
        &self,
        ids: &[String],
    ) -> StoreResult<(HashMap<String, PostId>, HashMap<String, PostId>)> {
        futures::try_join!(
            newest_by(self.content_coll(), "author", ids),
            newest_by(self.collection(REPOSTS_COLL), "user", ids),
        )
    }

    pub(in crate::store::mongo) async fn accounts_among(
        &self,
        ids: &[String],
    ) -> StoreResult<Vec<AccountView>> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let (users, newest) = futures::try_join!(self.users_among(ids), self.newest_statuses(ids))?;
        Ok(with_last_status(users, newest))
    }

    /// A range of `_id` (bytewise, the default collation), sorted by it and limited,
    /// then the last statuses of the users it found. (A limit of 0 would be none to
    /// MongoDB: it finds nothing, as on SQLite.)
    pub(in crate::store::mongo) async fn accounts_by_prefix_of(
        &self,
        prefix: &str,
        limit: usize,
    ) -> StoreResult<Vec<AccountView>> {
        if limit == 0 {
            return Ok(Vec::new());
        }
        let range = doc! { "$gte": prefix, "$lt": prefix_end(prefix) };
        let docs = all(self
            .users_coll()
            .find(doc! { "_id": range })
            .sort(doc! { "_id": 1 })
            .limit(i64::try_from(limit).unwrap_or(i64::MAX)))
        .await?;
        let users: Vec<User> = docs.iter().map(user_from).collect::<StoreResult<_>>()?;
        if users.is_empty() {
            return Ok(Vec::new());
        }
        let ids: Vec<String> = users.iter().map(|u| u.id.clone()).collect();
        Ok(with_last_status(users, self.newest_statuses(&ids).await?))
    }
}
