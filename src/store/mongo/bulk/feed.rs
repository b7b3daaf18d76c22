//! The record of what the timelines were last built for (`feed::switch`): the `meta`
//! document `{_id: "feed", value}`, replaced whole by one upsert.

use mongodb::bson::{Document, doc};

use crate::store::StoreResult;
use crate::store::mongo::{MongoStore, db_error};

const META: &str = "meta";
const ID: &str = "feed";

pub(super) async fn record(store: &MongoStore) -> StoreResult<Option<String>> {
    let found = store
        .collection(META)
        .find_one(doc! { "_id": ID })
        .await
        .map_err(db_error)?;
    Ok(found.and_then(|d: Document| d.get_str("value").ok().map(str::to_owned)))
}

pub(super) async fn set_record(store: &MongoStore, record: &str) -> StoreResult<()> {
    store
        .collection(META)
        .update_one(doc! { "_id": ID }, doc! { "$set": { "value": record } })
        .upsert(true)
        .await
        .map_err(db_error)?;
    Ok(())
}
