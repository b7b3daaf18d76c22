//! Every notification of a load on SQLite, set-based: the standing causes staged in a
//! temporary table (follows and likes by one `INSERT ... SELECT` each; reposts by one
//! scan of the reposts joined to their originals, dated by their ids; replies and
//! mentions by one scan of the posts that answer one or hold an `@`, parsed by the
//! domain's rule), then a chunk of recipients per transaction ranked into rebuilt ids and
//! written with their groups (`store::bulk::rebuilt_for_user`): exactly
//! `derived::notifications::rebuilt`.
//!
//! The notifications worker's rebuild ([`rebuild`]) is the same steps under its fence:
//! the causes staged in one write, then each chunk of recipients' notifications and
//! groups deleted and written anew in one transaction, so a reader sees each recipient's
//! old notifications or new ones, never none. The temporary table lives on the writer
//! connection, in SQLite's temporary file (the store sets no `temp_store`), so memory
//! stays bounded by its page cache and one recipient's causes.

use rusqlite::{Connection, params};

use crate::domain::{Fence, NotificationType, ReplyTo, mention_counts, post_notifies};
use crate::store::bulk::{Cause, rebuilt_for_user};
use crate::store::embedded::EmbeddedStore;
use crate::store::embedded::leases::check_fence;
use crate::store::embedded::notifications::dismissals::dismissals_of;
use crate::store::embedded::notifications::insert_all;
use crate::store::embedded::rows::post_id_at;
use crate::store::{RebuildBounds, StoreResult};

use super::ChunkRead;

const STAGE: &str = "
DROP TABLE IF EXISTS temp.bulk_causes;
CREATE TEMP TABLE bulk_causes (
    user  TEXT NOT NULL,
    kind  INTEGER NOT NULL,
    actor TEXT NOT NULL,
    post  BLOB NOT NULL,
    at    INTEGER NOT NULL
);
INSERT INTO temp.bulk_causes (user, kind, actor, post, at)
     SELECT followee, 0, follower, x'', created_at FROM follows WHERE followee <> follower;
INSERT INTO temp.bulk_causes (user, kind, actor, post, at)
     SELECT p.author, 1, l.user, l.post, l.created_at
       FROM likes AS l JOIN posts AS p ON p.id = l.post
      WHERE p.author <> l.user;
";

fn code(kind: NotificationType) -> i64 {
    match kind {
        NotificationType::Follow => 0,
        NotificationType::Like => 1,
        NotificationType::Repost => 2,
        NotificationType::Reply => 3,
        NotificationType::Mention => 4,
    }
}

fn kind_of(code: i64) -> rusqlite::Result<NotificationType> {
    NotificationType::ALL
        .into_iter()
        .find(|k| self::code(*k) == code)
        .ok_or_else(|| rusqlite::Error::IntegralValueOutOfRange(1, code))
}

/// Stages every cause; returns how many.
pub(super) fn stage(tx: &Connection) -> StoreResult<u64> {
    tx.execute_batch(STAGE)?;
    let mut insert = tx.prepare_cached(
        "INSERT INTO temp.bulk_causes (user, kind, actor, post, at) VALUES (?1, ?2, ?3, ?4, ?5)",
    )?;
    let mut reposts = tx.prepare(
        "SELECT r.id, r.user, p.id, p.author FROM reposts AS r JOIN posts AS p ON p.id = r.post
          WHERE p.author <> r.user",
    )?;
    let mut rows = reposts.query([])?;
    while let Some(row) = rows.next()? {
        let (id, user, post) = (
            post_id_at(row, 0)?,
            row.get::<_, String>(1)?,
            post_id_at(row, 2)?,
        );
        let author: String = row.get(3)?;
        let kind = code(NotificationType::Repost);
        insert.execute(params![
            author,
            kind,
            user,
            &post.bytes()[..],
            id.timestamp_ms()
        ])?;
    }
    drop(rows);
    let mut created = tx.prepare_cached("SELECT created_at FROM users WHERE id = ?1")?;
    let mut posts = tx.prepare(
        "SELECT id, author, text, reply_to, reply_to_author FROM posts
          WHERE reply_to IS NOT NULL OR instr(text, '@') > 0",
    )?;
    let mut rows = posts.query([])?;
    while let Some(row) = rows.next()? {
        let id = post_id_at(row, 0)?;
        let (author, text): (String, String) = (row.get(1)?, row.get(2)?);
        let parent: Option<Vec<u8>> = row.get(3)?;
        let reply_to = match (parent, row.get::<_, Option<String>>(4)?) {
            (Some(_), Some(parent_author)) => Some(ReplyTo {
                post: post_id_at(row, 3)?,
                author: parent_author,
            }),
            _ => None,
        };
        let at = id.timestamp_ms();
        for (user, kind) in post_notifies(&author, &text, reply_to.as_ref()) {
            if kind == NotificationType::Mention {
                let user_created: Option<i64> = created
                    .query_row([&user], |r| r.get(0))
                    .map(Some)
                    .or_else(|e| match e {
                        rusqlite::Error::QueryReturnedNoRows => Ok(None),
                        e => Err(e),
                    })?;
                if !user_created.is_some_and(|c| mention_counts(c, at)) {
                    continue;
                }
            }
            insert.execute(params![user, code(kind), author, &id.bytes()[..], at])?;
        }
    }
    let staged: i64 = tx.query_row("SELECT count(*) FROM temp.bulk_causes", [], |r| r.get(0))?;
    tx.execute_batch("CREATE INDEX temp.bulk_causes_by_user ON bulk_causes (user);")?;
    Ok(staged as u64)
}

