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
//! Without a version (no ready cache, a read that fell back, strategies and stores that
//! keep none: MongoDB keeps none) the set is read from the store as before, once per
//! page.

use std::sync::Arc;

use quick_cache::Weighter;
use quick_cache::sync::Cache;

use super::Timelines;
use crate::domain::relations::Hidden;
use crate::store::StoreResult;

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
    /// version, read by the page *before* this call) is the one the kept set was read
    /// beside and no timed mute in it has expired; else read from the store, and kept
    /// under `version` when there is one.
    pub(super) async fn hidden_under(
        &self,
        reader: &str,
        version: Option<u64>,
        now_ms: i64,
    ) -> StoreResult<Arc<Hidden>> {
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
}
