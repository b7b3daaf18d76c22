//! The JSON Lines formats of `socialite import`: one JSON object per line, unknown
//! fields refused, every id and text held to the rules the API applies.
//!
//! - **users**: `display_name` defaults to the id.
//!   ```text
//!   {"id": "u1", "display_name": "Ann", "created_at": 1700000000000}
//!   ```
//! - **follows**: no self-follows.
//!   ```text
//!   {"follower": "u2", "followee": "u1", "created_at": 1700000000000}
//!   ```
//! - **posts**: `id`: 24 hex digits; its first 6 bytes are the time.
//!   ```text
//!   {"id": "65a1...", "author": "u1", "text": "hello"}
//!   ```
//! - **likes**
//!   ```text
//!   {"user": "u2", "post": "65a1...", "created_at": 1700000000000}
//!   ```
//! - **posts (a reply)**: the parent is an earlier post.
//!   ```text
//!   {"id": "65a2...", "author": "u2", "text": "yes", "in_reply_to": "65a1..."}
//!   ```
//! - **blocks**: no self-blocks.
//!   ```text
//!   {"user": "u1", "other": "u2", "created_at": 1700000000000}
//!   ```
//! - **mutes**: `notifications` defaults to true; no `until`: for ever. Two lines:
//!   ```text
//!   {"user": "u1", "other": "u2", "created_at": 1700000000000, "notifications": false}
//!   {"user": "u1", "other": "u2", "created_at": 1700000000000, "until": 1700003600000}
//!   ```
//! - **reposts**: or with `"id": "65a3..."`, the repost's own id; the post is an earlier one.
//!   ```text
//!   {"user": "u2", "post": "65a1...", "created_at": 1700000000000}
//!   ```
//!
//! `created_at` (milliseconds since the epoch) is optional and defaults to the time the
//! import started. A post's time is its id's, as for posts made through the API: 4 bytes
//! of Unix seconds, 2 bytes of milliseconds (below 1000), 6 bytes of anything. A
//! repost's id is checked, or minted, as `lines/reposts.rs` says.
//!
//! **Times** (a `created_at`, a post id's time) must lie in the range the service keeps
//! (`domain::time`: from 1970-01-01T00:00:00.000Z up to, not including,
//! 2100-01-01T00:00:00.000Z) and be no later than the import's start plus 5 minutes of
//! clock skew: a time in the future would sort above everything written until then, and
//! a post id in the future would date every post made afterwards.

use std::borrow::Cow;

use serde::Deserialize;

use crate::domain::relations::MuteSettings;
use crate::domain::{
    PostId, check_time_at, check_time_ms, validate_display_name, validate_post_text,
    validate_user_id,
};
use crate::store::bulk::{FollowRow, LikeRow, PostRow, RelationRow, Rows, UserRow};

mod reposts;
pub use reposts::repost;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct UserLine<'a> {
    #[serde(borrow)]
    id: Cow<'a, str>,
    #[serde(borrow, default)]
    display_name: Option<Cow<'a, str>>,
    created_at: Option<i64>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FollowLine<'a> {
    #[serde(borrow)]
    follower: Cow<'a, str>,
    #[serde(borrow)]
    followee: Cow<'a, str>,
    created_at: Option<i64>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PostLine<'a> {
    #[serde(borrow)]
    id: Cow<'a, str>,
    #[serde(borrow)]
    author: Cow<'a, str>,
    #[serde(borrow)]
    text: Cow<'a, str>,
    #[serde(borrow, default)]
    in_reply_to: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct BlockLine<'a> {
    #[serde(borrow)]
    user: Cow<'a, str>,
    #[serde(borrow)]
    other: Cow<'a, str>,
    created_at: Option<i64>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct MuteLine<'a> {
    #[serde(borrow)]
    user: Cow<'a, str>,
    #[serde(borrow)]
    other: Cow<'a, str>,
    created_at: Option<i64>,
    notifications: Option<bool>,
    until: Option<i64>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct LikeLine<'a> {
    #[serde(borrow)]
    user: Cow<'a, str>,
    #[serde(borrow)]
    post: Cow<'a, str>,
    created_at: Option<i64>,
}

/// Why a line was refused; the caller adds the file and line number.
pub type LineError = String;