const CHUNK_CAUSES: ChunkRead = ChunkRead {
    column: "user",
    sql: "SELECT user, kind, actor, post, at FROM temp.bulk_causes WHERE {chunk} ORDER BY user",
};

/// Writes the notifications of the recipients in `(after, through]`; returns how many.
pub(super) fn write_chunk(tx: &Connection, after: &str, through: Option<&str>) -> StoreResult<u64> {
    let mut statement = tx.prepare_cached(&CHUNK_CAUSES.sql(through))?;
    let mut rows = statement.query(params![after, through])?;
    let mut written = 0;
    let mut current: Option<(String, Vec<Cause>)> = None;
    let mut flush = |current: Option<(String, Vec<Cause>)>| -> StoreResult<()> {
        if let Some((user, causes)) = current {
            let dismissals = dismissals_of(tx, &user)?;
            let notifications = rebuilt_for_user(&user, causes, &dismissals);
            written += notifications.len() as u64;
            insert_all(tx, &notifications)?;
        }
        Ok(())
    };
    while let Some(row) = rows.next()? {
        let user: String = row.get(0)?;
        let post = match row.get::<_, Vec<u8>>(3)?.is_empty() {
            true => None,
            false => Some(post_id_at(row, 3)?),
        };
        let cause = Cause {
            at_ms: row.get(4)?,
            kind: kind_of(row.get(1)?)?,
            actor: row.get(2)?,
            post,
        };
        match &mut current {
            Some((owner, causes)) if *owner == user => causes.push(cause),
            _ => {
                flush(current.take())?;
                current = Some((user, vec![cause]));
            }
        }
    }
    flush(current)?;
    Ok(written)
}

/// Drops the staged causes.
pub(super) fn unstage(tx: &Connection) -> StoreResult<()> {
    tx.execute_batch("DROP TABLE IF EXISTS temp.bulk_causes;")?;
    Ok(())
}

/// Deletes every notification and group (a load's first step).
pub(super) fn clear(tx: &Connection) -> StoreResult<()> {
    tx.execute_batch("DELETE FROM notifications; DELETE FROM notification_groups;")?;
    Ok(())
}

/// Deletes the notifications and groups of the recipients in `(after, through]`.
fn clear_range(tx: &Connection, after: &str, through: Option<&str>) -> StoreResult<()> {
    for table in ["notifications", "notification_groups"] {
        let sql = match through {
            Some(_) => format!("DELETE FROM {table} WHERE user > ?1 AND user <= ?2"),
            None => format!("DELETE FROM {table} WHERE user > ?1 AND ?2 IS NULL"),
        };
        tx.prepare_cached(&sql)?.execute(params![after, through])?;
    }
    Ok(())
}

/// The notifications worker's rebuild: every notification replaced by those the
/// sources imply, `bounds.per_write` recipients per transaction, each transaction
/// fenced. Returns how many were written.
pub(in crate::store::embedded) async fn rebuild(
    store: &EmbeddedStore,
    fence: &Fence,
    bounds: RebuildBounds,
) -> StoreResult<u64> {
    let staging = fence.clone();
    store
        .write(move |tx| {
            check_fence(tx, &staging.lease, &staging.holder, staging.version)?;
            stage(tx)
        })
        .await?;
    let written = write_ranges(store, fence, bounds.per_write.max(1) as i64).await;
    store.write(|tx| unstage(tx)).await?;
    written
}

async fn write_ranges(store: &EmbeddedStore, fence: &Fence, size: i64) -> StoreResult<u64> {
    let (mut after, mut total) = (String::new(), 0);
    loop {
        let fence = fence.clone();
        let (written, through) = store
            .write(move |tx| {
                check_fence(tx, &fence.lease, &fence.holder, fence.version)?;
                let through = super::derive::chunk_end(tx, &after, size)?;
                clear_range(tx, &after, through.as_deref())?;
                let written = write_chunk(tx, &after, through.as_deref())?;
                Ok((written, through))
            })
            .await?;
        total += written;
        match through {
            Some(through) => after = through,
            None => return Ok(total),
        }
    }
}
