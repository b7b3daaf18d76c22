//! The database's birth: a cluster time at or before this store's first write to it,
//! kept once in `meta` as `{_id: "born", at}`. A worker with no position starts at the
//! oldest oplog entry, which misses nothing only while the oplog still reaches back to
//! the birth; once it does not, the worker rebuilds (`HistoryLost`) instead of
//! skipping, without a word, whatever rolled off.

use mongodb::Database;
use mongodb::bson::{Document, Timestamp, doc};

use super::super::{db_error, insert_new};
use super::streams::oplog_entry;
use crate::store::{StoreError, StoreResult};

const META: &str = "meta";
const BORN: &str = "born";
const ZERO: Timestamp = Timestamp {
    time: 0,
    increment: 0,
};

/// Records the birth unless it is recorded (processes starting at once race; the first
/// insert wins). The newest oplog entry before the record is at or before every later
/// write. A database that already holds users without a record was born at an unknown
/// time, so it gets the zero time: a worker without a position on it rebuilds.
pub(in crate::store::mongo) async fn record(db: &Database) -> StoreResult<()> {
    let meta = db.collection::<Document>(META);
    let recorded = meta
        .find_one(doc! { "_id": BORN })
        .await
        .map_err(db_error)?;
    if recorded.is_some() {
        return Ok(());
    }
    let populated = db
        .collection::<Document>("users")
        .find_one(doc! {})
        .projection(doc! { "_id": 1 })
        .await
        .map_err(db_error)?
        .is_some();
    let at = if populated {
        ZERO
    } else {
        match oplog_entry(db, true).await? {
            Some(newest) => newest,
            None => {
                // An empty oplog: write once, so that its oldest entry, read after the
                // write, is at or before every later one.
                insert_new(&meta, doc! { "_id": "first" }, &[]).await?;
                oplog_entry(db, false).await?.unwrap_or(ZERO)
            }
        }
    };
    insert_new(&meta, doc! { "_id": BORN, "at": at }, &[]).await?;
    Ok(())
}

/// `HistoryLost` when the oplog's oldest entry, `oldest`, is newer than the birth: a
/// reader with no position would start after writes it never saw.
pub(super) async fn check(db: &Database, oldest: Timestamp) -> StoreResult<()> {
    let born = db
        .collection::<Document>(META)
        .find_one(doc! { "_id": BORN })
        .await
        .map_err(db_error)?
        .and_then(|d| d.get_timestamp("at").ok())
        .unwrap_or(ZERO);
    if oldest > born {
        return Err(StoreError::HistoryLost(format!(
            "no position, and the oplog (oldest entry {}.{}) no longer reaches back to the \
             database's first write ({}.{})",
            oldest.time, oldest.increment, born.time, born.increment
        )));
    }
    Ok(())
}
