//! Leases on SQLite: one `leases` row per worker, read and changed inside one
//! `BEGIN IMMEDIATE` transaction, so acquire, refresh and commit are each atomic across
//! every process sharing the file. [`check_fence`] lets a worker's side effect verify the
//! lease in the same transaction as the effect: there, fencing is exact.

use async_trait::async_trait;
use rusqlite::{Connection, OptionalExtension, params};

use super::EmbeddedStore;
use crate::domain::ChangePosition;
use crate::store::leases::{Lease, LeaseStore, initial_version};
use crate::store::{StoreError, StoreResult};

pub(super) const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS leases (
    name       TEXT PRIMARY KEY,
    holder     TEXT,
    version    INTEGER NOT NULL,
    expires_at INTEGER NOT NULL,
    position   TEXT
) WITHOUT ROWID;
";

fn lease(conn: &Connection, name: &str) -> rusqlite::Result<Option<Lease>> {
    conn.prepare_cached(
        "SELECT name, holder, version, expires_at, position FROM leases WHERE name = ?1",
    )?
    .query_row([name], lease_from_row)
    .optional()
}

fn lease_from_row(row: &rusqlite::Row<'_>) -> rusqlite::Result<Lease> {
    Ok(Lease {
        name: row.get(0)?,
        holder: row.get(1)?,
        version: row.get::<_, i64>(2)? as u64,
        expires_at_ms: row.get(3)?,
        position: row.get::<_, Option<String>>(4)?.map(ChangePosition),
    })
}

/// `Fenced` unless `holder` still holds `name` at `version`. Call it inside the write
/// transaction of the side effect it guards.
pub(super) fn check_fence(
    conn: &Connection,
    name: &str,
    holder: &str,
    version: u64,
) -> StoreResult<()> {
    match lease(conn, name)? {
        Some(current) if current.held_by(holder) && current.version == version => Ok(()),
        _ => Err(StoreError::Fenced(name.to_owned())),
    }
}

/// Runs `change` against the row only when `holder` holds `name` at `version`.
fn if_held(
    conn: &Connection,
    name: &str,
    holder: &str,
    version: u64,
    sql: &str,
    values: impl rusqlite::Params,
) -> StoreResult<bool> {
    if check_fence(conn, name, holder, version).is_err() {
        return Ok(false);
    }
    Ok(conn.prepare_cached(sql)?.execute(values)? == 1)
}

#[async_trait]
impl LeaseStore for EmbeddedStore {
    async fn acquire(
        &self,
        name: &str,
        holder: &str,
        now_ms: i64,
        ttl_ms: i64,
    ) -> StoreResult<Lease> {
        let (name, holder) = (name.to_owned(), holder.to_owned());
        self.write(move |tx| {
            let expires = now_ms + ttl_ms;
            match lease(tx, &name)? {
                None => {
                    tx.prepare_cached(
                        "INSERT INTO leases (name, holder, version, expires_at) VALUES (?1, ?2, ?3, ?4)",
                    )?
                    .execute(params![name, holder, initial_version(now_ms) as i64, expires])?;
                }
                Some(current) if current.held_by(&holder) => {
                    tx.prepare_cached("UPDATE leases SET expires_at = ?2 WHERE name = ?1")?
                        .execute(params![name, expires])?;
                }
                Some(current) if current.holder.is_none() || current.expires_at_ms <= now_ms => {
                    tx.prepare_cached(
                        "UPDATE leases SET holder = ?2, version = version + 1, expires_at = ?3 WHERE name = ?1",
                    )?
                    .execute(params![name, holder, expires])?;
                }
                Some(_) => {}
            }
            lease(tx, &name)?.ok_or_else(|| StoreError::NotFound(format!("lease {name}")))
        })
        .await
    }

    async fn refresh(
        &self,
        name: &str,
        holder: &str,
        version: u64,
        now_ms: i64,
        ttl_ms: i64,
    ) -> StoreResult<bool> {
        let (name, holder) = (name.to_owned(), holder.to_owned());
        self.write(move |tx| {
            if_held(
                tx,
                &name,
                &holder,
                version,
                "UPDATE leases SET expires_at = ?2 WHERE name = ?1",
                params![name, now_ms + ttl_ms],
            )
        })
        .await
    }

    async fn commit(
        &self,
        name: &str,
        holder: &str,
        version: u64,
        position: &ChangePosition,
        now_ms: i64,
        ttl_ms: i64,
    ) -> StoreResult<bool> {
        let (name, holder, position) = (name.to_owned(), holder.to_owned(), position.0.clone());
        self.write(move |tx| {
            if_held(
                tx,
                &name,
                &holder,
                version,
                "UPDATE leases SET expires_at = ?2, position = ?3 WHERE name = ?1",
                params![name, now_ms + ttl_ms, position],
            )
        })
        .await
    }

    async fn release(&self, name: &str, holder: &str, version: u64) -> StoreResult<()> {
        let (name, holder) = (name.to_owned(), holder.to_owned());
        self.write(move |tx| {
            if_held(
                tx,
                &name,
                &holder,
                version,
                "UPDATE leases SET holder = NULL, expires_at = 0 WHERE name = ?1",
                params![name],
            )?;
            Ok(())
        })
        .await
    }

    async fn leases(&self) -> StoreResult<Vec<Lease>> {
        self.read(|conn| {
            let mut stmt = conn.prepare_cached(
                "SELECT name, holder, version, expires_at, position FROM leases ORDER BY name",
            )?;
            let rows = stmt.query_map([], lease_from_row)?;
            Ok(rows.collect::<rusqlite::Result<_>>()?)
        })
        .await
    }
}
