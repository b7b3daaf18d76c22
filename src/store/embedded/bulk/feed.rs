//! The record of what the timelines were last built for (`feed::switch`): the `meta`
//! row `feed`, a string written whole in one transaction.

use rusqlite::OptionalExtension;

use crate::store::StoreResult;
use crate::store::embedded::EmbeddedStore;

const KEY: &str = "feed";

pub(super) async fn record(store: &EmbeddedStore) -> StoreResult<Option<String>> {
    store
        .read(|conn| {
            Ok(conn
                .prepare_cached("SELECT value FROM meta WHERE key = ?1")?
                .query_row([KEY], |row| row.get(0))
                .optional()?)
        })
        .await
}

pub(super) async fn set_record(store: &EmbeddedStore, record: String) -> StoreResult<()> {
    store
        .write(move |tx| {
            tx.prepare_cached(
                "INSERT INTO meta (key, value) VALUES (?1, ?2)
                 ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            )?
            .execute([KEY, record.as_str()])?;
            Ok(())
        })
        .await
}
