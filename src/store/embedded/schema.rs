//! The embedded schema. Tables mirror the MongoDB collections: `buckets` plus
//! `bucket_entries` hold what a bucket document holds, `caches` plus `cache_entries`
//! what a `timeline_cache` document holds.

use rusqlite::Connection;

use super::timelines::{PART_BITS, idle, names, retractions, versions};

/// The file format this binary writes, kept in `PRAGMA user_version`. Every migration
/// below is idempotent and brings any older file (0: before the format was numbered) up
/// to it. Bump it when a migration changes how existing rows must be read, so that an
/// older binary refuses the file instead of misreading it. Version 2: renames are
/// recorded pending (`names::PENDING_RENAMES`), which a version-1 writer would not do.
/// Version 3: every write of a cache's entries moves its version (`caches.version`, see
/// `timelines::bump_version`), which a version-2 writer would not do. Version 4: graph
/// changes of flagged edges move their reader's cache version, and the posts and
/// renames of merged authors their merge version (`timelines::versions`), which a
/// version-3 writer would not do. Version 5: readers of the event log refuse the ids a
/// restore retired (`event_gaps`), which a version-4 reader would serve as a silent skip,
/// and caches record their owner's last read (`caches.last_read`, see
/// `timelines::idle`), which a version-4 writer would leave at 0, so that the sweep
/// would drop every cache it builds or reads. Version 6: blocks and mutes
/// (`relations_schema`), which a version-5 writer would let a follow ignore;
/// notifications and their groups (`notifications_schema`), which a version-5 writer
/// would leave stale; and posts that name the post they answer and count their
/// replies, with timeline entries carrying the parent's author
/// (`threads::replies_schema`), which a version-5 writer would leave out, so its
/// replies would escape the home rule and the counts. Version 7: reposts and the posts'
/// `reposts_count` (`reposts::reposts_schema`), which a version-6 writer would neither
/// count nor remove with their original. Version 8: timeline entries of reposts, whose
/// original the entry rows carry (`timelines::entries::repost_entries_schema`), which a
/// version-7 reader would serve as posts under the reposts' ids.
/// Version 9: users' password hashes and the OAuth tables (`oauth::oauth_schema`),
/// which a version-8 binary would not know, so its users could not sign in there.
/// Version 10: the tag index (`content::tags::tags_schema`, `post_tags`), filled from
/// the posts at the upgrade, which a version-9 writer would not keep, so the tag
/// timeline would miss its posts and serve deleted ones.
/// Version 11: posts' idempotency keys (`idempotency::post_keys_schema`), which an
/// older binary would not check, so a client's retry would post twice; and the likes of
/// a post by time (`activity::likes_by_post_schema`), an index only; and what users
/// dismissed and cleared of their notifications (`notifications::dismissals`), which an
/// older worker or rebuild would bring back; and OAuth refresh tokens
/// (`oauth::refresh_schema`).
/// Version 12: the display-name word index the account search reads
/// (`name_words::SCHEMA`), filled from the profiles at the upgrade, which an older
/// writer would not keep, so a new or renamed user would not be found by name.
/// Mastodon's markers (`markers::SCHEMA`) came without a new version: a table an older
/// binary neither reads nor writes, so it misreads nothing (it answers no markers, and
/// its backup copies the table with the rest of the file).
pub const SCHEMA_VERSION: i64 = 12;

/// The tables every socialite store has had since its first format: what tells a
/// socialite store from another SQLite file.
pub const CORE_TABLES: [&str; 5] = ["meta", "users", "follows", "posts", "changes"];

/// The file's format version, refused when a newer binary wrote it.
pub fn check_version(conn: &Connection) -> anyhow::Result<i64> {
    let version: i64 = conn.query_row("PRAGMA user_version", [], |row| row.get(0))?;
    anyhow::ensure!(
        (0..=SCHEMA_VERSION).contains(&version),
        "the store's format version is {version}, and this socialite reads versions up to \
         {SCHEMA_VERSION}: it was written by a newer socialite"
    );
    Ok(version)
}

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS meta (
    key   TEXT PRIMARY KEY,
    value ANY
) WITHOUT ROWID;

