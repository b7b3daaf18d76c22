//! The manifest `socialite backup` writes into its copy and `socialite restore` checks:
//! for every table of the copy, and for the schema itself, its row count and a SHA-256
//! digest of its rows.
//!
//! SQLite's integrity check proves a file's structure (pages, b-trees, each index
//! against its table), not its content: a byte changed inside a record, or a page read
//! as zeros, can leave a structure it finds sound. The manifest is the content as the
//! backup read it, so a restore can tell a copy that holds exactly what was backed up
//! from one that does not, and name the tables that differ.
//!
//! A table's digest covers its rows in primary-key order (rowid order for rowid tables),
//! every column in declaration order, each value as one type byte (0 null, 1 integer,
//! 2 real, 3 text, 4 blob) and then, for an integer its 8 bytes and for a real its IEEE
//! bits (big-endian), for text and blobs their length as 8 bytes and their bytes. The
//! schema's entry, `sqlite_schema`, covers each object's type, name, table and SQL, in
//! order of type and name (not its root page, where the file keeps it). The manifest's
//! own table is left out of both.

use std::collections::BTreeMap;

use anyhow::{Context, bail};
use rusqlite::Connection;
use rusqlite::types::ValueRef;
use sha2::{Digest, Sha256};

/// The manifest's table in a copy.
pub const TABLE: &str = "backup_manifest";
/// The schema's entry in the manifest.
const SCHEMA_ENTRY: &str = "sqlite_schema";

/// One table's content, as the manifest records it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableDigest {
    pub name: String,
    pub rows: i64,
    pub sha256: String,
}

/// What the check of a copy found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Every table matches the manifest; this many entries were compared.
    Verified(usize),
    /// The copy has no manifest (taken by an older socialite, or not by `backup`).
    Missing,
}

/// The digest of every table of `conn` but the manifest, and of the schema.
pub fn digests(conn: &Connection) -> rusqlite::Result<Vec<TableDigest>> {
    let tables: Vec<(String, bool)> = conn
        .prepare(
            "SELECT name, wr FROM pragma_table_list
              WHERE schema = 'main' AND type = 'table'
                AND name NOT IN ('sqlite_schema', 'sqlite_master', ?1)
              ORDER BY name",
        )?
        .query_map([TABLE], |row| Ok((row.get(0)?, row.get(1)?)))?
        .collect::<rusqlite::Result<_>>()?;
    let mut digests = Vec::with_capacity(tables.len() + 1);
    digests.push(digest(
        conn,
        SCHEMA_ENTRY,
        &format!(
            "SELECT type, name, tbl_name, sql FROM sqlite_schema
              WHERE tbl_name <> '{TABLE}' ORDER BY type, name"
        ),
    )?);
    for (name, without_rowid) in tables {
        let order = if without_rowid {
            let columns: Vec<String> = conn
                .prepare("SELECT name FROM pragma_table_info(?1) WHERE pk > 0 ORDER BY pk")?
                .query_map([&name], |row| row.get::<_, String>(0))?
                .collect::<rusqlite::Result<_>>()?;
            columns
                .iter()
                .map(|c| quote(c))
                .collect::<Vec<_>>()
                .join(", ")
        } else {
            "rowid".to_owned()
        };
        let sql = format!("SELECT * FROM {} ORDER BY {order}", quote(&name));
        digests.push(digest(conn, &name, &sql)?);
    }
    Ok(digests)
}

/// Digests the rows `sql` reads, under `name`.
fn digest(conn: &Connection, name: &str, sql: &str) -> rusqlite::Result<TableDigest> {
    let mut stmt = conn.prepare(sql)?;
    let columns = stmt.column_count();
    let mut rows = stmt.query([])?;
    let (mut hasher, mut count) = (Sha256::new(), 0_i64);
    while let Some(row) = rows.next()? {
        for i in 0..columns {
            feed(&mut hasher, row.get_ref(i)?);
        }
        count += 1;
    }
    let bytes: [u8; 32] = hasher.finalize().into();
    Ok(TableDigest {
        name: name.to_owned(),
        rows: count,
        sha256: hex::encode(bytes),
    })
}

