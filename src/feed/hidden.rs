//! What each reader hides ([`Hidden`]: blocks either way, standing mutes), kept in the
//! process under the version of the reader's cache it was read beside, so that a warm
//! page read does not read the reader's whole block and mute lists again.
//!
//! Every block, unblock, mute and unmute moves, in its own write, the cache version of
//! each reader whose set it changes (see `store::relations`), to a value it never had.
//! A set is kept only when read *after* a page read that carried the reader's version,
//! and served again only to a page read that carries the same version: a relation write
//! whose 2xx came before that later read moved the version before it, so if the version
//! is still the same, the write moved it before the kept set's version was read, and the
//! set, read after, already holds it. A set is also gone from the earliest expiry of a
//! timed mute it holds (by the feed's clock), since it would hide what now shows.
//!
//! A page read that carried no version (it read on below the cache, by fanout on read)
//! reads the reader's cache version alone first, in one light statement, and uses that:
//! a version read before the set is all the rule above needs, whatever the page's
//! entries were read from. So a reader whose pages fall back below their cache does not
//! read their whole block and mute lists at every page either.
//!
//! Without any version (no ready cache, a removal pending, strategies and stores that
//! keep none: MongoDB keeps none) the set is read from the store, once per page.

use std::sync::Arc;

use quick_cache::Weighter;
use quick_cache::sync::Cache;

use super::Timelines;
use crate::domain::relations::Hidden;
use crate::domain::{PostId, TimelineKind};
use crate::store::StoreResult;
use crate::store::timelines::CacheRows;

/// The bytes of sets each process keeps at most; a set of 1,000 accounts weighs about
/// 150 KB, so some hundred of the largest sets, and tens of thousands of small ones.
const BUDGET_BYTES: u64 = 16 << 20;

/// A set and the cache version it was read under.
#[derive(Clone)]
struct Kept {
    version: u64,
    hidden: Arc<Hidden>,
}

/// A rough allowance for a set's accounts (each in up to three hash sets) and its key.
#[derive(Clone)]
struct Size;

impl Weighter<String, Kept> for Size {
    fn weight(&self, key: &String, kept: &Kept) -> u64 {
        (key.len() + 96 + kept.hidden.len() * 150) as u64
    }
}

/// The reader's hidden sets, each under the cache version it was read beside.
pub(super) struct HiddenMemo {
    sets: Cache<String, Kept, Size>,
}

impl Default for HiddenMemo {
    fn default() -> Self {
        HiddenMemo {
            sets: Cache::with_weighter(16_384, BUDGET_BYTES, Size),
        }
    }
}

impl Timelines {
    /// What is hidden from `reader` at `now_ms`: kept when `version` (the reader's cache
    /// version, read by the page *before* this call, or else read here first) is the
    /// one the kept set was read beside and no timed mute in it has expired; else read
    /// from the store, and kept under that version when there is one.
    pub(super) async fn hidden_under(
        &self,
        reader: &str,
        version: Option<u64>,
        now_ms: i64,
    ) -> StoreResult<Arc<Hidden>> {
        let version = match version {
            Some(version) => Some(version),
            None => self.reader_version(reader).await?,
        };
        let Some(version) = version else {
            return Ok(Arc::new(self.store.relations.hidden(reader, now_ms).await?));
        };
        if let Some(kept) = self.hidden.sets.get(reader)
            && kept.version == version
            && kept
                .hidden
                .expires_ms()
                .is_none_or(|expires| now_ms < expires)
        {
            metrics::counter!("socialite_hidden_memo_hits_total").increment(1);
            return Ok(kept.hidden);
        }
        let hidden = Arc::new(self.store.relations.hidden(reader, now_ms).await?);
        self.hidden.sets.insert(
            reader.to_owned(),
            Kept {
                version,
                hidden: hidden.clone(),
            },
        );
        Ok(hidden)
    }

    /// The reader's cache version alone (a span of no rows, so no rename holds it back),
    /// for strategies with a cache; `None` without a ready cache, while a removal is
    /// pending, and from a store that keeps no versions.
    async fn reader_version(&self, reader: &str) -> StoreResult<Option<u64>> {
        if self.feed.kind() != Some(TimelineKind::Cache) {
            return Ok(None);
        }
        let none = CacheRows {
            from: PostId::MAX,
            below: Some(PostId::MAX),
        };
        let read = self
            .store
            .timelines
            .cache_version(reader, none, false)
            .await?;
        Ok(read.map(|v| v.cache))
    }
}
