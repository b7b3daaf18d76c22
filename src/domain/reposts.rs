//! Reposts (boosts): a user's act of passing a post on to their followers. A repost is
//! a source of its own, not a post: it has an id minted like a post id at the moment of
//! the repost (the same id space and order as posts, so it orders timelines beside
//! them), the reposter, and the original post with that post's author (copied at the
//! repost, like a reply's parent). One repost stands per (reposter, post).

use serde::{Deserialize, Serialize};

use super::{PostId, ReplyTo};

/// A stored repost. As a change-feed document (on insert and on delete alike) it is
/// `{"id", "user", "post": {"post", "author"}}`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Repost {
    /// Minted like a post id when the repost was made; its time is the repost's time.
    pub id: PostId,
    /// The reposter.
    pub user: String,
    /// The original post and its author.
    pub post: ReplyTo,
}

impl Repost {
    pub fn created_at_ms(&self) -> i64 {
        self.id.timestamp_ms()
    }
}

/// The change-feed collection reposts are filed under, on both stores.
pub const REPOSTS: &str = "reposts";