fn parse<'a, T: Deserialize<'a>>(line: &'a str) -> Result<T, LineError> {
    serde_json::from_str(line).map_err(|error| {
        let text = error.to_string();
        // The position within the line, not serde's "line 1".
        let message = text
            .rsplit_once(" at line ")
            .map_or(text.as_str(), |(m, _)| m);
        if error.is_eof() {
            format!("the JSON object ends early ({message}): is the file cut short?")
        } else {
            format!("column {}: {message}", error.column())
        }
    })
}

/// `created_at`, or `now` (the import's start) when it is missing.
fn time(created_at: Option<i64>, now: i64) -> Result<i64, LineError> {
    match created_at {
        Some(ms) => check_time_at(ms, now).map_err(|e| format!("created_at: {e}")),
        None => Ok(now),
    }
}

fn post_id(text: &str) -> Result<PostId, LineError> {
    text.parse()
        .map_err(|_| format!("post id {text:?} must be 24 hexadecimal digits"))
}

/// A post id the service could have made by `now`.
fn new_post_id(text: &str, now: i64) -> Result<PostId, LineError> {
    let id = post_id(text)?;
    id.check_at(now)
        .map_err(|e| format!("post id {text:?} is not a valid time-ordered id: {e}"))?;
    Ok(id)
}

/// Parses and checks a users line into `rows`.
pub fn user(line: &str, rows: &mut Rows<UserRow>, now: i64) -> Result<(), LineError> {
    let parsed: UserLine<'_> = parse(line)?;
    validate_user_id(&parsed.id)?;
    let name = parsed.display_name.as_deref().unwrap_or(&parsed.id);
    validate_display_name(name)?;
    let created_at_ms = time(parsed.created_at, now)?;
    let (id, display_name) = (rows.intern(&parsed.id), rows.intern(name));
    rows.push(UserRow {
        id,
        display_name,
        created_at_ms,
    });
    Ok(())
}

pub fn follow(line: &str, rows: &mut Rows<FollowRow>, now: i64) -> Result<(), LineError> {
    let parsed: FollowLine<'_> = parse(line)?;
    validate_user_id(&parsed.follower)?;
    validate_user_id(&parsed.followee)?;
    if parsed.follower == parsed.followee {
        return Err(format!("{} cannot follow themselves", parsed.follower));
    }
    let created_at_ms = time(parsed.created_at, now)?;
    let (follower, followee) = (rows.intern(&parsed.follower), rows.intern(&parsed.followee));
    rows.push(FollowRow {
        follower,
        followee,
        created_at_ms,
    });
    Ok(())
}

pub fn post(line: &str, rows: &mut Rows<PostRow>, now: i64) -> Result<(), LineError> {
    let parsed: PostLine<'_> = parse(line)?;
    let id = new_post_id(&parsed.id, now)?;
    validate_user_id(&parsed.author)?;
    validate_post_text(&parsed.text)?;
    let reply_to = match parsed.in_reply_to.as_deref() {
        None => None,
        Some(parent) => {
            let parent = post_id(parent).map_err(|e| format!("in_reply_to: {e}"))?;
            if parent >= id {
                return Err(format!(
                    "in_reply_to {parent} is not an earlier post than {id}: a reply answers a \
                     post made before it"
                ));
            }
            Some(parent)
        }
    };
    let (author, text) = (rows.intern(&parsed.author), rows.intern(&parsed.text));
    rows.push(PostRow {
        id,
        author,
        text,
        reply_to,
    });
    Ok(())
}

/// A blocks line (`mute: false`) or a mutes line into `rows`.
pub fn relation(
    line: &str,
    rows: &mut Rows<RelationRow>,
    now: i64,
    mute: bool,
) -> Result<(), LineError> {
    let (user, other, created_at, settings) = if mute {
        let parsed: MuteLine<'_> = parse(line)?;
        let created_at_ms = time(parsed.created_at, now)?;
        if let Some(until) = parsed.until {
            check_time_ms(until).map_err(|e| format!("until: {e}"))?;
            if until <= created_at_ms {
                return Err(format!(
                    "until {until} is not after created_at {created_at_ms}: the mute would \
                     have ended before it began"
                ));
            }
        }
        let settings = MuteSettings {
            notifications: parsed.notifications.unwrap_or(true),
            until_ms: parsed.until,
        };
        (parsed.user, parsed.other, created_at_ms, Some(settings))
    } else {
        let parsed: BlockLine<'_> = parse(line)?;
        let created_at_ms = time(parsed.created_at, now)?;
        (parsed.user, parsed.other, created_at_ms, None)
    };
    validate_user_id(&user)?;
    validate_user_id(&other)?;
    if user == other {
        let verb = if mute { "mute" } else { "block" };
        return Err(format!("{user} cannot {verb} themselves"));
    }
    let (user, other) = (rows.intern(&user), rows.intern(&other));
    rows.push(RelationRow {
        user,
        other,
        created_at_ms: created_at,
        mute: settings,
    });
    Ok(())
}

