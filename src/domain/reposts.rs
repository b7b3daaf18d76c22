//! Reposts (boosts): a user's act of passing a post on to their followers. A repost is
//! a source of its own, not a post: it has an id minted like a post id at the moment of
//! the repost (the same id space and order as posts, so it orders timelines beside
//! them), the reposter, and the original post with that post's author (copied at the
//! repost, like a reply's parent). One repost stands per (reposter, post).

use serde::{Deserialize, Serialize};

use super::{NameStamp, PostId, ReplyTo, TimelineEntry};

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

    /// The repost's timeline entry: under the repost's id, by the reposter, carrying
    /// the original's `text` when content is embedded (and `text` is known), and the
    /// reposter's name as `name` stamps it.
    pub fn entry(
        &self,
        text: Option<&str>,
        embed_content: bool,
        name: Option<&NameStamp>,
    ) -> TimelineEntry {
        let text = text.filter(|_| embed_content).map(str::to_owned);
        TimelineEntry {
            id: self.id,
            author: self.user.clone(),
            name: name.filter(|_| embed_content && text.is_some()).cloned(),
            text,
            reply_to_author: None,
            repost_of: Some(self.post.clone()),
        }
    }
}

/// The change-feed collection reposts are filed under, on both stores.
pub const REPOSTS: &str = "reposts";
