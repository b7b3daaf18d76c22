//! The display-name word index on SQLite: `name_words (word, user)`, one row per
//! distinct word of a user's name (`domain::name_words`), keyed in (word, user) order,
//! which is the order the account search serves. Every write of a display name (a
//! user's creation, a rename, a bulk load) writes its words in the same transaction,
//! so the index never differs from the profiles. `name_words_by_user` finds a user's
//! rows to replace them.

use rusqlite::{Connection, params};

use super::{IN_CHUNK, placeholders};
use crate::domain::{name_words, word_prefix_end};
use crate::store::NameWord;

pub(super) const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS name_words (
    word TEXT NOT NULL,
    user TEXT NOT NULL,
    PRIMARY KEY (word, user)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS name_words_by_user ON name_words (user, word);
";

/// A range of the primary key from a lower bound (exclusive) below a prefix's end
/// (`plans.rs` checks that it seeks).
pub(super) const ENTRIES: &str = "
SELECT word, user FROM name_words
WHERE (word, user) > (?1, ?2) AND word < ?3
ORDER BY word, user LIMIT ?4";

/// Replaces `user`'s rows with the words of `name`; answers the rows written or
/// removed beyond those that stay.
pub(super) fn write_words(conn: &Connection, user: &str, name: &str) -> rusqlite::Result<u64> {
    let words = name_words(name);
    let held: Vec<String> = conn
        .prepare_cached("SELECT word FROM name_words WHERE user = ?1")?
        .query_map([user], |row| row.get(0))?
        .collect::<rusqlite::Result<_>>()?;
    let mut changed = 0;
    let mut remove = conn.prepare_cached("DELETE FROM name_words WHERE word = ?1 AND user = ?2")?;
    for word in held.iter().filter(|w| !words.contains(w)) {
        changed += remove.execute(params![word, user])?;
    }
    let mut insert = conn.prepare_cached(
        "INSERT INTO name_words (word, user) VALUES (?1, ?2) ON CONFLICT DO NOTHING",
    )?;
    for word in &words {
        changed += insert.execute(params![word, user])?;
    }
    Ok(changed as u64)
}

/// Up to `limit` entries whose word starts with `prefix`, strictly after `after`.
pub(super) fn entries(
    conn: &Connection,
    prefix: &str,
    after: Option<&NameWord>,
    limit: usize,
) -> rusqlite::Result<Vec<NameWord>> {
    // No user id is empty, so (prefix, "") is below every entry of the prefix.
    let (from_word, from_user) = match after {
        Some(after) if after.word.as_str() >= prefix => (after.word.as_str(), after.user.as_str()),
        _ => (prefix, ""),
    };
    let end = word_prefix_end(prefix);
    conn.prepare_cached(ENTRIES)?
        .query_map(
            params![from_word, from_user, end, limit as i64],
            entry_from_row,
        )?
        .collect()
}

fn entry_from_row(row: &rusqlite::Row<'_>) -> rusqlite::Result<NameWord> {
    Ok(NameWord {
        word: row.get(0)?,
        user: row.get(1)?,
    })
}

/// The rows held for `users`, in no order.
pub(super) fn of_users(conn: &Connection, users: &[String]) -> rusqlite::Result<Vec<NameWord>> {
    let mut found = Vec::new();
    for chunk in users.chunks(IN_CHUNK) {
        let sql = format!(
            "SELECT word, user FROM name_words WHERE user IN ({})",
            placeholders(chunk.len())
        );
        let mut stmt = conn.prepare_cached(&sql)?;
        let rows = stmt.query_map(rusqlite::params_from_iter(chunk), entry_from_row)?;
        for row in rows {
            found.push(row?);
        }
    }
    Ok(found)
}

/// Writes the words of each of `users` from their profile as it stands (an unknown
/// user's rows removed).
pub(super) fn sync(conn: &Connection, users: &[String]) -> rusqlite::Result<u64> {
    let mut changed = 0;
    let mut name = conn.prepare_cached("SELECT display_name FROM users WHERE id = ?1")?;
    for user in users {
        let found: Option<String> = name
            .query_map([user], |row| row.get(0))?
            .next()
            .transpose()?;
        changed += match found {
            Some(display_name) => write_words(conn, user, &display_name)?,
            None => conn.execute("DELETE FROM name_words WHERE user = ?1", [user])? as u64,
        };
    }
    Ok(changed)
}

/// Every user's rows written again, and the rows of no user removed: at the upgrade
/// that made the table, and as the rebuild.
pub(super) fn rebuild(conn: &Connection) -> rusqlite::Result<u64> {
    let mut changed = conn.execute(
        "DELETE FROM name_words WHERE user NOT IN (SELECT id FROM users)",
        [],
    )? as u64;
    let users: Vec<(String, String)> = conn
        .prepare("SELECT id, display_name FROM users")?
        .query_map([], |row| Ok((row.get(0)?, row.get(1)?)))?
        .collect::<rusqlite::Result<_>>()?;
    for (user, display_name) in &users {
        changed += write_words(conn, user, display_name)?;
    }
    Ok(changed)
}

/// The schema, and once per file the rows of the users it already holds (format 12).
pub(super) fn migrate(conn: &Connection) -> rusqlite::Result<()> {
    conn.execute_batch(SCHEMA)?;
    let done: bool = conn.query_row(
        "SELECT EXISTS (SELECT 1 FROM meta WHERE key = 'name_words')",
        [],
        |row| row.get(0),
    )?;
    if done {
        return Ok(());
    }
    conn.execute_batch("SAVEPOINT name_words")?;
    rebuild(conn)?;
    conn.execute_batch(
        "INSERT OR IGNORE INTO meta (key, value) VALUES ('name_words', 1);
         RELEASE name_words;",
    )
}