CREATE TABLE IF NOT EXISTS users (
    id              TEXT PRIMARY KEY,
    display_name    TEXT NOT NULL,
    followers_count INTEGER NOT NULL DEFAULT 0,
    following_count INTEGER NOT NULL DEFAULT 0,
    posts_count     INTEGER NOT NULL DEFAULT 0,
    created_at      INTEGER NOT NULL,
    version         INTEGER NOT NULL DEFAULT 0
) WITHOUT ROWID;

CREATE TABLE IF NOT EXISTS follows (
    follower   TEXT NOT NULL,
    followee   TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    PRIMARY KEY (follower, followee)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS follows_by_followee ON follows (followee, follower);

CREATE TABLE IF NOT EXISTS posts (
    id     BLOB PRIMARY KEY,
    author TEXT NOT NULL,
    text   TEXT NOT NULL
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS posts_by_author ON posts (author, id);

CREATE TABLE IF NOT EXISTS buckets (
    kind INTEGER NOT NULL,
    user TEXT NOT NULL,
    key  INTEGER NOT NULL,
    n    INTEGER NOT NULL,
    mn   BLOB NOT NULL,
    mx   BLOB NOT NULL,
    PRIMARY KEY (kind, user, key)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS buckets_by_newest ON buckets (kind, user, mx);

CREATE TABLE IF NOT EXISTS bucket_entries (
    kind    INTEGER NOT NULL,
    user    TEXT NOT NULL,
    key     INTEGER NOT NULL,
    post_id BLOB NOT NULL,
    author  TEXT NOT NULL,
    text    TEXT,
    PRIMARY KEY (kind, user, key, post_id)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS bucket_entries_by_post ON bucket_entries (post_id);
-- Removing an author's entries scans the (kind, user) primary-key prefix: one user's
-- timeline, so no author index is kept on the hot write path.
DROP INDEX IF EXISTS bucket_entries_by_author;

CREATE TABLE IF NOT EXISTS caches (
    user       TEXT PRIMARY KEY,
    ready      INTEGER NOT NULL,
    started_at INTEGER NOT NULL
) WITHOUT ROWID;

CREATE TABLE IF NOT EXISTS cache_entries (
    user    TEXT NOT NULL,
    post_id BLOB NOT NULL,
    author  TEXT NOT NULL,
    text    TEXT,
    PRIMARY KEY (user, post_id)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS cache_entries_by_post ON cache_entries (post_id);

-- Per author, the highest user version whose display name reached every timeline.
CREATE TABLE IF NOT EXISTS renames (
    user    TEXT PRIMARY KEY,
    version INTEGER NOT NULL
) WITHOUT ROWID;

-- The activity log: one head row per user (the primary document's counters and the
-- layout fixed at creation) and one row per entry, tagged with its slot (-1: primary).
CREATE TABLE IF NOT EXISTS activity_logs (
    user           TEXT PRIMARY KEY,
    primary_limit  INTEGER NOT NULL,
    page_size      INTEGER NOT NULL,
    primary_count  INTEGER NOT NULL DEFAULT 0,
    overflow_count INTEGER NOT NULL DEFAULT 0,
    overflow_pages INTEGER NOT NULL DEFAULT 0
) WITHOUT ROWID;

CREATE TABLE IF NOT EXISTS activity_entries (
    user TEXT NOT NULL,
    seq  INTEGER NOT NULL,
    page INTEGER NOT NULL,
    type TEXT NOT NULL,
    ts   INTEGER NOT NULL,
    ref  TEXT NOT NULL,
    PRIMARY KEY (user, seq)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS activity_entries_by_page ON activity_entries (user, page);

CREATE TABLE IF NOT EXISTS likes (
    user       TEXT NOT NULL,
    post       BLOB NOT NULL,
    created_at INTEGER NOT NULL,
    PRIMARY KEY (user, post)
) WITHOUT ROWID;

CREATE TABLE IF NOT EXISTS changes (
    pos  INTEGER PRIMARY KEY AUTOINCREMENT,
    ts   INTEGER NOT NULL,
    coll TEXT NOT NULL,
    op   TEXT NOT NULL,
    key  TEXT NOT NULL,
    doc  TEXT
);
";

pub fn migrate(conn: &Connection) -> anyhow::Result<()> {
    check_version(conn)?;
    conn.execute_batch(SCHEMA)?;
    conn.execute_batch(retractions::SCHEMA)?;
    // Timed periods are split into parts, stored as keys `period << PART_BITS | part`.
    // Buckets stored before that become part 0 of their period, once.
    let part = 1_i64 << PART_BITS;
    once(
        conn,
        "timed_bucket_parts",
        &format!(
            "UPDATE buckets SET key = key * {part} WHERE kind = 0;
             UPDATE bucket_entries SET key = key * {part} WHERE kind = 0;"
        ),
    )?;
    // Entries embed their author's display name (`name`) and the user version it was
    // read at (`name_v`); entries written before carry neither.
    // Whether the follow's backfill is done (see `GraphStore::mark_backfilled`).
    add_column(conn, "follows", "backfilled", "INTEGER NOT NULL DEFAULT 0")?;
    // The feed order of the newest change the counters worker recounted a user for.
    add_column(conn, "users", "counted_seq", "INTEGER NOT NULL DEFAULT -1")?;
    // Moved by every write to a user's counters, so a recount writes only where none
    // moved since it read the sources.
    add_column(
        conn,
        "users",
        "counter_version",
        "INTEGER NOT NULL DEFAULT 0",
    )?;
    for table in ["bucket_entries", "cache_entries"] {
        add_column(conn, table, "name", "TEXT")?;
        add_column(conn, table, "name_v", "INTEGER")?;
    }
    // Whether a cache holds its owner's whole timeline (see `feed::cache`); caches
    // written before the flag existed are taken as not complete, which is always safe.
    add_column(conn, "caches", "complete", "INTEGER NOT NULL DEFAULT 0")?;
    // Moved to a fresh random value by every write of the cache's entries (see
    // `timelines::bump_version`), so a page rendered from them can be served again while
    // it stands. Caches from before it hold 0 until their next write.
    add_column(conn, "caches", "version", "INTEGER NOT NULL DEFAULT 0")?;
    // The hybrid strategy's celebrities (see `GraphStore::reclassify`): `celebrity` now,
    // `merged` once ever, copied onto every edge to them, which a reader's page merges.
    add_column(conn, "users", "celebrity", "INTEGER NOT NULL DEFAULT 0")?;
    add_column(conn, "users", "merged", "INTEGER NOT NULL DEFAULT 0")?;
    add_column(conn, "follows", "merged", "INTEGER NOT NULL DEFAULT 0")?;
    // The flagged edges alone, covering (`merged` in the key too, or each entry costs a
    // read of its edge): a hybrid page reads its reader's celebrities from it.
    // `follows_merged`, the first form, did not cover.
    conn.execute_batch(
        "DROP INDEX IF EXISTS follows_merged;
         CREATE INDEX IF NOT EXISTS follows_flagged ON follows (follower, followee, merged)
             WHERE merged;",
    )?;
    // When each cache's owner last read it (see `timelines::idle`), and the index the
    // sweep of idle caches seeks. Caches from before it count as read when the file
    // was upgraded, once: they get a whole `feed.cache_idle` from then.
    add_column(conn, "caches", "last_read", "INTEGER NOT NULL DEFAULT 0")?;
    once(
        conn,
        "cache_last_read",
        "UPDATE caches SET last_read = CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER);",
    )?;
    conn.execute_batch(idle::SCHEMA)?;
    // What a kept hybrid page merges is versioned per merged author.
    conn.execute_batch(versions::SCHEMA)?;
    once(conn, "merge_versions", versions::MIGRATE)?;
    // How many caches exist, so a fan-out can walk the caches instead of the followers
    // when there are fewer of them.
    conn.execute_batch(
        "INSERT OR IGNORE INTO meta (key, value) SELECT 'cache_count', count(*) FROM caches;",
    )?;
    once(conn, "retraction_marks", retractions::MIGRATE)?;
    // Renames whose propagation was not recorded when the file was older are pending.
    conn.execute_batch(names::PENDING_RENAMES)?;
    relations_schema(conn)?;
    notifications_schema(conn)?;
    super::threads::replies_schema(conn)?;
    super::reposts::reposts_schema(conn)?;
    super::timelines::entries::repost_entries_schema(conn)?;
    super::oauth::oauth_schema(conn)?;
    super::content::tags::tags_schema(conn)?;
    super::idempotency::post_keys_schema(conn)?;
    super::activity::likes_by_post_schema(conn)?;
    conn.execute_batch(super::notifications::dismissals::SCHEMA)?;
    super::oauth::refresh_schema(conn)?;
    conn.execute_batch(super::markers::SCHEMA)?;
    super::name_words::migrate(conn)?;
    once(
        conn,
        "pending_renames",
        "INSERT OR IGNORE INTO pending_renames (user, version)
         SELECT u.id, u.version FROM users AS u LEFT JOIN renames AS r ON r.user = u.id
          WHERE u.version > IFNULL(r.version, 0);",
    )?;
    Ok(())
}

/// Format 6: the blocks and mutes tables (`embedded::relations`).
fn relations_schema(conn: &Connection) -> rusqlite::Result<()> {
    conn.execute_batch(super::relations::SCHEMA)
}

/// Format 6: the notifications worker's tables (`embedded/notifications.rs`). A store
/// upgraded from format 5 gets them empty; the worker, whose lease has no position yet,
/// starts at the oldest change the feed holds, or rebuilds from the sources when that is
/// not the store's first write (history lost, logged and counted).
fn notifications_schema(conn: &Connection) -> rusqlite::Result<()> {
    conn.execute_batch(super::notifications::SCHEMA)
}

/// Runs `batch`, a migration step that must run once per file, unless `meta` holds its
/// marker `key`; then records the marker, in the same savepoint. The marker is looked
/// up before the step: a marker test inside the step's statements does not stop SQLite
/// from scanning their tables at every start.
fn once(conn: &Connection, key: &str, batch: &str) -> rusqlite::Result<()> {
    let done: bool = conn.query_row(
        "SELECT EXISTS (SELECT 1 FROM meta WHERE key = ?1)",
        [key],
        |row| row.get(0),
    )?;
    if done {
        return Ok(());
    }
    conn.execute_batch(&format!(
        "SAVEPOINT once;
         {batch}
         INSERT OR IGNORE INTO meta (key, value) VALUES ('{key}', 1);
         RELEASE once;"
    ))
}

/// Records that the file is at [`SCHEMA_VERSION`]: called once every migration of
/// `EmbeddedStore::open` has run.
pub fn stamp_version(conn: &Connection) -> rusqlite::Result<()> {
    conn.execute_batch(&format!("PRAGMA user_version = {SCHEMA_VERSION};"))
}

/// Adds a column unless the table has it already.
pub(super) fn add_column(
    conn: &Connection,
    table: &str,
    column: &str,
    decl: &str,
) -> rusqlite::Result<()> {
    let exists: bool = conn.query_row(
        "SELECT count(*) > 0 FROM pragma_table_info(?1) WHERE name = ?2",
        [table, column],
        |row| row.get(0),
    )?;
    if !exists {
        conn.execute_batch(&format!("ALTER TABLE {table} ADD COLUMN {column} {decl}"))?;
    }
    Ok(())
}
