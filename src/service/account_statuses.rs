//! An account's statuses as Mastodon lists them: the author's posts and reposts,
//! newest first, as the viewer sees them (`Social::post_list`: nothing when the author
//! blocks the viewer), without replies to others (`exclude_replies`; replies in the
//! author's own threads stay, as on Mastodon) or without reposts (`exclude_reblogs`).
//! A filter that drops entries reads further pages, up to a bound, so a page is short
//! only when the list ends or the bound is reached; the cursor is then the last entry
//! read, so nothing is skipped.

use super::Social;
use super::mastodon::{Entry, StatusPage};
use crate::domain::PostId;
use crate::service::Listed;
use crate::store::StoreResult;

/// What an account's list leaves out.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StatusFilter {
    pub exclude_replies: bool,
    pub exclude_reblogs: bool,
}

/// Pages of the post list read for one filtered page, at most.
const MAX_ROUNDS: usize = 4;

impl StatusFilter {
    fn keeps(&self, listed: &Listed) -> bool {
        match listed {
            Listed::Repost(..) => !self.exclude_reblogs,
            Listed::Post(post) => match &post.reply_to {
                Some(parent) => !self.exclude_replies || parent.author == post.author,
                None => true,
            },
        }
    }
}

impl Social {
    /// One page of `author`'s statuses as `viewer` (none: anonymous) sees them, below
    /// `before`; with `since`, the page ends at the first status at or below it.
    pub async fn account_statuses(
        &self,
        author: &str,
        viewer: Option<&str>,
        before: Option<PostId>,
        since: Option<PostId>,
        limit: usize,
        filter: StatusFilter,
    ) -> StoreResult<StatusPage> {
        let mut entries = Vec::with_capacity(limit);
        let mut cursor = before;
        let mut next = None;
        'rounds: for round in 0..MAX_ROUNDS {
            let page = self.post_list(author, viewer, cursor, limit).await?;
            let read = page.items.len();
            for (i, listed) in page.items.into_iter().enumerate() {
                let id = listed.id();
                if since.is_some_and(|since| id <= since) {
                    next = None;
                    break 'rounds;
                }
                if filter.keeps(&listed) {
                    entries.push(match listed {
                        Listed::Post(post) => Entry::Post(post),
                        Listed::Repost(repost, original) => Entry::Repost {
                            id: repost.id,
                            by: repost.user,
                            of: original,
                        },
                    });
                }
                if entries.len() == limit {
                    let more = i + 1 < read || page.next.is_some();
                    next = more.then_some(id);
                    break 'rounds;
                }
            }
            match page.next {
                Some(after) if round + 1 < MAX_ROUNDS => cursor = Some(after),
                other => {
                    next = other;
                    break;
                }
            }
        }
        Ok(StatusPage {
            items: self.views(viewer, entries).await?,
            next,
        })
    }
}
