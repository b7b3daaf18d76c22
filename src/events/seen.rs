//! Seen once in the live stream (docs/timelines.md, "Reposts", "Seen once"): a repost
//! goes out only at its original's oldest eligible occurrence, the rule pages apply
//! (`feed::reposts`). The router has already left out a repost whose original is itself
//! in the reader's timeline (the original wins) and one whose reposter or original's
//! author is hidden; what is left to decide here is whether an older standing repost of
//! the same original, by the reader or an account they follow now and not hidden from
//! them, exists: then the first repost wins, and this one is not sent.
//!
//! Cost: nothing for a repost the stream does not send anyway; otherwise, none when the
//! stream itself sent an older repost of the same original whose reposter is still the
//! reader or followed and not hidden (remembered per stream, not past
//! [`REMEMBERED_MAX`] originals), else one `RepostStore::reposts_of` read of that one
//! original by the reader and their followees below the repost's id (the `(post, id)`
//! index). Never a read per entry of anything else.

use std::collections::{HashMap, HashSet};

use crate::domain::PostId;
use crate::domain::relations::Hidden;
use crate::store::{Store, StoreResult};

/// Originals a stream remembers having sent as a repost; past this many it forgets them
/// all and starts again (the store read then decides alone, as it would anyway).
pub(super) const REMEMBERED_MAX: usize = 4096;

/// What one stream remembers of the reposts it sent.
#[derive(Debug, Default)]
pub(super) struct SeenOnce {
    /// Per original this stream sent as a repost: that repost's id and its reposter.
    sent: HashMap<PostId, (PostId, String)>,
}

/// The stream's reader as the seen-once rule sees them: who they are, whom they follow
/// and whom they are hidden, as the stream knows it when it reaches the event.
pub(super) struct Reader<'a> {
    pub user: &'a str,
    pub following: &'a HashSet<String>,
    pub hidden: &'a Hidden,
}

impl Reader<'_> {
    /// Whether a repost by `who` is an occurrence of its original for this reader (the
    /// repost standing, its original live and its author not hidden being known).
    fn counts(&self, who: &str) -> bool {
        (who == self.user || self.following.contains(who)) && !self.hidden.hides(who)
    }
}

impl SeenOnce {
    /// `repost` of `post` was undone: forgotten when it is the one remembered.
    pub(super) fn undone(&mut self, post: PostId, repost: PostId) {
        if self
            .sent
            .get(&post)
            .is_some_and(|(sent, _)| *sent == repost)
        {
            self.sent.remove(&post);
        }
    }

    /// `post` was deleted (and every repost of it with it).
    pub(super) fn deleted(&mut self, post: PostId) {
        self.sent.remove(&post);
    }

    /// Whether `reader` is to be sent `repost`, by `reposter`, of `original`: no older
    /// standing repost of `original` counts for them (see the module). Remembers it when
    /// it is.
    pub(super) async fn first(
        &mut self,
        store: &Store,
        reader: Reader<'_>,
        repost: PostId,
        reposter: &str,
        original: PostId,
    ) -> StoreResult<bool> {
        if let Some((sent, by)) = self.sent.get(&original)
            && *sent < repost
            && reader.counts(by)
        {
            return Ok(false);
        }
        let mut reposters: Vec<String> = reader.following.iter().cloned().collect();
        reposters.push(reader.user.to_owned());
        let older = store
            .reposts
            .reposts_of(&[original], &reposters, repost)
            .await?;
        if older.iter().any(|r| reader.counts(&r.user)) {
            return Ok(false);
        }
        if self.sent.len() >= REMEMBERED_MAX {
            self.sent.clear();
        }
        self.sent.insert(original, (repost, reposter.to_owned()));
        Ok(true)
    }
}
