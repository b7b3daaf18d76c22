//! Driver calls every collection module shares: errors as storage failures, the
//! duplicate-key test, whole finds, keyed inserts and existence checks.

use futures::TryStreamExt;
use mongodb::Collection;
use mongodb::bson::{Document, doc};

use crate::store::{StoreError, StoreResult};

/// A driver error as a storage failure.
pub(super) fn db_error(error: mongodb::error::Error) -> StoreError {
    StoreError::Backend(anyhow::Error::new(error))
}

pub(super) fn error_code(error: &mongodb::error::Error) -> Option<i32> {
    use mongodb::error::{ErrorKind, WriteFailure};
    match error.kind.as_ref() {
        ErrorKind::Write(WriteFailure::WriteError(e)) => Some(e.code),
        ErrorKind::Command(e) => Some(e.code),
        ErrorKind::InsertMany(e) => e
            .write_errors
            .as_ref()
            .and_then(|errors| errors.first().map(|e| e.code)),
        _ => None,
    }
}

pub(super) fn is_duplicate_key(error: &mongodb::error::Error) -> bool {
    error_code(error) == Some(11000) || error.to_string().contains("E11000")
}

/// Every document a find returns.
pub(super) async fn all(find: mongodb::action::Find<'_, Document>) -> StoreResult<Vec<Document>> {
    find.await
        .map_err(db_error)?
        .try_collect()
        .await
        .map_err(db_error)
}

/// Inserts `doc` unless a document with its `_id` exists; returns whether it inserted.
///
/// An upsert with `$setOnInsert` rather than `insert_one` with a duplicate-key check:
/// the test stand-in writes a failed duplicate insert to its oplog, so the change feed
/// would carry an insert that never happened; an upsert that finds the document writes
/// nothing there. Equally atomic on MongoDB (the `_id` index is unique; a concurrent
/// upsert that loses the race reports 11000 or a match, never a second insert).
///
/// `shard_key` names the fields, besides `_id`, of the collection's shard key: an upsert
/// on a sharded collection must match the whole key by equality, so they move from
/// `$setOnInsert` into the filter.
pub(super) async fn insert_new(
    collection: &Collection<Document>,
    mut doc: Document,
    shard_key: &[&str],
) -> StoreResult<bool> {
    let id = doc
        .remove("_id")
        .ok_or_else(|| StoreError::Backend(anyhow::anyhow!("insert_new needs an _id")))?;
    let mut filter = doc! { "_id": id };
    for field in shard_key {
        if let Some(value) = doc.remove(*field) {
            filter.insert(*field, value);
        }
    }
    let inserted = collection
        .update_one(filter, doc! { "$setOnInsert": doc })
        .upsert(true)
        .await;
    match inserted {
        Ok(result) => Ok(result.upserted_id.is_some()),
        Err(error) if is_duplicate_key(&error) => Ok(false),
        Err(error) => Err(db_error(error)),
    }
}

/// Whether a document matches, fetching no more than its `_id`.
pub(super) async fn exists(
    collection: &Collection<Document>,
    filter: Document,
) -> StoreResult<bool> {
    Ok(collection
        .find_one(filter)
        .projection(doc! { "_id": 1 })
        .await
        .map_err(db_error)?
        .is_some())
}