pub fn like(line: &str, rows: &mut Rows<LikeRow>, now: i64) -> Result<(), LineError> {
    let parsed: LikeLine<'_> = parse(line)?;
    validate_user_id(&parsed.user)?;
    let post = post_id(&parsed.post)?;
    let created_at_ms = time(parsed.created_at, now)?;
    let user = rows.intern(&parsed.user);
    rows.push(LikeRow {
        user,
        post,
        created_at_ms,
    });
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_checked_with_the_api_rules() {
        let mut users = Rows::default();
        user(r#"{"id":"ann"}"#, &mut users, 5).unwrap();
        assert_eq!(users.str(users.rows()[0].display_name), "ann");
        assert_eq!(users.rows()[0].created_at_ms, 5);
        assert!(user(r#"{"id":"a b"}"#, &mut users, 5).is_err());
        assert!(user(r#"{"id":"ann","extra":1}"#, &mut users, 5).is_err());
        let mut follows = Rows::default();
        assert!(follow(r#"{"follower":"a","followee":"a"}"#, &mut follows, 0).is_err());
        let mut posts = Rows::default();
        let ok = r#"{"id":"000000010000000000000000","author":"a","text":"hi"}"#;
        post(ok, &mut posts, 5000).unwrap();
        let blank = r#"{"id":"000000010000000000000000","author":"a","text":"  "}"#;
        assert!(post(blank, &mut posts, 5000).is_err());
        let cut = r#"{"id":"000000010000000000000000","author":"a","te"#;
        assert!(
            post(cut, &mut posts, 5000)
                .unwrap_err()
                .contains("cut short")
        );
        let mut likes = Rows::default();
        let bad = like(r#"{"user":"a","post":"xyz"}"#, &mut likes, 0).unwrap_err();
        assert!(bad.contains("24 hexadecimal"), "{bad}");
        assert_eq!(users.len() + posts.len(), 2);
    }

    /// Times past year 9999 once passed here and made the API panic when it wrote them.
    #[test]
    fn times_outside_the_range_or_in_the_future_are_refused() {
        let now = 1_700_000_000_000;
        let mut users = Rows::default();
        for created_at in ["253402300800000", "-1", "4102444800000", "1700000300001"] {
            let line = format!(r#"{{"id":"ann","created_at":{created_at}}}"#);
            let why = user(&line, &mut users, now).unwrap_err();
            assert!(why.starts_with("created_at: time"), "{why}");
        }
        user(
            r#"{"id":"ann","created_at":1700000300000}"#,
            &mut users,
            now,
        )
        .unwrap();
        let mut follows = Rows::default();
        let far = r#"{"follower":"a","followee":"b","created_at":253402300800000}"#;
        assert!(follow(far, &mut follows, now).is_err());
        let mut likes = Rows::default();
        let far = r#"{"user":"a","post":"000000010000000000000000","created_at":253402300800000}"#;
        assert!(like(far, &mut likes, now).is_err());
        assert!(users.len() == 1 && follows.is_empty() && likes.is_empty());
    }

    /// A post id from 2097 once passed here and dated every later post by it.
    #[test]
    fn post_ids_must_carry_a_kept_time_not_in_the_future() {
        let now = 1_700_000_000_000;
        let mut posts = Rows::default();
        let line = |id: &str| format!(r#"{{"id":"{id}","author":"a","text":"hi"}}"#);
        let future = post(&line("f00000000000000000000001"), &mut posts, now).unwrap_err();
        assert!(future.contains("future"), "{future}");
        let millis = post(&line("6553f10003e8000000000000"), &mut posts, now).unwrap_err();
        assert!(millis.contains("below 1000"), "{millis}");
        post(&line("6553f10003e7000000000000"), &mut posts, now).unwrap();
        assert_eq!(posts.len(), 1);
    }
}
