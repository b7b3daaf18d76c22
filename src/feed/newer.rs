//! Newer-than pages (Mastodon's `min_id`): the `limit` oldest items of a home timeline
//! above a given id, served newest first.
//!
//! They are answered by the descending read path itself, [`Timelines::page`], walked
//! over a *window* of ids `(after, upper)`: every page of the walk is a `before` page,
//! so an item is served here exactly when a `before` walk serves it, with the same
//! filters (hidden authors, the reply rule, deleted posts, stale entries), `hybrid`'s
//! merge, and the seen-once rule at the same occurrence (it is a rule over the sources,
//! applied to each entry whatever page holds it). No strategy needs an ascending read.
//!
//! The window is chosen so that the walk stays short: first the whole range above
//! `after` (a reader catching up on what is new, the common case), walked only while it
//! holds at most [`WINDOW_CAP`] pages' worth; when it holds more, the upper bound is
//! searched for by time (ids carry their creation time), halving between a window known
//! to hold too few items and one known to hold too many, until one holds more than the
//! page and at most the cap (or spans a single millisecond, walked whole). Each probe is
//! a walk of at most the cap, so a page costs a few walks of a few pages each, whatever
//! the gap between `after` and the newest entry.
//!
//! Kept pages (`service::pages`) are not used: an `after` page is read every time.

use super::Timelines;
use super::page::TimelineItem;
use crate::domain::PostId;
use crate::store::StoreResult;

/// A page of the items immediately newer than a given id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewerPage {
    /// Newest first: the `limit` oldest items above the bound.
    pub items: Vec<TimelineItem>,
    /// Whether the timeline holds items newer than these (then the next newer page is
    /// read with `after` = the first item's id). False: these are the newest items.
    pub more_newer: bool,
}

/// A window walk gives up past this many pages' worth of items, and a smaller window is
/// tried.
const WINDOW_CAP: usize = 4;

/// Windows tried before the whole range above the bound is walked without a cap: the
/// search halves a span of at most a few centuries of milliseconds, so it ends well
/// before this unless posts come and go between its probes.
const MAX_PROBES: usize = 64;

/// The `limit` oldest of a window's `items` (newest first), and whether more are newer.
fn newer_page(items: Vec<TimelineItem>, limit: usize) -> NewerPage {
    let more_newer = items.len() > limit;
    let start = items.len().saturating_sub(limit);
    let items = items.into_iter().skip(start).collect();
    NewerPage { items, more_newer }
}

impl Timelines {
    /// The `limit` oldest items of `user`'s home timeline with ids above `after`, newest
    /// first; `NotFound` for unknown users. See the module comment.
    pub async fn page_after(
        &self,
        user: &str,
        after: PostId,
        limit: usize,
    ) -> StoreResult<NewerPage> {
        let items = self
            .search_window(after, limit, |upper, cap| {
                self.window(user, after, upper, limit, cap)
            })
            .await?;
        Ok(newer_page(items, limit))
    }

    /// Every item of the window above `after` that the search settles on (see the module
    /// comment), newest first: the whole range when it holds at most the cap, else a
    /// window below a searched upper bound holding more than `limit` items and at most
    /// the cap. `walk(upper, cap)` walks one window by the descending read, giving every
    /// item above `after` and below `upper`, or `None` as soon as it finds more than
    /// `cap`. One search serves every list read this way (a home timeline here, an
    /// account's statuses in `service::account_statuses`).
    pub async fn search_window<T, W, F>(
        &self,
        after: PostId,
        limit: usize,
        mut walk: W,
    ) -> StoreResult<Vec<T>>
    where
        W: FnMut(Option<PostId>, Option<usize>) -> F,
        F: Future<Output = StoreResult<Option<Vec<T>>>>,
    {
        let want = limit + 1;
        let cap = want * WINDOW_CAP;
        let from_ms = after.timestamp_ms();
        // The first window is everything above `after`.
        let mut span: Option<i64> = None;
        // Spans known to hold fewer than `want` items, and more than `cap`.
        let mut few: i64 = 0;
        let mut many: Option<i64> = None;
        for _ in 0..MAX_PROBES {
            let upper = span.map(|s| PostId::at(from_ms.saturating_add(s), 0));
            // A window one millisecond above one that held too few is walked whole,
            // however much that millisecond holds.
            let capped = span.is_none_or(|s| s > few + 1);
            match walk(upper, capped.then_some(cap)).await? {
                Some(items) if items.len() >= want || span.is_none() => return Ok(items),
                Some(_) => few = span.unwrap_or(few),
                None => many = Some(span.unwrap_or_else(|| self.gap_ms(from_ms))),
            }
            match next_span(few, many, self.gap_ms(from_ms)) {
                Some(next) if next > few => span = Some(next),
                // The bounds crossed (posts deleted between probes): stop searching.
                _ => break,
            }
        }
        // The search gave up: the whole range above `after`, walked without a cap.
        Ok(walk(None, None).await?.unwrap_or_default())
    }

    /// Milliseconds from `from_ms` to a little past now: no id lies beyond (ids are
    /// dated by the clock; the slack covers other processes' clocks).
    fn gap_ms(&self, from_ms: i64) -> i64 {
        let top = self.now_ms().saturating_add(crate::domain::MAX_LEAD_MS);
        top.saturating_sub(from_ms).max(2)
    }

    /// Every item of `user`'s timeline above `after` and below `upper`, by `before`
    /// pages of `limit` items from `upper` down; `None` as soon as more than `cap`.
    async fn window(
        &self,
        user: &str,
        after: PostId,
        upper: Option<PostId>,
        limit: usize,
        cap: Option<usize>,
    ) -> StoreResult<Option<Vec<TimelineItem>>> {
        let mut items: Vec<TimelineItem> = Vec::new();
        let mut before = upper;
        loop {
            let page = self.page(user, before, limit.max(1)).await?;
            let mut done = page.next_cursor.is_none_or(|c| c <= after);
            for item in page.items {
                if item.id <= after {
                    done = true;
                    break;
                }
                items.push(item);
            }
            if cap.is_some_and(|cap| items.len() > cap) {
                return Ok(None);
            }
            if done {
                return Ok(Some(items));
            }
            before = page.next_cursor;
        }
    }
}

/// The next window to try, between a span known to hold too few items (`few`) and one
/// known to hold too many (`many`; unknown while only the whole range was tried, then
/// the `gap` to now): halfway, or a sixteenth of the way up from a `few` of 0, so that
/// a dense recent past and a long quiet gap both converge in a few probes.
fn next_span(few: i64, many: Option<i64>, gap: i64) -> Option<i64> {
    let many = many.unwrap_or(gap);
    let span = match few {
        0 => (many / 16).max(1),
        _ => few + (many - few) / 2,
    };
    // Adjacent bounds: the millisecond window `many` is walked whole.
    Some(if span <= few { many } else { span })
}

#[cfg(test)]
mod tests {
    use super::next_span;

    #[test]
    fn spans_converge_between_the_bounds() {
        assert_eq!(next_span(0, Some(1600), 0), Some(100));
        assert_eq!(next_span(100, Some(1600), 0), Some(850));
        assert_eq!(next_span(0, None, 3200), Some(200));
        assert_eq!(next_span(0, Some(1), 0), Some(1));
        assert_eq!(next_span(4, Some(5), 0), Some(5));
    }
}
