//! The reposts file of `socialite import`: one repost per line, `{"user": "u2", "post":
//! "65a1...", "created_at": 1700000000000}`, or with `"id"`, the repost's own id.
//!
//! A repost's id is in the posts' id space, and its time is the repost's: given as `id`,
//! it is checked like a post's (with a `created_at` beside it, the two must agree);
//! otherwise it is minted at `created_at` (or the import's start) like a post id, its
//! last 6 bytes the first 6 of SHA-256(user, NUL, post id), so the same line mints the
//! same id on every run. Either way it must be later than the post it reposts.

use std::borrow::Cow;

use serde::Deserialize;

use super::{LineError, new_post_id, parse, post_id, time};
use crate::domain::{PostId, validate_user_id};
use crate::store::bulk::{RepostRow, Rows};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RepostLine<'a> {
    #[serde(borrow, default)]
    id: Option<Cow<'a, str>>,
    #[serde(borrow)]
    user: Cow<'a, str>,
    #[serde(borrow)]
    post: Cow<'a, str>,
    created_at: Option<i64>,
}

/// The id of a repost line that gives none: minted at `at_ms` like a post id, its last
/// 6 bytes a hash of the reposter and the post, the same on every run.
pub fn minted_repost_id(at_ms: i64, user: &str, post: PostId) -> PostId {
    use sha2::{Digest, Sha256};
    let mut hash = Sha256::new();
    hash.update(user.as_bytes());
    hash.update([0]);
    hash.update(post.bytes());
    let digest = hash.finalize();
    let mut tail = [0u8; 8];
    tail[2..].copy_from_slice(&digest[..6]);
    PostId::at(at_ms, u64::from_be_bytes(tail))
}

pub fn repost(line: &str, rows: &mut Rows<RepostRow>, now: i64) -> Result<(), LineError> {
    let parsed: RepostLine<'_> = parse(line)?;
    validate_user_id(&parsed.user)?;
    let post = post_id(&parsed.post).map_err(|e| format!("post: {e}"))?;
    let id = match parsed.id.as_deref() {
        Some(text) => {
            let id = new_post_id(text, now)?;
            if let Some(at) = parsed.created_at
                && at != id.timestamp_ms()
            {
                return Err(format!(
                    "created_at {at} is not the time of id {id} ({}): a repost's time is its \
                     id's",
                    id.timestamp_ms()
                ));
            }
            id
        }
        None => minted_repost_id(time(parsed.created_at, now)?, &parsed.user, post),
    };
    if id <= post {
        return Err(format!(
            "the repost {id} is not later than post {post}: a repost is made after the post it \
             passes on"
        ));
    }
    let user = rows.intern(&parsed.user);
    rows.push(RepostRow { id, user, post });
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_repost_is_later_than_its_post_and_its_id_agrees_with_its_time() {
        let now = 1_700_000_000_000;
        let post = PostId::at(now - 10_000, 1);
        let mut rows = Rows::default();
        let line = format!(
            r#"{{"user":"a","post":"{post}","created_at":{}}}"#,
            now - 5000
        );
        repost(&line, &mut rows, now).unwrap();
        repost(&line, &mut rows, now).unwrap();
        assert_eq!(
            rows.rows()[0].id,
            rows.rows()[1].id,
            "minted alike on every run"
        );
        assert_eq!(rows.rows()[0].id.timestamp_ms(), now - 5000);
        let early = format!(
            r#"{{"user":"a","post":"{post}","created_at":{}}}"#,
            now - 20_000
        );
        assert!(
            repost(&early, &mut rows, now)
                .unwrap_err()
                .contains("not later than")
        );
        let id = PostId::at(now - 1000, 9);
        let given = format!(r#"{{"id":"{id}","user":"a","post":"{post}","created_at":{now}}}"#);
        assert!(
            repost(&given, &mut rows, now)
                .unwrap_err()
                .contains("is not the time of id")
        );
        let given = format!(r#"{{"id":"{id}","user":"a","post":"{post}"}}"#);
        repost(&given, &mut rows, now).unwrap();
        assert_eq!(rows.rows()[2].id, id);
        assert_ne!(
            minted_repost_id(now, "a", post),
            minted_repost_id(now, "b", post)
        );
    }
}
