//! Timeline settings (`[feed]`): the strategy and the sizes of caches and buckets, each
//! checked against MongoDB's document limit.

use std::time::Duration;

use anyhow::bail;
use serde::{Deserialize, Serialize};

use super::HumanDuration;
use crate::domain::FeedStrategy;
use crate::feed::FeedSettings;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct FeedConfig {
    pub strategy: FeedStrategy,
    pub cache_size: u32,
    pub bucket_size: u32,
    pub bucket_span: HumanDuration,
    pub embed_content: bool,
    pub backfill_on_follow: u32,
    /// Entries per part of a timed bucket's period; a full part rolls over to the next.
    pub timed_bucket_max_entries: u32,
    /// Authors with at most this many followers are fanned out to before the 201; larger
    /// audiences only by the timelines worker.
    pub inline_fanout_max: u64,
    /// `hybrid`: authors with more followers than this become celebrities, whose posts
    /// are merged into readers' pages instead of fanned out; they stop being celebrities
    /// below nine tenths of it.
    pub hybrid_threshold: u64,
    /// MiB of rendered timeline pages each process keeps, to serve again while the cache
    /// they were read from is unchanged; 0 keeps none.
    pub page_memo_mib: u32,
    /// `cache` and `hybrid`: a cache whose owner has not read it for this long is
    /// dropped by the timelines worker, and built again by their next read; `0s` keeps
    /// caches for ever.
    pub cache_idle: HumanDuration,
}

impl Default for FeedConfig {
    fn default() -> Self {
        let defaults = FeedSettings::default();
        FeedConfig {
            strategy: defaults.strategy,
            cache_size: defaults.cache_size,
            bucket_size: defaults.bucket_size,
            bucket_span: HumanDuration(Duration::from_millis(defaults.bucket_span_ms as u64)),
            embed_content: defaults.embed_content,
            backfill_on_follow: defaults.backfill_on_follow,
            timed_bucket_max_entries: defaults.timed_bucket_max_entries,
            inline_fanout_max: defaults.inline_fanout_max,
            hybrid_threshold: defaults.hybrid_threshold,
            page_memo_mib: defaults.page_memo_mib,
            cache_idle: HumanDuration(Duration::from_millis(defaults.cache_idle_ms as u64)),
        }
    }
}

impl FeedConfig {
    pub fn settings(&self) -> FeedSettings {
        FeedSettings {
            strategy: self.strategy,
            cache_size: self.cache_size,
            bucket_size: self.bucket_size,
            bucket_span_ms: self.bucket_span.0.as_millis() as i64,
            embed_content: self.embed_content,
            backfill_on_follow: self.backfill_on_follow,
            timed_bucket_max_entries: self.timed_bucket_max_entries,
            inline_fanout_max: self.inline_fanout_max,
            hybrid_threshold: self.hybrid_threshold,
            page_memo_mib: self.page_memo_mib,
            cache_idle_ms: i64::try_from(self.cache_idle.0.as_millis()).unwrap_or(i64::MAX),
        }
    }
}

/// The shortest `feed.cache_idle` other than 0. A read stamps its cache at most every
/// eighth of it, so a short one costs a write per reader that often: seconds are for
/// tests (the history checker drops caches under its readers with them).
const MIN_CACHE_IDLE: Duration = Duration::from_secs(1);
/// The longest: ten years, far past any use, and within an `i64` of milliseconds.
const MAX_CACHE_IDLE: Duration = Duration::from_secs(3650 * 86_400);

impl FeedConfig {
    pub(super) fn validate(&self) -> anyhow::Result<()> {
        if !(1..=10_000).contains(&self.cache_size) {
            bail!("feed.cache_size must be 1-10000, got {}", self.cache_size);
        }
        if !(1..=10_000).contains(&self.bucket_size) {
            bail!("feed.bucket_size must be 1-10000, got {}", self.bucket_size);
        }
        if self.bucket_span.0 < Duration::from_secs(1) {
            bail!("feed.bucket_span must be at least 1s");
        }
        if self.backfill_on_follow > 10_000 {
            bail!("feed.backfill_on_follow must be at most 10000");
        }
        if self.hybrid_threshold == 0 {
            bail!("feed.hybrid_threshold must be positive");
        }
        if self.page_memo_mib > 4096 {
            bail!(
                "feed.page_memo_mib must be at most 4096, got {}",
                self.page_memo_mib
            );
        }
        let idle = self.cache_idle.0;
        if !idle.is_zero() && !(MIN_CACHE_IDLE..=MAX_CACHE_IDLE).contains(&idle) {
            bail!(
                "feed.cache_idle must be 0s (keep caches for ever) or between 1s and 3650d, got {}s",
                idle.as_secs()
            );
        }
        if self.timed_bucket_max_entries == 0 {
            bail!("feed.timed_bucket_max_entries must be positive");
        }
        for (key, entries) in [
            ("feed.cache_size", self.cache_size),
            ("feed.bucket_size", self.bucket_size),
            (
                "feed.timed_bucket_max_entries",
                self.timed_bucket_max_entries,
            ),
        ] {
            fits_in_a_document(key, entries)?;
        }
        Ok(())
    }
}

/// Rejects an entry count whose document could pass MongoDB's 16 MiB limit when every
/// entry is the largest possible (whatever `embed_content` says now: documents keep the
/// entries they were written with). Checked on every backend, so that a configuration
/// means the same on both.
fn fits_in_a_document(key: &str, entries: u32) -> anyhow::Result<()> {
    use crate::store::timelines::{
        DOCUMENT_BUDGET_BYTES, largest_document_bytes, largest_entry_bytes,
    };
    let bytes = largest_document_bytes(entries);
    if bytes <= DOCUMENT_BUDGET_BYTES {
        return Ok(());
    }
    let (mut most, mut over) = (0, entries);
    while over - most > 1 {
        let mid = most + (over - most) / 2;
        if largest_document_bytes(mid) <= DOCUMENT_BUDGET_BYTES {
            most = mid;
        } else {
            over = mid;
        }
    }
    bail!(
        "{key} = {entries} could exceed MongoDB's 16 MiB document limit: {entries} entries of \
         up to {} bytes each (the longest post text in UTF-8, the longest user id, a 12-byte \
         id and BSON framing) make a document of up to {bytes} bytes, over the {} allowed \
         (16 MiB less 1 MiB of headroom); at most {most} entries fit",
        largest_entry_bytes(),
        DOCUMENT_BUDGET_BYTES
    );
}
