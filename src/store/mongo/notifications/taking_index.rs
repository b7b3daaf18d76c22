//! The index the takings sweep reads (`takings.rs`), and the step at connect that brings
//! a database an earlier version wrote (an index on the whole `takings` field, claims
//! without `taking_at`) to it.

use mongodb::bson::{Document, doc};
use mongodb::options::IndexOptions;
use mongodb::{Database, IndexModel};

use super::GROUPS;
use super::takings::TAKING_AT;

/// The index an earlier version kept on the whole `takings` field.
const OLD_INDEX: &str = "takings_1";

/// The sparse index on `taking_at`: only the groups with a claim, which the sweep reads
/// oldest first.
pub(super) fn index() -> IndexModel {
    IndexModel::builder()
        .keys(doc! { TAKING_AT: 1 })
        .options(IndexOptions::builder().sparse(true).build())
        .build()
}

/// Brings a database an earlier version wrote to the claims' current shape, at connect:
/// while the earlier index on `takings` is there, every group with `takings` and no
/// `taking_at` gets `taking_at: 0` (no later than any claim's `at`, so the next sweep
/// reads it and sets the real oldest), found through that index; then the index is
/// dropped. Idempotent: killed between the two, the next connect does both again.
/// A process of the earlier version still writing claims after this leaves them
/// without `taking_at`, for the user's next dismissal or clear to settle: stop those
/// before starting this one.
pub(in crate::store::mongo) async fn migrate(db: &Database) -> anyhow::Result<()> {
    if !db
        .list_collection_names()
        .await?
        .iter()
        .any(|c| c == GROUPS)
    {
        return Ok(());
    }
    let groups = db.collection::<Document>(GROUPS);
    if !groups
        .list_index_names()
        .await?
        .iter()
        .any(|i| i == OLD_INDEX)
    {
        return Ok(());
    }
    let marked = groups
        .update_many(
            doc! { "takings": { "$exists": true }, TAKING_AT: { "$exists": false } },
            doc! { "$set": { TAKING_AT: 0_i64 } },
        )
        .await?
        .modified_count;
    groups.drop_index(OLD_INDEX).await?;
    tracing::warn!(
        marked,
        "notification takings: groups with a claim marked for the sweep, the index on takings dropped"
    );
    Ok(())
}
