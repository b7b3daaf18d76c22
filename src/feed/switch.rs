//! Starting a store under another `feed.strategy`, or with another setting that shapes
//! what a strategy materialises: the timelines are brought in line before anything is
//! served, or the start is refused with what to do.
//!
//! The store records what its timelines were last built for (`BulkStore::feed_record`):
//! the [`Shape`] of the settings, settled or still being switched to. At start,
//! [`prepare`] compares it with the configured shape:
//! - the same, settled: nothing to do (one read);
//! - no record (a new store, or one written before socialite kept the record): the
//!   configured shape is recorded, as what the timelines were built for;
//! - otherwise (another shape, a switch a crash cut short, a record this version cannot
//!   read): the timelines are rebuilt from the sources by
//!   `BulkStore::derive_timelines` (caches dropped, to be built on first read; buckets
//!   materialised; `hybrid`'s celebrities classified; delivery markers set), holding the
//!   store as a bulk load does (`BulkStore::begin_load`: one atomic step that refuses
//!   while any other process serves the store or loads it, and that keeps every other
//!   server out until `finish_load`). The record says "switching" from before the
//!   rebuild to after it, and the load's mark stays set until then, so a process killed
//!   in between leaves a store that no server serves and that the next start rebuilds
//!   again, never one that claims timelines it did not finish.
//!
//! The record changes only under that hold, and a server registers (`enter_serving`)
//! only while nobody holds it; so a server checks the record once more after it
//! registered ([`check_settled`]), which closes the window between its first read and
//! its registration.

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use serde::{Deserialize, Serialize};

use crate::domain::FeedStrategy;
use crate::store::Store;
use crate::store::bulk::{Derived, Exclusion, TimelineLayout};

/// What the materialised timelines depend on, beyond the sources. Settings left out
/// change nothing a read can see: `cache_size` (a cache covers the interval from its
/// oldest entry up, whatever its length; pushes trim to the new size), `bucket_size`
/// and `timed_bucket_max_entries` (a full bucket rolls over at the new size; reads order
/// buckets by their entries, not their layout), `backfill_on_follow` (later follows).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Shape {
    pub strategy: FeedStrategy,
    /// Whether entries carry their text and name; fixed for `fanout_on_read`, which
    /// materialises nothing.
    pub embed_content: bool,
    /// `timed_buckets`: the period, which groups entries (a push is idempotent within
    /// its period's buckets, so a new period would let a replay add a second entry).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bucket_span_ms: Option<i64>,
    /// `hybrid`: who is a celebrity.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hybrid_threshold: Option<u64>,
}

impl Shape {
    pub fn of(settings: &TimelineLayout) -> Shape {
        let strategy = settings.strategy;
        Shape {
            strategy,
            embed_content: strategy == FeedStrategy::FanoutOnRead || settings.embed_content,
            bucket_span_ms: (strategy == FeedStrategy::TimedBuckets)
                .then_some(settings.bucket_span_ms),
            hybrid_threshold: (strategy == FeedStrategy::Hybrid)
                .then_some(settings.hybrid_threshold),
        }
    }
}

impl std::fmt::Display for Shape {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "feed.strategy = {}", self.strategy)?;
        if self.strategy != FeedStrategy::FanoutOnRead {
            write!(f, ", feed.embed_content = {}", self.embed_content)?;
        }
        if let Some(span) = self.bucket_span_ms {
            write!(f, ", feed.bucket_span = {}s", span as f64 / 1000.0)?;
        }
        if let Some(threshold) = self.hybrid_threshold {
            write!(f, ", feed.hybrid_threshold = {threshold}")?;
        }
        Ok(())
    }
}

/// The record as stored: the shape, and whether a switch to it is under way.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct Record {
    shape: Shape,
    switching: bool,
    at_ms: i64,
}

/// What [`prepare`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Prepared {
    /// The store was built for the configured shape already.
    Unchanged,
    /// The store had no record: the configured shape was recorded.
    Recorded,
    /// The timelines were rebuilt for the configured shape.
    Rebuilt {
        /// What the record said before; `None` for a record this version cannot read.
        from: Option<Shape>,
        derived: Derived,
        took: Duration,
    },
}

/// The clock a start reads.
pub type Now = Arc<dyn Fn() -> i64 + Send + Sync>;

/// Records that the timelines were just built for `settings` (a bulk load's
/// `derive_all` builds them for the configured strategy).
pub async fn record_built(
    store: &Store,
    settings: &TimelineLayout,
    at_ms: i64,
) -> anyhow::Result<()> {
    write(store, &Shape::of(settings), false, at_ms).await
}

async fn write(store: &Store, shape: &Shape, switching: bool, at_ms: i64) -> anyhow::Result<()> {
    let record = Record {
        shape: shape.clone(),
        switching,
        at_ms,
    };
    let text = serde_json::to_string(&record).context("encoding the feed record")?;
    store
        .bulk
        .record_feed(&text)
        .await
        .context("recording what the timelines are built for")
}

async fn read(store: &Store) -> anyhow::Result<Option<Option<Record>>> {
    let stored = store
        .bulk
        .feed_record()
        .await
        .context("reading what the timelines were built for")?;
    Ok(stored.map(|text| serde_json::from_str::<Record>(&text).ok()))
}

