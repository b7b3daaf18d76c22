//! Every paged read seeks its index. A page bound SQLite's planner cannot use, such as
//! `(?1 IS NULL OR id > ?1)`, makes each page scan from the start of its table, so a
//! walk over a table by pages reads it once per page: quadratic, harmless on a test's
//! data and hours at 1,000,000 users. The query plans say so without any data.

use rusqlite::Connection;

use super::bulk::activity::{LOG_FOLLOWS, LOG_LIKES, LOG_POSTS};
use super::bulk::{CHUNK_USERS, ChunkRead};
use super::{activity, audit, content, deliveries, graph, likers, relations, reposts, timelines};

/// The plan's lines.
fn plan(conn: &Connection, sql: &str) -> Vec<String> {
    let mut stmt = conn
        .prepare(&format!("EXPLAIN QUERY PLAN {sql}"))
        .unwrap_or_else(|e| panic!("{e}: {sql}"));
    // Planned before any value is bound, as a prepared statement is.
    let unbound = vec![rusqlite::types::Null; stmt.parameter_count()];
    let rows = stmt
        .query_map(rusqlite::params_from_iter(unbound), |row| {
            row.get::<_, String>(3)
        })
        .unwrap();
    rows.map(Result::unwrap).collect()
}

/// The plan's lines that read a whole table (a constant row is not a table).
fn scans(conn: &Connection, sql: &str) -> Vec<String> {
    let mut lines = plan(conn, sql);
    lines.retain(|line| line.starts_with("SCAN ") && line != "SCAN CONSTANT ROW");
    lines
}

#[test]
fn every_paged_read_seeks_its_index() {
    let conn = Connection::open_in_memory().unwrap();
    super::set_up(&conn).unwrap();
    let mut paged: Vec<String> = vec![
        audit::USERS_AFTER.clone(),
        super::users::ACCOUNTS_BY_PREFIX.clone(),
        super::name_words::ENTRIES.into(),
        audit::FOLLOW_EDGES.into(),
        audit::LIKES_OF.into(),
        audit::POSTS_AFTER.into(),
        audit::TAGS_AFTER.into(),
        audit::TAG_INDEX_AFTER.into(),
        audit::NOTIFICATION_HELD.into(),
        activity::LIKE_HELD.into(),
        likers::LIKERS.into(),
        likers::LIKERS_BEFORE.into(),
        likers::LIKERS_AFTER.into(),
        graph::FOLLOWING.into(),
        graph::FOLLOWERS.into(),
        graph::FOLLOWING_BELOW.into(),
        graph::FOLLOWERS_BELOW.into(),
        relations::BLOCKS_OLDER.into(),
        relations::BLOCKS_NEWER.into(),
        relations::MUTES_OLDER.into(),
        relations::MUTES_NEWER.into(),
        reposts::REPOSTS_OF_POST_NEWER.into(),
        reposts::REPOSTS_OF_POST.into(),
        reposts::merged::MERGED_REPOSTERS.into(),
        reposts::merged::REPOST_IDS_BY_USER.into(),
        audit::REPLY_COUNT.into(),
        deliveries::UNDELIVERED.into(),
        deliveries::ORPHANED.into(),
        content::POSTS_BY_AUTHOR.into(),
        content::POST_IDS_BY_AUTHOR.into(),
        content::HOME_POSTS.into(),
        content::home::SHOWN_AUTHORS.into(),
        content::home::POST_WITH_NAME.into(),
        content::MERGED_FOLLOWEES.into(),
        timelines::BUCKET_HEADS.into(),
        timelines::BUCKET_ENTRIES.into(),
    ];
    paged.extend(timelines::names::CACHE_PAGE.iter().cloned());
    paged.push(super::users::accounts_sql(3));
    let chunked: [&ChunkRead; 4] = [&CHUNK_USERS, &LOG_POSTS, &LOG_FOLLOWS, &LOG_LIKES];
    for read in chunked {
        // A chunk's range must end at its last user, or each chunk reads on to the end
        // of the table.
        let bounded = read.sql(Some("u5"));
        let end = format!("{}<?", read.column);
        let lines = plan(&conn, &bounded);
        assert!(
            lines.iter().any(|line| line.contains(&end)),
            "a chunk's range does not end: {lines:?}: {bounded}"
        );
        paged.push(bounded);
        paged.push(read.sql(None));
    }
    let faults: Vec<String> = paged
        .iter()
        .flat_map(|sql| {
            scans(&conn, sql)
                .into_iter()
                .map(move |s| format!("{s}: {sql}"))
        })
        .collect();
    assert!(
        faults.is_empty(),
        "paged reads that scan:\n{}",
        faults.join("\n")
    );
}

/// A hybrid page finds the reader's celebrities through the partial index of flagged
/// edges, never by walking all of the reader's edges.
/// A kept page's check walks the pending renames first, and the page's span of rows
/// only for each of them: with none pending, it reads no row of the cache.
#[test]
fn a_kept_page_check_reads_its_rows_only_for_a_pending_rename() {
    let conn = Connection::open_in_memory().unwrap();
    super::set_up(&conn).unwrap();
    for sql in [
        timelines::versions::CACHE_VERSION,
        timelines::versions::CACHE_AND_CLOCK,
    ] {
        let lines = plan(&conn, sql);
        let at = |prefix: &str| lines.iter().position(|l| l.starts_with(prefix));
        let (renames, rows) = (at("SCAN r"), at("SEARCH e USING PRIMARY KEY"));
        assert!(
            matches!((renames, rows), (Some(r), Some(e)) if r < e),
            "{lines:?}: {sql}"
        );
    }
}

#[test]
fn a_hybrid_page_reads_only_the_flagged_edges() {
    let conn = Connection::open_in_memory().unwrap();
    super::set_up(&conn).unwrap();
    for sql in [content::MERGED_FOLLOWEES, reposts::merged::MERGED_REPOSTERS] {
        let lines = plan(&conn, sql);
        assert!(
            lines
                .iter()
                .any(|l| l.starts_with("SEARCH f USING COVERING INDEX follows_flagged")),
            "{lines:?}: {sql}"
        );
    }
}

/// An account's last status is one seek of each author index per user: no scan, no
/// sort; by ids or by a range of ids (in id order, from the index).
#[test]
fn an_accounts_last_status_seeks_the_author_indexes() {
    let conn = Connection::open_in_memory().unwrap();
    super::set_up(&conn).unwrap();
    let by_prefix = super::users::ACCOUNTS_BY_PREFIX.clone();
    for sql in [super::users::accounts_sql(2), by_prefix.clone()] {
        let lines = plan(&conn, &sql);
        for index in [
            "SEARCH posts USING COVERING INDEX posts_by_author (author=?)",
            "SEARCH reposts USING COVERING INDEX reposts_by_user_id (user=?)",
        ] {
            assert!(lines.iter().any(|l| l == index), "{lines:?}: {sql}");
        }
        assert!(
            !lines.iter().any(|l| l.contains("TEMP B-TREE")),
            "{lines:?}: {sql}"
        );
    }
    let lines = plan(&conn, &by_prefix);
    let range = "SEARCH users USING PRIMARY KEY (id>? AND id<?)";
    assert!(lines.iter().any(|l| l == range), "{lines:?}: {by_prefix}");
}
