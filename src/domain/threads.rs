//! Replies and threads: what a reply names, and Mastodon's rule for which replies a
//! home timeline shows.

use serde::{Deserialize, Serialize};

use super::PostId;

/// The post a reply answers, and that post's author, both copied at the reply's
/// creation: a thread's shape never changes, and a reply keeps naming its parent after
/// the parent is deleted. Serialised as `{"post": "<24-hex id>", "author": "<user id>"}`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ReplyTo {
    pub post: PostId,
    pub author: String,
}

/// Whether a reply by `author` to a post by `parent_author` belongs in `reader`'s home
/// timeline (Mastodon's rule): only when the reader also follows the parent's author
/// (`follows_parent`, read from the current follow graph), is that author, or the reply
/// answers its own author (a self-thread). A post that answers nothing
/// (`parent_author: None`) always does.
pub fn reply_visible(
    reader: &str,
    author: &str,
    parent_author: Option<&str>,
    follows_parent: bool,
) -> bool {
    match parent_author {
        None => true,
        Some(parent) => parent == author || parent == reader || follows_parent,
    }
}

/// How many ancestors a thread read returns at most, nearest to the post kept.
pub const MAX_ANCESTORS: usize = 40;
/// How many descendants a thread read returns at most, in thread order.
pub const MAX_DESCENDANTS: usize = 200;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_home_rule() {
        // Not a reply.
        assert!(reply_visible("r", "a", None, false));
        // A self-thread.
        assert!(reply_visible("r", "a", Some("a"), false));
        // The reader is the parent's author.
        assert!(reply_visible("p", "a", Some("p"), false));
        // The reader follows the parent's author, or not.
        assert!(reply_visible("r", "a", Some("p"), true));
        assert!(!reply_visible("r", "a", Some("p"), false));
    }
}
