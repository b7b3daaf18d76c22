//! Rendered timeline pages, kept in each process and served again while the store says
//! they stand. A page is kept only with a version (see `Timelines::versioned_page`: a
//! page read whole from one cache, as its rows stood), and served again only after one
//! light read finds that version still, with no removal or rename pending. Every write
//! of a cache's rows, by any process that shares the store, moves its version to a
//! value it never had, so a kept page is never served past a change: what a kept page
//! saves is the page's rows, their decoding and the rendering, not the read.

use bytes::Bytes;
use moka::sync::Cache;

use crate::domain::PostId;
use crate::store::timelines::CacheVersion;

/// Whose page, below which post, how long.
type Key = (String, Option<PostId>, usize);

#[derive(Clone)]
pub(super) struct Rendered {
    pub version: CacheVersion,
    pub body: Bytes,
}

/// At most `feed.page_memo_mib` of rendered pages; none when it is 0.
pub(super) struct PageMemo {
    pages: Option<Cache<Key, Rendered>>,
}

impl PageMemo {
    pub fn new(mib: u32) -> Self {
        let pages = (mib > 0).then(|| {
            Cache::builder()
                .max_capacity(u64::from(mib) << 20)
                .weigher(|key: &Key, page: &Rendered| {
                    let bytes = key.0.len() + page.body.len() + page.version.heap_size() + 96;
                    u32::try_from(bytes).unwrap_or(u32::MAX)
                })
                .build()
        });
        PageMemo { pages }
    }

    pub fn enabled(&self) -> bool {
        self.pages.is_some()
    }

    pub fn get(&self, key: &Key) -> Option<Rendered> {
        self.pages.as_ref()?.get(key)
    }

    /// Keeps `body` under `version`, or forgets the key's page when the read had none.
    pub fn put(&self, key: Key, version: Option<CacheVersion>, body: &Bytes) {
        let Some(pages) = &self.pages else { return };
        match version {
            Some(version) => pages.insert(
                key,
                Rendered {
                    version,
                    body: body.clone(),
                },
            ),
            None => pages.invalidate(&key),
        }
    }
}
