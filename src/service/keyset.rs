//! Pages of the Mastodon account lists (follows, blocks, mutes, likers, reposters) both
//! ways from a cursor, as Mastodon pages its lists: `max_id` the items after a cursor in
//! the list's order (from its head without one), cut at `since_id`; `min_id` the items
//! just ahead of a cursor (the previous page), still in the list's order. Every read is
//! one range of the list's index from the cursor (the store ports' `*_below`,
//! `*_newer` reads take the other way).

use super::Page;

/// Which page of a list, in the list's own order (head first: the newest block, like
/// or repost, the lowest user id of a follow list).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ListRange<C> {
    /// From the head, or after `before` (Mastodon's `max_id`), without the items at or
    /// after `since` (`since_id`).
    Older { before: Option<C>, since: Option<C> },
    /// The items just ahead of `after` (`min_id`), nearest it last.
    Newer { after: C },
}

impl<C> ListRange<C> {
    /// The page after `before`, uncut (`/v1`'s only kind).
    pub fn older(before: Option<C>) -> Self {
        ListRange::Older {
            before,
            since: None,
        }
    }

    /// This range with its cursors turned into another type.
    pub fn try_map<D, E>(self, f: impl Fn(C) -> Result<D, E>) -> Result<ListRange<D>, E> {
        Ok(match self {
            ListRange::Older { before, since } => ListRange::Older {
                before: before.map(&f).transpose()?,
                since: since.map(&f).transpose()?,
            },
            ListRange::Newer { after } => ListRange::Newer { after: f(after)? },
        })
    }
}

/// A page of a list in its order, with the cursors of the page after it (`next`, a
/// `max_id`) and before it (`prev`, a `min_id`: its first item's).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListPage<T, C> {
    pub items: Vec<T>,
    pub next: Option<C>,
    pub prev: Option<C>,
}

impl<T, C> ListPage<T, C> {
    /// The same page with other items (the listed users' profiles, say).
    pub fn with_items<U>(self, items: Vec<U>) -> ListPage<U, C> {
        ListPage {
            items,
            next: self.next,
            prev: self.prev,
        }
    }

    /// `/v1`'s page: the items and the next cursor.
    pub fn into_page(self) -> Page<T, C> {
        Page {
            items: self.items,
            next: self.next,
        }
    }
}

/// How many items to read for `range`'s page of `limit`: one more on an older page,
/// which only tells that another follows.
pub(super) fn read_size<C>(range: &ListRange<C>, limit: usize) -> usize {
    match range {
        ListRange::Older { .. } => limit + 1,
        ListRange::Newer { .. } => limit,
    }
}

/// `read` as `range`'s page. An older page's `read` is in the list's order (at most
/// [`read_size`]); a newer one's the items nearest the cursor first, put back in the
/// list's order here. `ahead(a, b)`: `a` lies nearer the head than `b`. The cursors
/// come from what was read, so items a caller drops afterwards (hidden users) move no
/// cursor.
pub(super) fn shape<T, C>(
    range: &ListRange<C>,
    mut read: Vec<T>,
    limit: usize,
    key: impl Fn(&T) -> C,
    ahead: impl Fn(&C, &C) -> bool,
) -> ListPage<T, C> {
    match range {
        ListRange::Older { since, .. } => {
            let page = Page::from_extra(read, limit, &key);
            let mut items = page.items;
            let whole = items.len();
            if let Some(since) = since {
                items.retain(|item| ahead(&key(item), since));
            }
            // A page cut at `since` reached it: nothing after it is asked for.
            let next = page.next.filter(|_| items.len() == whole);
            let prev = items.first().map(&key);
            ListPage { items, next, prev }
        }
        ListRange::Newer { .. } => {
            read.truncate(limit);
            read.reverse();
            ListPage {
                next: read.last().map(&key),
                prev: read.first().map(&key),
                items: read,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A list of numbers, head first, highest first.
    fn ahead(a: &u32, b: &u32) -> bool {
        a > b
    }

    #[test]
    fn older_pages_are_cut_at_since_and_newer_ones_put_in_the_lists_order() {
        let older = |since| ListRange::Older {
            before: None,
            since,
        };
        let page = shape(&older(None), vec![9, 8, 7], 2, |n| *n, ahead);
        assert_eq!(
            (page.items, page.next, page.prev),
            (vec![9, 8], Some(8), Some(9))
        );
        let cut = shape(&older(Some(8)), vec![9, 8, 7], 2, |n| *n, ahead);
        assert_eq!((cut.items, cut.next, cut.prev), (vec![9], None, Some(9)));
        let newer = ListRange::Newer { after: 5 };
        let page = shape(&newer, vec![6, 7, 8], 2, |n| *n, ahead);
        assert_eq!(
            (page.items, page.next, page.prev),
            (vec![7, 6], Some(6), Some(7))
        );
        let empty = shape(&newer, Vec::new(), 2, |n: &u32| *n, ahead);
        assert_eq!((empty.next, empty.prev), (None, None));
    }
}
