//! The event log built from the sources: the newest `events.max_count` events the
//! sources stand for (`post.created` per post, naming what a reply answers,
//! `user.followed` per follow, `post.liked` per like, `post.reposted` per repost, each at
//! its source's time, with the payloads the events worker writes),
//! replacing the log. Its ids are fresh change-feed positions, taken by advancing the
//! `changes` sequence, so they sort after every event written before and before every
//! change written after. A reader whose position is in the old log is reset (its
//! position counts as trimmed), as it would be behind any trim.
//!
//! The four sources are read newest first and merged: a post or a repost by id, follows
//! and likes by time, so the log is written from its newest event down, one insert per
//! event.

use std::cmp::Ordering;

use rusqlite::{Connection, Row, params};
use serde::Serialize;

use super::allocated_head;
use crate::domain::{EventType, PostId, hashtags};
use crate::store::StoreResult;
use crate::store::embedded::{post_id_at, text_at};

#[derive(Serialize)]
struct PostCreated<'a> {
    post: PostId,
    author: &'a str,
    text: &'a str,
    tags: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    in_reply_to: Option<Parent<'a>>,
}

/// What a reply answers, as the events worker names it.
#[derive(Serialize)]
struct Parent<'a> {
    post: PostId,
    author: &'a str,
}

#[derive(Serialize)]
struct PostReposted<'a> {
    repost: PostId,
    user: &'a str,
    post: PostId,
    author: &'a str,
}

#[derive(Serialize)]
struct UserFollowed<'a> {
    follower: &'a str,
    followee: &'a str,
}

#[derive(Serialize)]
struct PostLiked<'a> {
    user: &'a str,
    post: PostId,
}

/// Which source an event comes from; the order of simultaneous events, oldest first.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Source {
    Post,
    Follow,
    Like,
    Repost,
}

fn meta(conn: &Connection, key: &str) -> rusqlite::Result<i64> {
    conn.prepare_cached("SELECT coalesce((SELECT value FROM meta WHERE key = ?1), 0)")?
        .query_row([key], |row| row.get(0))
}

fn set_meta(conn: &Connection, key: &str, value: i64) -> rusqlite::Result<()> {
    conn.prepare_cached(
        "INSERT INTO meta (key, value) VALUES (?1, ?2)
         ON CONFLICT (key) DO UPDATE SET value = excluded.value",
    )?
    .execute(params![key, value])?;
    Ok(())
}

/// The time of the event a source row stands for.
fn time_of(source: Source, row: &Row<'_>) -> rusqlite::Result<i64> {
    match source {
        Source::Post | Source::Repost => Ok(post_id_at(row, 0)?.timestamp_ms()),
        Source::Follow | Source::Like => row.get(2),
    }
}