fn feed(hasher: &mut Sha256, value: ValueRef<'_>) {
    let with_length = |hasher: &mut Sha256, tag: u8, bytes: &[u8]| {
        hasher.update([tag]);
        hasher.update((bytes.len() as u64).to_be_bytes());
        hasher.update(bytes);
    };
    match value {
        ValueRef::Null => hasher.update([0]),
        ValueRef::Integer(i) => {
            hasher.update([1]);
            hasher.update(i.to_be_bytes());
        }
        ValueRef::Real(f) => {
            hasher.update([2]);
            hasher.update(f.to_bits().to_be_bytes());
        }
        ValueRef::Text(text) => with_length(hasher, 3, text),
        ValueRef::Blob(blob) => with_length(hasher, 4, blob),
    }
}

fn quote(identifier: &str) -> String {
    format!("\"{}\"", identifier.replace('"', "\"\""))
}

/// Writes the manifest of `conn`'s current content into it; returns the entries written.
pub fn write(conn: &mut Connection) -> rusqlite::Result<usize> {
    let tx = conn.transaction()?;
    let entries = digests(&tx)?;
    tx.execute_batch(&format!(
        "CREATE TABLE {TABLE} (
             name      TEXT PRIMARY KEY,
             row_count INTEGER NOT NULL,
             sha256    TEXT NOT NULL
         ) WITHOUT ROWID;"
    ))?;
    {
        let mut insert = tx.prepare(&format!(
            "INSERT INTO {TABLE} (name, row_count, sha256) VALUES (?1, ?2, ?3)"
        ))?;
        for entry in &entries {
            insert.execute(rusqlite::params![entry.name, entry.rows, entry.sha256])?;
        }
    }
    tx.commit()?;
    Ok(entries.len())
}

/// Compares `conn`'s content with its manifest. `Err`, naming every table that differs,
/// when they do not match.
pub fn check(conn: &Connection) -> anyhow::Result<Verdict> {
    let has: bool = conn
        .prepare("SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name = ?1")?
        .exists([TABLE])?;
    if !has {
        return Ok(Verdict::Missing);
    }
    let recorded: BTreeMap<String, (i64, String)> = conn
        .prepare(&format!("SELECT name, row_count, sha256 FROM {TABLE}"))
        .and_then(|mut stmt| {
            stmt.query_map([], |row| Ok((row.get(0)?, (row.get(1)?, row.get(2)?))))?
                .collect()
        })
        .context("it is damaged: its manifest cannot be read")?;
    let found: BTreeMap<String, (i64, String)> = digests(conn)
        .context("it is damaged: its content cannot be read whole")?
        .into_iter()
        .map(|d| (d.name, (d.rows, d.sha256)))
        .collect();
    let mut differ = Vec::new();
    for name in recorded
        .keys()
        .chain(found.keys().filter(|n| !recorded.contains_key(*n)))
    {
        match (recorded.get(name), found.get(name)) {
            (Some(_), None) => differ.push(format!("{name} (missing from the copy)")),
            (None, Some(_)) => differ.push(format!("{name} (not in the manifest)")),
            (Some((want, _)), Some((got, _))) if want != got => {
                differ.push(format!("{name} ({got} rows, the backup recorded {want})"))
            }
            (Some((_, want)), Some((rows, got))) if want != got => {
                differ.push(format!("{name} (the same {rows} rows, different content)"))
            }
            _ => {}
        }
    }
    if !differ.is_empty() {
        bail!(
            "it is damaged: its content differs from the manifest `socialite backup` recorded \
             in it, in {}",
            differ.join(", ")
        );
    }
    Ok(Verdict::Verified(recorded.len()))
}

/// Removes the manifest: it describes the copy as backed up, not the store it becomes.
pub fn remove(conn: &Connection) -> rusqlite::Result<()> {
    conn.execute_batch(&format!("DROP TABLE IF EXISTS {TABLE};"))
}
