//! Event ids across a restore. An event's id is the `seq` of its change, and the copy's
//! change feed stops at the backup: left alone, the restored store would hand out again
//! the ids the replaced store issued after the backup, now naming other events, and a
//! client that had read up to one of them would silently skip what follows.
//!
//! So a restore moves the copy's change sequence past every id the replaced store could
//! have issued, and records the ids in between as retired (`event_gaps`): a reader
//! positioned at one gets `PositionLost` (410, a stream `reset`). The ids retired run
//! from after the copy's newest to the largest of:
//!
//! - the replaced store's newest id, when its file is there and readable;
//! - the copy's newest id;
//! - a floor from the clock, `now_ms × 1000`, for a restore onto a machine whose old
//!   store is lost or unreadable. It holds while the lost store issued no id at or
//!   above it: while it made fewer than 1000 changes per millisecond on average since
//!   its own floor (its last restore, or its creation at 0), and this machine's clock
//!   is not behind the clock of that restore.
//!
//! The next change is then two above the last id retired, so the position one above it,
//! which a rebuild may take as its watermark (the sequence), is retired by nobody.
//!
//! The workers are not disturbed: their positions are the copy's, at or below its newest
//! id, so none is in a gap; the change feed reads `pos > position`, from the copy's last
//! change straight to the first new one; `changes_trimmed_through` is untouched, so no
//! gap reads as history lost.

use rusqlite::{Connection, OptionalExtension};

use super::super::changes::advance_sequence;
use super::super::events::retire_ids;
use super::verify::has_table;

/// Ids per millisecond of the clock's floor.
const IDS_PER_MS: i64 = 1000;

/// The ids a restore retired: after `after`, through `through`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Retired {
    pub after: i64,
    pub through: i64,
}

/// The newest change-feed id the store open as `conn` handed out: its `changes`
/// sequence, which outlives trimmed rows, or its newest row; 0 without any.
pub(super) fn newest_issued(conn: &Connection) -> rusqlite::Result<i64> {
    if !has_table(conn, "changes")? {
        return Ok(0);
    }
    let seq: Option<i64> = if has_table(conn, "sqlite_sequence")? {
        conn.query_row(
            "SELECT seq FROM sqlite_sequence WHERE name = 'changes'",
            [],
            |row| row.get(0),
        )
        .optional()?
    } else {
        None
    };
    let newest: Option<i64> =
        conn.query_row("SELECT max(pos) FROM changes", [], |row| row.get(0))?;
    Ok(seq.unwrap_or(0).max(newest.unwrap_or(0)))
}

/// Retires, in the copy open as `conn` (at this binary's format), every id past its
/// newest that the replaced store (`replaced`: its newest id, when known) or a store
/// lost before `now_ms` could have issued.
pub(super) fn retire(
    conn: &Connection,
    replaced: Option<i64>,
    now_ms: i64,
) -> rusqlite::Result<Option<Retired>> {
    let after = newest_issued(conn)?;
    let floor = now_ms.max(0).saturating_mul(IDS_PER_MS);
    let through = after.max(replaced.unwrap_or(0)).max(floor);
    if through <= after {
        return Ok(None);
    }
    retire_ids(conn, after, through)?;
    advance_sequence(conn, through.saturating_add(1))?;
    Ok(Some(Retired { after, through }))
}