/// Replaces the log; returns the events written and the new head of the change feed.
pub(super) fn rebuild_log(tx: &Connection, max_count: u64) -> StoreResult<(u64, i64)> {
    let base = allocated_head(tx)?;
    let total: i64 = tx.query_row(
        "SELECT (SELECT count(*) FROM posts) + (SELECT count(*) FROM follows)
              + (SELECT count(*) FROM likes) + (SELECT count(*) FROM reposts)",
        [],
        |row| row.get(0),
    )?;
    let n = (total.max(0) as u64).min(max_count) as i64;
    let head = base + n;
    let moved = tx
        .prepare_cached("UPDATE sqlite_sequence SET seq = ?1 WHERE name = 'changes'")?
        .execute([head])?;
    if moved == 0 {
        tx.prepare_cached("INSERT INTO sqlite_sequence (name, seq) VALUES ('changes', ?1)")?
            .execute([head])?;
    }
    let had_events = meta(tx, "events_count")? > 0;
    tx.execute_batch("DELETE FROM events;")?;
    if base > 0 || had_events {
        let trimmed = meta(tx, "events_trimmed_through")?.max(base + 1);
        set_meta(tx, "events_trimmed_through", trimmed)?;
    }
    let mut posts = tx.prepare(
        "SELECT id, author, text, reply_to, reply_to_author FROM posts ORDER BY id DESC",
    )?;
    let mut follows = tx.prepare(
        "SELECT follower, followee, created_at FROM follows
         ORDER BY created_at DESC, follower DESC, followee DESC LIMIT ?1",
    )?;
    let mut likes = tx.prepare(
        "SELECT user, post, created_at FROM likes
         ORDER BY created_at DESC, user DESC, post DESC LIMIT ?1",
    )?;
    let mut reposts =
        tx.prepare("SELECT id, user, post, post_author FROM reposts ORDER BY id DESC LIMIT ?1")?;
    let mut insert = tx.prepare_cached(
        "INSERT INTO events (id, type, at, post, payload) VALUES (?1, ?2, ?3, ?4, ?5)",
    )?;
    let (mut post_rows, mut follow_rows, mut like_rows, mut repost_rows) = (
        posts.query([])?,
        follows.query([n])?,
        likes.query([n])?,
        reposts.query([n])?,
    );
    let (mut post, mut follow, mut like, mut repost) = (
        post_rows.next()?,
        follow_rows.next()?,
        like_rows.next()?,
        repost_rows.next()?,
    );
    let mut payload: Vec<u8> = Vec::with_capacity(256);
    let mut id = head;
    while id > base {
        // The newest of the four heads; of simultaneous ones, the source written last.
        let mut pick: Option<(i64, Source)> = None;
        for (source, row) in [
            (Source::Post, post),
            (Source::Follow, follow),
            (Source::Like, like),
            (Source::Repost, repost),
        ] {
            let Some(row) = row else { continue };
            let at = time_of(source, row)?;
            let newer = pick.is_none_or(|best| (at, source).cmp(&best) == Ordering::Greater);
            if newer {
                pick = Some((at, source));
            }
        }
        let Some((at, source)) = pick else { break };
        payload.clear();
        let (kind, post_key) = match source {
            Source::Post => {
                let row = post.expect("picked");
                let (id, text) = (post_id_at(row, 0)?, text_at(row, 2)?);
                let in_reply_to = match row.get_ref(3)? {
                    rusqlite::types::ValueRef::Null => None,
                    _ => Some(Parent {
                        post: post_id_at(row, 3)?,
                        author: text_at(row, 4)?,
                    }),
                };
                let event = PostCreated {
                    post: id,
                    author: text_at(row, 1)?,
                    text,
                    tags: hashtags(text),
                    in_reply_to,
                };
                serde_json::to_writer(&mut payload, &event)
                    .map_err(|e| crate::store::StoreError::Backend(e.into()))?;
                (EventType::PostCreated, Some(id.bytes()))
            }
            Source::Follow => {
                let row = follow.expect("picked");
                let event = UserFollowed {
                    follower: text_at(row, 0)?,
                    followee: text_at(row, 1)?,
                };
                serde_json::to_writer(&mut payload, &event)
                    .map_err(|e| crate::store::StoreError::Backend(e.into()))?;
                (EventType::UserFollowed, None)
            }
            Source::Like => {
                let row = like.expect("picked");
                let event = PostLiked {
                    user: text_at(row, 0)?,
                    post: post_id_at(row, 1)?,
                };
                serde_json::to_writer(&mut payload, &event)
                    .map_err(|e| crate::store::StoreError::Backend(e.into()))?;
                (EventType::PostLiked, None)
            }
            Source::Repost => {
                let row = repost.expect("picked");
                let event = PostReposted {
                    repost: post_id_at(row, 0)?,
                    user: text_at(row, 1)?,
                    post: post_id_at(row, 2)?,
                    author: text_at(row, 3)?,
                };
                serde_json::to_writer(&mut payload, &event)
                    .map_err(|e| crate::store::StoreError::Backend(e.into()))?;
                (EventType::PostReposted, None)
            }
        };
        let text = std::str::from_utf8(&payload).unwrap_or_default();
        let post_key = post_key.as_ref().map(|b| &b[..]);
        insert.execute(params![id, kind.as_str(), at, post_key, text])?;
        match source {
            Source::Post => post = post_rows.next()?,
            Source::Follow => follow = follow_rows.next()?,
            Source::Like => like = like_rows.next()?,
            Source::Repost => repost = repost_rows.next()?,
        }
        id -= 1;
    }
    let written = head - id;
    set_meta(tx, "events_count", written)?;
    Ok((written as u64, head))
}
