//! `UserStore::accounts` on MongoDB: the profiles by `_id` and, beside them, each
//! user's newest post and newest repost: one `$sort`/`$group` aggregation per
//! collection over the index that leads with the user (`{author: 1, _id: -1}`,
//! `{user: 1, _id: -1}`), which MongoDB answers with one index seek per user (a
//! `DISTINCT_SCAN`). The three reads run together. One aggregation over both
//! collections would need `$unionWith`, which the test stand-in does not run.

use std::collections::HashMap;

use futures::TryStreamExt;
use mongodb::Collection;
use mongodb::bson::{Document, doc};

use super::super::reposts::REPOSTS_COLL;
use super::super::{MongoStore, db_error, post_id};
use crate::domain::{AccountView, PostId};
use crate::store::StoreResult;

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

impl MongoStore {
    pub(in crate::store::mongo) async fn accounts_among(
        &self,
        ids: &[String],
    ) -> StoreResult<Vec<AccountView>> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let (users, posts, reposts) = futures::try_join!(
            self.users_among(ids),
            newest_by(self.content_coll(), "author", ids),
            newest_by(self.collection(REPOSTS_COLL), "user", ids),
        )?;
        Ok(users
            .into_iter()
            .map(|user| {
                let last_status = posts
                    .get(&user.id)
                    .copied()
                    .max(reposts.get(&user.id).copied());
                AccountView { user, last_status }
            })
            .collect())
    }
}
