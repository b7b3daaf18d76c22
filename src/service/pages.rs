//! Rendered timeline pages, kept in each process and served again while the store says
//! they stand. A page is kept only with a version (see `Timelines::versioned_page`: a
//! page read whole from one cache, as its rows stood), and served again only after one
//! light read finds that version still, with no removal pending and no rename of an
//! author the page shows (the version names the span of the cache's rows it shows, see
//! `CacheRows`; a rename of anyone else leaves it kept). Every write of a cache's rows,
//! by any process that shares the store, moves its version to a value it never had, so
//! a kept page is never served past a change: what a kept page saves is the page's
//! rows, their decoding and the rendering, not the read. A page that read below the
//! cache, or met a repost entry, stands on the store's below clock too, in the same
//! read (`CacheVersion::below`).

use std::hash::{Hash, Hasher};

use bytes::Bytes;
use quick_cache::sync::Cache;
use quick_cache::{Equivalent, Weighter};

use crate::domain::PostId;
use crate::store::timelines::CacheVersion;

/// Whose page, below which post, how long.
type Key = (String, Option<PostId>, usize);

/// A [`Key`] borrowed from a request, so that a lookup allocates nothing. It hashes as
/// the key it stands for (a tuple hashes its fields in order; `&str` hashes as
/// `String`), which the cache needs to find it.
pub(super) struct PageKey<'a>(pub &'a str, pub Option<PostId>, pub usize);

impl Hash for PageKey<'_> {
    fn hash<H: Hasher>(&self, state: &mut H) {
        (self.0, self.1, self.2).hash(state);
    }
}

impl Equivalent<Key> for PageKey<'_> {
    fn equivalent(&self, key: &Key) -> bool {
        self.0 == key.0 && self.1 == key.1 && self.2 == key.2
    }
}

#[derive(Clone)]
pub(super) struct Rendered {
    pub version: CacheVersion,
    pub body: Bytes,
    /// When the cache was last known to have its owner's read recorded: a hit long
    /// after it records one (`Timelines::note_read`), so that a reader served only
    /// kept pages still counts as active and their cache is not dropped as idle.
    pub read_ms: i64,
    /// When the earliest timed mute the page's read hid expires: the page is gone
    /// from then on (by the feed's clock), since it would hide what now shows.
    pub expires_ms: Option<i64>,
}

impl Rendered {
    /// Whether the page may still be served at `now_ms` as far as the mutes it hid
    /// go (the version check comes on top).
    pub fn unexpired(&self, now_ms: i64) -> bool {
        self.expires_ms.is_none_or(|expires| now_ms < expires)
    }
}

/// A page's bytes, with a rough allowance for its key and the cache's own overhead.
#[derive(Clone)]
struct Size;

impl Weighter<Key, Rendered> for Size {
    fn weight(&self, key: &Key, page: &Rendered) -> u64 {
        (key.0.len() + page.body.len() + page.version.heap_size() + 96) as u64
    }
}

/// Roughly what a kept first page weighs, to size the cache's tables.
const TYPICAL_PAGE_BYTES: u64 = 5 << 10;

/// At most `feed.page_memo_mib` of rendered pages; none when it is 0.
pub(super) struct PageMemo {
    pages: Option<Cache<Key, Rendered, Size>>,
}

impl PageMemo {
    pub fn new(mib: u32) -> Self {
        let pages = (mib > 0).then(|| {
            let bytes = u64::from(mib) << 20;
            let items = usize::try_from(bytes / TYPICAL_PAGE_BYTES).unwrap_or(usize::MAX);
            Cache::with_weighter(items.max(16), bytes, Size)
        });
        PageMemo { pages }
    }

    pub fn enabled(&self) -> bool {
        self.pages.is_some()
    }

    pub fn get(&self, key: &PageKey<'_>) -> Option<Rendered> {
        self.pages.as_ref()?.get(key)
    }

    /// Keeps `body` under `version`, with the cache's read recorded as of `read_ms`, or
    /// forgets the key's page when the read had none.
    pub fn put(
        &self,
        key: PageKey<'_>,
        version: Option<CacheVersion>,
        body: &Bytes,
        (read_ms, expires_ms): (i64, Option<i64>),
    ) {
        let Some(pages) = &self.pages else { return };
        match version {
            Some(version) => pages.insert(
                (key.0.to_owned(), key.1, key.2),
                Rendered {
                    version,
                    body: body.clone(),
                    read_ms,
                    expires_ms,
                },
            ),
            None => {
                pages.remove(&key);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::timelines::CacheRows;

    /// A page read while a timed mute stood is gone from the mute's expiry on.
    #[test]
    fn a_page_is_gone_from_the_expiry_of_the_mutes_it_hid() {
        let version = CacheVersion {
            cache: 1,
            rows: CacheRows {
                from: "6740a1b2000c000000000001".parse().unwrap(),
                below: None,
            },
            merged: None,
            below: None,
        };
        let page = |expires_ms| Rendered {
            version: version.clone(),
            body: Bytes::new(),
            read_ms: 0,
            expires_ms,
        };
        assert!(page(None).unexpired(i64::MAX));
        assert!(page(Some(100)).unexpired(99));
        assert!(!page(Some(100)).unexpired(100));
    }

    /// A borrowed key must hash and compare as the owned key it stands for, or every
    /// kept page is missed.
    #[test]
    fn a_borrowed_key_finds_the_page_kept_under_it() {
        let memo = PageMemo::new(1);
        let before: PostId = "6740a1b2000c000000000001".parse().unwrap();
        let version = CacheVersion {
            cache: 7,
            rows: CacheRows {
                from: before,
                below: None,
            },
            merged: None,
            below: None,
        };
        for (user, before, limit) in [("ann", None, 20), ("bob", Some(before), 5)] {
            let body = Bytes::from(format!("{user}'s page"));
            memo.put(
                PageKey(user, before, limit),
                Some(version.clone()),
                &body,
                (0, None),
            );
            let kept = memo.get(&PageKey(user, before, limit)).expect("kept");
            assert_eq!(kept.body, body);
            assert!(memo.get(&PageKey(user, before, limit + 1)).is_none());
            memo.put(PageKey(user, before, limit), None, &body, (0, None));
            assert!(memo.get(&PageKey(user, before, limit)).is_none());
        }
    }
}