fn describe(record: &Option<Option<Record>>) -> String {
    match record {
        Some(Some(r)) if r.switching => format!("a switch to {} that did not finish", r.shape),
        Some(Some(r)) => r.shape.to_string(),
        Some(None) => "an unreadable record".to_owned(),
        None => "no record".to_owned(),
    }
}

/// Brings the timelines in line with `settings` before anything is served, or refuses
/// (see the module's comment).
pub async fn prepare(
    store: &Store,
    settings: &TimelineLayout,
    now: &Now,
) -> anyhow::Result<Prepared> {
    let want = Shape::of(settings);
    let record = read(store).await?;
    if matches!(&record, Some(Some(r)) if !r.switching && r.shape == want) {
        return Ok(Prepared::Unchanged);
    }
    let was = describe(&record);
    // A mark with no switch recorded is a bulk load's, cut short: its data, not ours.
    let switching = matches!(&record, Some(Some(r)) if r.switching);
    if !switching && let Some(at) = store.bulk.load_in_progress().await? {
        bail!("{}", Exclusion::Loading { since_ms: Some(at) });
    }
    if let Err(exclusion) = store.bulk.begin_load(now()).await? {
        let exclusion = match exclusion {
            Exclusion::Serving { .. } => "another process serves it".to_owned(),
            loading => loading.to_string(),
        };
        bail!(
            "this store's timelines were built for {was}, and this process is configured with \
             {want}; bringing them in line needs the store to itself, but {exclusion}. Stop \
             every other process on this store and start again, or configure {was} here"
        );
    }
    // Held: nobody else serves, loads or switches the store until `finish_load`.
    let record = read(store).await?;
    let outcome = match &record {
        Some(Some(r)) if !r.switching && r.shape == want => Prepared::Unchanged,
        None => {
            write(store, &want, false, now()).await?;
            Prepared::Recorded
        }
        _ => {
            let was = describe(&record);
            let from = record.and_then(|r| r.map(|r| r.shape));
            tracing::warn!(
                from = %was,
                to = %want,
                "the store's timelines were built for other feed settings: rebuilding them from \
                 the sources before serving"
            );
            let started = Instant::now();
            write(store, &want, true, now()).await?;
            let step = Arc::new(|name: &'static str| tracing::info!(step = name, "switch rebuild"));
            let derived = store
                .bulk
                .derive_timelines(settings, step)
                .await
                .context("rebuilding the timelines (the next start does it again)")?;
            write(store, &want, false, now()).await?;
            let took = started.elapsed();
            tracing::warn!(
                from = %was,
                to = %want,
                timeline_entries = derived.timeline_entries,
                delivered = derived.delivered,
                took_ms = took.as_millis() as u64,
                "timelines rebuilt for the new feed settings: every cache and bucket dropped (a \
                 cache is built again on its owner's first read), a bucket strategy's buckets \
                 laid out from the sources, hybrid's celebrities classified, every post marked \
                 delivered"
            );
            metrics::counter!("socialite_feed_switches_total").increment(1);
            Prepared::Rebuilt {
                from,
                derived,
                took,
            }
        }
    };
    store.bulk.finish_load().await?;
    Ok(outcome)
}

/// After this process registered as serving: the store is still recorded as built for
/// `settings`. Another process may have switched it between [`prepare`] and the
/// registration; from the registration on, nobody can.
pub async fn check_settled(store: &Store, settings: &TimelineLayout) -> anyhow::Result<()> {
    let want = Shape::of(settings);
    let record = read(store).await?;
    if matches!(&record, Some(Some(r)) if !r.switching && r.shape == want) {
        return Ok(());
    }
    bail!(
        "another process switched this store's timelines to {} while this one started with \
         {want}: start again with the same feed settings as the other processes",
        describe(&record)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes_keep_only_what_a_strategy_materialises() {
        let mut settings = crate::feed::FeedSettings {
            strategy: FeedStrategy::Cache,
            ..crate::feed::FeedSettings::default()
        };
        let cache = Shape::of(&settings.layout());
        settings.cache_size += 1;
        settings.bucket_span_ms += 1;
        settings.hybrid_threshold += 1;
        assert_eq!(
            Shape::of(&settings.layout()),
            cache,
            "cache ignores sizes of others"
        );
        settings.strategy = FeedStrategy::TimedBuckets;
        let timed = Shape::of(&settings.layout());
        settings.bucket_span_ms += 1;
        assert_ne!(
            Shape::of(&settings.layout()),
            timed,
            "a new period regroups entries"
        );
        settings.strategy = FeedStrategy::FanoutOnRead;
        let read = Shape::of(&settings.layout());
        settings.embed_content = !settings.embed_content;
        assert_eq!(
            Shape::of(&settings.layout()),
            read,
            "fanout on read stores no entries"
        );
        settings.strategy = FeedStrategy::Hybrid;
        let hybrid = Shape::of(&settings.layout());
        settings.hybrid_threshold += 1;
        assert_ne!(
            Shape::of(&settings.layout()),
            hybrid,
            "a new threshold reclassifies"
        );
    }
}
