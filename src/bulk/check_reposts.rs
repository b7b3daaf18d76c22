//! The reposts file's checks beyond its own lines (`check.rs` parses them and checks
//! the users and posts they name): no two reposts, nor a repost and a post, share an id,
//! in the files or the store; and no repost passes on a post whose author blocks the
//! reposter, by a block in the blocks file (both lines are named) or in the store, since
//! the API refuses such a repost.
//!
//! Memory, only when a reposts file is given: each repost's id, post, reposter and line;
//! the author of each post of the posts file (interned); the blocks file's blocks.

use std::collections::{HashMap, HashSet};

use super::import::Input;
use crate::domain::PostId;
use crate::store::Store;
use crate::store::bulk::RepostRow;

/// Lookups per query against the store.
const PER_READ: usize = 500;

/// A repost line, as the checks after the files need it.
struct Seen {
    id: PostId,
    post: PostId,
    user: String,
    at: String,
}

#[derive(Default)]
pub(super) struct RepostCheck {
    /// Authors of the posts file's posts, as indexes into `names`.
    authors: HashMap<PostId, u32>,
    names: Vec<String>,
    name_ids: HashMap<String, u32>,
    /// The blocks file's blocks, (blocker, blocked), with where each was first seen.
    blocks: HashMap<(String, String), String>,
    /// Each repost id with the line that gave it (index into `reposts`).
    ids: HashMap<PostId, usize>,
    reposts: Vec<Seen>,
}

impl RepostCheck {
    pub(super) fn note_author(&mut self, post: PostId, author: &str) {
        let next = self.names.len() as u32;
        let index = *self.name_ids.entry(author.to_owned()).or_insert(next);
        if index == next {
            self.names.push(author.to_owned());
        }
        self.authors.insert(post, index);
    }

    pub(super) fn note_block(&mut self, blocker: &str, blocked: &str, at: String) {
        self.blocks
            .entry((blocker.to_owned(), blocked.to_owned()))
            .or_insert(at);
    }

    /// Records a repost line; `Err` when its id names another repost of the file.
    pub(super) fn note_repost(
        &mut self,
        row: &RepostRow,
        user: &str,
        input: &Input,
        line: u64,
    ) -> Result<(), String> {
        if let Some(&first) = self.ids.get(&row.id) {
            let other = &self.reposts[first];
            if other.user == user && other.post == row.post {
                return Ok(()); // the same repost again
            }
            return Err(format!(
                "repost id {} already names the repost of {} by {:?} at {}: an id names one \
                 repost",
                row.id, other.post, other.user, other.at
            ));
        }
        self.ids.insert(row.id, self.reposts.len());
        self.reposts.push(Seen {
            id: row.id,
            post: row.post,
            user: user.to_owned(),
            at: format!("{}:{line}", input.label),
        });
        Ok(())
    }

    /// The checks against the whole files and the store; every refusal is pushed on
    /// `errors` as `FILE:LINE: why`.
    pub(super) async fn check(
        &self,
        store: &Store,
        errors: &mut Vec<String>,
    ) -> anyhow::Result<()> {
        if self.reposts.is_empty() {
            return Ok(());
        }
        // The authors of reposted posts that are not in the posts file.
        let mut stored_authors: HashMap<PostId, String> = HashMap::new();
        let missing: Vec<PostId> = {
            let mut posts: Vec<PostId> = self
                .reposts
                .iter()
                .map(|r| r.post)
                .filter(|p| !self.authors.contains_key(p))
                .collect();
            posts.sort_unstable();
            posts.dedup();
            posts
        };
        for chunk in missing.chunks(PER_READ) {
            for post in store.content.posts_by_ids(chunk, &[]).await? {
                stored_authors.insert(post.id, post.author);
            }
        }
        let author_of = |post: PostId| -> Option<&str> {
            match self.authors.get(&post) {
                Some(&index) => Some(self.names[index as usize].as_str()),
                None => stored_authors.get(&post).map(String::as_str),
            }
        };
        // Blocks: the files' first; then the store's, for the distinct (author,
        // reposter) pairs left, a batch of them per read.
        let mut asked: Vec<(String, String)> = Vec::new();
        for repost in &self.reposts {
            // A post found nowhere is reported by the reference checks.
            let Some(author) = author_of(repost.post) else {
                continue;
            };
            let pair = (author.to_owned(), repost.user.clone());
            if let Some(block) = self.blocks.get(&pair) {
                errors.push(format!(
                    "{}: repost of {} by {:?} beside the block of {:?} by its author {:?} at \
                     {block}: a post's author who blocks the reposter cannot be reposted by \
                     them, so an import holding both is refused (leave out one of them)",
                    repost.at, repost.post, repost.user, repost.user, author
                ));
            } else if author != repost.user {
                asked.push(pair);
            }
        }
        asked.sort_unstable();
        asked.dedup();
        let mut stored_blocks: HashSet<(String, String)> = HashSet::new();
        for chunk in asked.chunks(PER_READ) {
            stored_blocks.extend(store.relations.blocks_among(chunk).await?);
        }
        if !stored_blocks.is_empty() {
            for repost in &self.reposts {
                let Some(author) = author_of(repost.post) else {
                    continue;
                };
                let pair = (author.to_owned(), repost.user.clone());
                if stored_blocks.contains(&pair) && !self.blocks.contains_key(&pair) {
                    errors.push(format!(
                        "{}: repost of {} by {:?}, whose author {:?} blocks them in the store: \
                         a post's author who blocks the reposter cannot be reposted by them",
                        repost.at, repost.post, repost.user, author
                    ));
                }
            }
        }
        // Ids: neither a stored post's nor a stored repost's of another user or post.
        for chunk in self.reposts.chunks(PER_READ) {
            let ids: Vec<PostId> = chunk.iter().map(|r| r.id).collect();
            let posts: std::collections::HashSet<PostId> = store
                .content
                .existing_posts(&ids, &[])
                .await?
                .into_iter()
                .collect();
            let reposts: HashMap<PostId, crate::domain::Repost> = store
                .reposts
                .reposts_by_ids(&ids)
                .await?
                .into_iter()
                .map(|r| (r.id, r))
                .collect();
            for repost in chunk {
                if posts.contains(&repost.id) {
                    errors.push(format!(
                        "{}: repost id {} is a stored post's id: an id names one post or repost",
                        repost.at, repost.id
                    ));
                } else if let Some(stored) = reposts.get(&repost.id)
                    && (stored.user != repost.user || stored.post.post != repost.post)
                {
                    errors.push(format!(
                        "{}: repost id {} already names the stored repost of {} by {:?}: an id \
                         names one repost",
                        repost.at, repost.id, stored.post.post, stored.user
                    ));
                }
            }
        }
        Ok(())
    }
}
