//! Follow intents: how a follow and a block on the same pair exclude each other on
//! MongoDB without a multi-document transaction, and without the follow's edge ever
//! standing under a block.
//!
//! `follow_intents {_id, pair: "follower/followee", at}`, indexed on `pair`. A follow
//! stores its intent *before* it looks for a block, and withdraws it once its edge and
//! counters are written; a block stores its document *before* it looks for intents on
//! the pair, and waits for each to be withdrawn before it removes the edges. Each side
//! writes, then reads what the other writes (both with majority concerns, in one
//! oplog's order), so at least one of them sees the other:
//! - the follow sees the block, and is refused having written no edge;
//! - or the block sees the intent, waits for the edge, and takes it away as an
//!   unfollow (the follow, answered first, is ordered before the block).
//!
//! So a refused follow leaves nothing for the change feed: the edge it would have
//! inserted never existed, and no worker derives a follow from it. (An earlier design
//! inserted the edge, looked again and deleted it: the activity worker had already seen
//! the insert and logged a follow that was answered 403.)
//!
//! An intent older than [`TAKEOVER_MS`] belongs to a follow that died (kill -9) or
//! stalled that long: the block deletes it and goes on. A follow that comes back
//! after that finds its intent gone, looks for a block again and, finding one, removes
//! its own edge and answers 403, logged as a warning: the one path left on which a
//! refused follow's edge stood for a moment. An intent left by a follow that died
//! stays until a block on the pair takes it over; it is never read otherwise.

use std::time::Duration;

use mongodb::Collection;
use mongodb::bson::{Document, doc, oid::ObjectId};

use super::claims::TAKEOVER_MS;
use super::relations::key;
use super::{IndexSpec, all, db_error, index, int};
use crate::domain::now_ms;
use crate::store::StoreResult;

pub(super) const INTENTS: &str = "follow_intents";
/// How often a waiting block looks at the intents again.
const POLL: Duration = Duration::from_millis(5);

pub(super) fn indexes() -> Vec<IndexSpec> {
    vec![(INTENTS, index(doc! { "pair": 1 }, false))]
}

/// Stores a follow's intent on the pair: its id, to withdraw it with.
pub(super) async fn declare(
    coll: &Collection<Document>,
    follower: &str,
    followee: &str,
) -> StoreResult<ObjectId> {
    let id = ObjectId::new();
    coll.insert_one(doc! { "_id": id, "pair": key(follower, followee), "at": now_ms() })
        .await
        .map_err(db_error)?;
    Ok(id)
}

/// Withdraws the intent `id` on the pair: whether it was still there (false: a block
/// took it over).
pub(super) async fn withdraw(
    coll: &Collection<Document>,
    follower: &str,
    followee: &str,
    id: ObjectId,
) -> StoreResult<bool> {
    let deleted = coll
        .delete_one(doc! { "_id": id, "pair": key(follower, followee) })
        .await
        .map_err(db_error)?;
    Ok(deleted.deleted_count > 0)
}

/// Waits until no follow has a fresh intent on `follower → followee`, deleting the
/// stale ones (see the module's note).
pub(super) async fn wait_out(
    coll: &Collection<Document>,
    follower: &str,
    followee: &str,
) -> StoreResult<()> {
    let pair = key(follower, followee);
    loop {
        let found = all(coll
            .find(doc! { "pair": &pair })
            .projection(doc! { "at": 1 }))
        .await?;
        let mut fresh = false;
        for intent in found {
            let at = int(&intent, "at");
            if now_ms() - at < TAKEOVER_MS {
                fresh = true;
                continue;
            }
            // Conditional on `at`, so a takeover never removes an intent it did not see.
            let id = intent.get("_id").cloned();
            coll.delete_one(doc! { "_id": id, "pair": &pair, "at": at })
                .await
                .map_err(db_error)?;
            tracing::warn!(
                %pair,
                "a follow's intent outlived {TAKEOVER_MS} ms (its request died or stalled); the block took it over"
            );
        }
        if !fresh {
            return Ok(());
        }
        tokio::time::sleep(POLL).await;
    }
}
