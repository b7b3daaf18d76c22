//! Reposts on the read path: which of a page's repost entries are served, and with
//! what original (see "Reposts" in docs/timelines.md).
//!
//! A repost entry is served only while the repost stands and its original exists
//! (checked here for every strategy, whatever the materialised data holds: an unrepost
//! or an original's delete is immediate), and only at its original's *oldest eligible
//! occurrence* in the reader's home timeline ("seen once"). The occurrences of a post
//! are the post itself, eligible when it would be served as a post today (its author is
//! the reader or followed, not hidden from the reader, and the reply rule lets it
//! through), and each repost of it by the reader or an account the reader follows,
//! eligible while it stands and neither its reposter nor the original's author is
//! hidden. The original is older than every repost of it, so: the original wins over any
//! repost, else the first repost to arrive. A repost entry is dropped when an older
//! eligible occurrence exists; the rule reads the sources at read time, so a follow of
//! the original's author makes the original win at once.
//!
//! Cost: nothing for a page without repost entries; otherwise one round of three
//! batched reads (the reposts by id, the originals, their authors' follow state and
//! names) and, only when some original is not itself eligible, a second: the reader's
//! followees and one `reposts_of` over those originals. Never one read per entry.
//!
//! A kept page (`service::pages`) that served from repost entries stands on more than
//! its cache's rows, so it is kept under the cache's version *and* the store's below
//! clock, read before the sources above ([`Timelines::under_repost_clock`]). What those
//! reads depend on, and what moves one of the two in its own transaction (embedded):
//! - whether each repost stands, and which earlier reposts of an original by the reader
//!   or a followee exist (`reposts_by_ids`, `reposts_of`): every unrepost, and every
//!   delete of an original (which removes its reposts), moves the below clock; a new
//!   repost's id is above every page's (`reposts_of` reads below the page's reposts),
//!   and its fan-out into the reader's cache moves the cache's version;
//! - whether each original exists, its text and its parent: every delete of a post
//!   moves the below clock (a post's text and parent never change);
//! - its author's name: every rename moves the below clock;
//! - whom the reader follows (the original's author, the reposters, a reply's parent
//!   author: `authors`, `following`): every follow and unfollow of the reader's moves
//!   the cache's version;
//! - what the reader hides (blocks either way, mutes): every block, unblock, mute and
//!   unmute moves the cache version of each reader it concerns, and a timed mute's
//!   expiry ends the page ([`Hidden::expires_ms`]).
//!
//! A store without a below clock (MongoDB keeps no versions at all) and a `hybrid`
//! page (its version has no room for the clock beside the merge's) keep no such page.

use std::collections::{HashMap, HashSet};

use super::{Timelines, distinct};
use crate::domain::relations::Hidden;
use crate::domain::{Post, PostId, TimelineEntry, reply_visible};
use crate::store::StoreResult;
use crate::store::timelines::CacheVersion;

/// What a served repost entry carries of its original, beside the entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Original {
    pub id: PostId,
    pub author: String,
    pub author_display_name: String,
    /// The original's parent's author when it is a reply.
    pub reply_to_author: Option<String>,
}

/// Followees read per call of the follow list.
const FOLLOWING_PAGE: usize = 1000;

