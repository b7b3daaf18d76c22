//! An account's statuses as Mastodon lists them: the author's posts and reposts,
//! newest first, as the viewer sees them (`Social::post_list`: nothing when the author
//! blocks the viewer), without replies to others (`exclude_replies`; replies in the
//! author's own threads stay, as on Mastodon) or without reposts (`exclude_reblogs`).
//! A filter that drops entries reads further pages, up to a bound, so a page is short
//! only when the list ends or the bound is reached; the cursor is then the last entry
//! read, so nothing is skipped.
//!
//! The page just above an id (`min_id`) is read as the home timeline's is, by the
//! same window search (`Timelines::search_window`, see `feed::newer`): the descending
//! read itself, walked over a window of ids `(after, upper)`, so an entry is served
//! there exactly when a `max_id` walk serves it, filters included.

use super::Social;
use super::mastodon::{Entry, HomeRange, StatusPage};
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

/// Who reads which list: the author, the viewer (none: anonymous) and the filter.
#[derive(Clone, Copy)]
struct ListOf<'a> {
    author: &'a str,
    viewer: Option<&'a str>,
    filter: StatusFilter,
}

impl Social {
    /// One page of `author`'s statuses as `viewer` (none: anonymous) sees them, newest
    /// first: the newest below `before` (ending at the first status at or below
    /// `since`), or the page just above `after` (its `next` is then its oldest status).
    pub async fn account_statuses(
        &self,
        author: &str,
        viewer: Option<&str>,
        range: HomeRange,
        limit: usize,
        filter: StatusFilter,
    ) -> StoreResult<StatusPage> {
        let list = ListOf {
            author,
            viewer,
            filter,
        };
        let (listed, next) = match range {
            HomeRange::Older { before, since } => {
                self.account_page(list, before, since, limit).await?
            }
            HomeRange::Newer { after } => {
                let listed = self.account_page_after(list, after, limit).await?;
                let oldest = listed.last().map(Listed::id);
                (listed, oldest)
            }
        };
        let entries = listed
            .into_iter()
            .map(|listed| match listed {
                Listed::Post(post) => Entry::Post(post),
                Listed::Repost(repost, original) => Entry::Repost {
                    id: repost.id,
                    by: repost.user,
                    of: original,
                },
            })
            .collect();
        Ok(StatusPage {
            items: self.views(viewer, entries).await?,
            next,
        })
    }

    /// The entries of one page below `before` that the filter keeps, ending at `since`,
    /// and the cursor of the page below (`None` at the end or at `since`).
    async fn account_page(
        &self,
        list: ListOf<'_>,
        before: Option<PostId>,
        since: Option<PostId>,
        limit: usize,
    ) -> StoreResult<(Vec<Listed>, Option<PostId>)> {
        let mut entries = Vec::with_capacity(limit);
        let mut cursor = before;
        let mut next = None;
        'rounds: for round in 0..MAX_ROUNDS {
            let page = self
                .post_list(list.author, list.viewer, cursor, limit)
                .await?;
            let read = page.items.len();
            for (i, listed) in page.items.into_iter().enumerate() {
                let id = listed.id();
                if since.is_some_and(|since| id <= since) {
                    next = None;
                    break 'rounds;
                }
                if list.filter.keeps(&listed) {
                    entries.push(listed);
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
        Ok((entries, next))
    }

    /// The `limit` oldest entries above `after`, newest first, by the home timeline's
    /// window search (see the module comment).
    async fn account_page_after(
        &self,
        list: ListOf<'_>,
        after: PostId,
        limit: usize,
    ) -> StoreResult<Vec<Listed>> {
        let limit = limit.max(1);
        let found = self
            .timelines
            .search_window(after, limit, |upper, cap| {
                self.account_window(list, after, upper, limit, cap)
            })
            .await?;
        Ok(oldest(found, limit))
    }

    /// Every entry the filter keeps above `after` and below `upper`, newest first, by
    /// pages of `limit` down from `upper`; `None` as soon as more than `cap`.
    async fn account_window(
        &self,
        list: ListOf<'_>,
        after: PostId,
        upper: Option<PostId>,
        limit: usize,
        cap: Option<usize>,
    ) -> StoreResult<Option<Vec<Listed>>> {
        let mut found = Vec::new();
        let mut before = upper;
        loop {
            let (page, next) = self.account_page(list, before, Some(after), limit).await?;
            found.extend(page);
            if cap.is_some_and(|cap| found.len() > cap) {
                return Ok(None);
            }
            match next {
                Some(next) => before = Some(next),
                None => return Ok(Some(found)),
            }
        }
    }
}

/// The `limit` oldest of `found` (newest first), still newest first.
fn oldest(mut found: Vec<Listed>, limit: usize) -> Vec<Listed> {
    found.drain(..found.len().saturating_sub(limit));
    found
}