impl Timelines {
    /// Drops the repost entries among `entries` that must not be served to `user` (gone,
    /// or not the original's oldest eligible occurrence), fills the others' text from
    /// their original, and records each served repost's original in `originals`, by the
    /// repost's id. Entries of posts pass untouched; hidden reposters and original
    /// authors were dropped before.
    pub(super) async fn served_reposts(
        &self,
        user: &str,
        mut entries: Vec<TimelineEntry>,
        hidden: &Hidden,
        originals: &mut HashMap<PostId, Original>,
    ) -> StoreResult<Vec<TimelineEntry>> {
        if !entries.iter().any(TimelineEntry::is_repost) {
            return Ok(entries);
        }
        let reposts: Vec<&TimelineEntry> = entries.iter().filter(|e| e.is_repost()).collect();
        let ids: Vec<PostId> = reposts.iter().map(|e| e.id).collect();
        let of = |e: &&TimelineEntry| e.repost_of.clone().expect("a repost entry");
        let mut posts: Vec<PostId> = reposts.iter().map(|e| of(e).post).collect();
        posts.sort_unstable();
        posts.dedup();
        let authors: Vec<String> = distinct(
            reposts
                .iter()
                .filter_map(|e| e.repost_of.as_ref())
                .map(|o| o.author.as_str()),
        )
        .map(str::to_owned)
        .collect();
        let (standing, found, views) = tokio::try_join!(
            self.store.reposts.reposts_by_ids(&ids),
            self.store.content.posts_by_ids(&posts, &authors),
            self.store.users.authors(user, &authors)
        )?;
        let standing: HashSet<PostId> = standing.into_iter().map(|r| r.id).collect();
        let found: HashMap<PostId, Post> = found.into_iter().map(|p| (p.id, p)).collect();
        let mut followed: HashSet<String> = views
            .iter()
            .filter(|v| v.followed)
            .map(|v| v.id.clone())
            .collect();
        let names: HashMap<String, String> =
            views.into_iter().map(|v| (v.id, v.display_name)).collect();
        entries.retain(|e| match &e.repost_of {
            Some(of) => standing.contains(&e.id) && found.contains_key(&of.post),
            None => true,
        });
        // Originals whose own occurrence may be eligible only by the reply rule's
        // follow of their parent's author: decided with the followees below.
        let undecided = |post: &Post, followed: &HashSet<String>| -> Option<bool> {
            let author_ok = post.author == user || followed.contains(&post.author);
            if !author_ok || hidden.hides(&post.author) {
                return Some(false);
            }
            let parent = post.reply_to.as_ref().map(|r| r.author.as_str());
            match reply_visible(user, &post.author, parent, false) {
                true => Some(true),
                false => None,
            }
        };
        let mut eligible: HashMap<PostId, bool> = HashMap::new();
        let mut open: Vec<PostId> = Vec::new();
        for post in found.values() {
            match undecided(post, &followed) {
                Some(true) => {
                    eligible.insert(post.id, true);
                }
                _ => open.push(post.id),
            }
        }
        // The original wins: its reposts are dropped without a further read.
        entries.retain(|e| match &e.repost_of {
            Some(of) => !eligible.contains_key(&of.post),
            None => true,
        });
        let mut older: HashMap<PostId, PostId> = HashMap::new();
        let below = entries.iter().filter(|e| e.is_repost()).map(|e| e.id).max();
        if let Some(below) = below {
            let followees = self.followees(user).await?;
            followed.extend(followees.iter().cloned());
            let mut reposters = followees;
            reposters.push(user.to_owned());
            open.retain(|id| {
                let post = &found[id];
                let parent = post.reply_to.as_ref().map(|r| r.author.as_str());
                let follows = parent.is_some_and(|p| followed.contains(p));
                let visible = reply_visible(user, &post.author, parent, follows);
                let author_ok = post.author == user || followed.contains(&post.author);
                !(visible && author_ok && !hidden.hides(&post.author))
            });
            let earlier = self
                .store
                .reposts
                .reposts_of(&open, &reposters, below)
                .await?;
            for repost in earlier {
                if hidden.hides(&repost.user) {
                    continue;
                }
                let oldest = older.entry(repost.post.post).or_insert(repost.id);
                *oldest = (*oldest).min(repost.id);
            }
            let open: HashSet<PostId> = open.into_iter().collect();
            entries.retain(|e| match &e.repost_of {
                Some(of) => {
                    open.contains(&of.post) && older.get(&of.post).is_none_or(|o| *o >= e.id)
                }
                None => true,
            });
        }
        for e in entries.iter_mut() {
            let Some(of) = &e.repost_of else {
                continue;
            };
            let post = &found[&of.post];
            e.text = Some(post.text.clone());
            originals.insert(
                e.id,
                Original {
                    id: post.id,
                    author: post.author.clone(),
                    author_display_name: names
                        .get(&post.author)
                        .cloned()
                        .unwrap_or_else(|| post.author.clone()),
                    reply_to_author: post.reply_to.as_ref().map(|r| r.author.clone()),
                },
            );
        }
        Ok(entries)
    }

    /// `version`, of a page about to serve from repost entries, made to stand on what
    /// [`Timelines::served_reposts`] reads beyond the cache's rows: with the below
    /// clock, read now, before those reads (see the module), or as it is when it
    /// already holds one (read before the rows below the cache, earlier still). `None`
    /// for a `hybrid` page, and from a store that keeps no clock.
    pub(super) async fn under_repost_clock(
        &self,
        version: Option<CacheVersion>,
    ) -> StoreResult<Option<CacheVersion>> {
        let Some(version) = version.filter(|v| v.merged.is_none()) else {
            return Ok(None);
        };
        if version.below.is_some() {
            return Ok(Some(version));
        }
        let clock = self.store.timelines.below_clock().await?;
        Ok(clock.map(|clock| CacheVersion {
            below: Some(clock),
            ..version
        }))
    }

    /// Everyone `user` follows, a page of the follow list at a time.
    async fn followees(&self, user: &str) -> StoreResult<Vec<String>> {
        let mut all: Vec<String> = Vec::new();
        loop {
            let after = all.last().map(String::as_str);
            let page = self
                .store
                .graph
                .following(user, after, FOLLOWING_PAGE)
                .await?;
            let done = page.len() < FOLLOWING_PAGE;
            all.extend(page);
            if done {
                return Ok(all);
            }
        }
    }
}
