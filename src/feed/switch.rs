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
//!   materialised; `hybrid`'s celebrities classified; delivery markers set), on a store
//!   no other process serves. The record says "switching" from before the rebuild to
//!   after it, so a process killed in between leaves a record that the next start
//!   rebuilds again, never one that claims timelines it did not finish.
//!
//! Refused: a rebuild while another process holds an unexpired worker lease (it serves
//! the store under the recorded shape; a process with `workers.enabled = false` holds
//! none and is not seen), and while another process holds the rebuild's own lease
//! ([`LEASE`]).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use serde::{Deserialize, Serialize};

use super::FeedSettings;
use crate::domain::FeedStrategy;
use crate::store::Store;
use crate::store::bulk::Derived;

/// The lease a process holds while it rebuilds the timelines for a switch.
pub const LEASE: &str = "timelines-switch";

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
    pub fn of(settings: &FeedSettings) -> Shape {
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

/// Who is starting, and when it is.
pub struct Starter<'a> {
    /// This process's name in leases.
    pub holder: &'a str,
    pub lease_ttl_ms: i64,
    pub now_ms: Arc<dyn Fn() -> i64 + Send + Sync>,
}

/// Records that the timelines were just built for `settings` (a bulk load's
/// `derive_all` builds them for the configured strategy).
pub async fn record_built(
    store: &Store,
    settings: &FeedSettings,
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

/// Brings the timelines in line with `settings` before anything is served, or refuses
/// (see the module's comment).
pub async fn prepare(
    store: &Store,
    settings: &FeedSettings,
    starter: &Starter<'_>,
) -> anyhow::Result<Prepared> {
    let want = Shape::of(settings);
    let stored = store
        .bulk
        .feed_record()
        .await
        .context("reading what the timelines were built for")?;
    let record: Option<Option<Record>> =
        stored.map(|text| serde_json::from_str::<Record>(&text).ok());
    let now = || (starter.now_ms)();
    match &record {
        Some(Some(r)) if !r.switching && r.shape == want => return Ok(Prepared::Unchanged),
        None => {
            write(store, &want, false, now()).await?;
            return Ok(Prepared::Recorded);
        }
        _ => {}
    }
    let from = record
        .as_ref()
        .and_then(|r| r.as_ref().map(|r| r.shape.clone()));
    let was = match &record {
        Some(Some(r)) if r.switching => format!("a switch to {} that did not finish", r.shape),
        Some(Some(r)) => r.shape.to_string(),
        _ => "an unreadable record".to_owned(),
    };
    let leases = store.leases.leases().await.context("reading the leases")?;
    let at = now();
    if let Some(live) = leases
        .iter()
        .find(|l| l.name != LEASE && l.holder.is_some() && l.expires_at_ms > at)
    {
        bail!(
            "this store's timelines were built for {was}, and this process is configured with \
             {want}; switching rebuilds them, which needs every other process on the store \
             stopped, but worker lease {:?} is held by {} for {} ms more. Stop every process on \
             this store and start again, or configure {was} here",
            live.name,
            live.holder.as_deref().unwrap_or_default(),
            live.expires_at_ms - at
        );
    }
    let (holder, ttl) = (starter.holder, starter.lease_ttl_ms);
    let lease = store.leases.acquire(LEASE, holder, at, ttl).await?;
    if !lease.held_by(holder) {
        bail!(
            "another process ({}) is rebuilding this store's timelines for a strategy switch \
             (its lease {LEASE:?} expires in {} ms unless renewed); start again once it has \
             finished, with the same feed settings as it",
            lease.holder.as_deref().unwrap_or_default(),
            lease.expires_at_ms - at
        );
    }
    tracing::warn!(
        from = %was,
        to = %want,
        "the store's timelines were built for other feed settings: rebuilding them from the \
         sources before serving"
    );
    let started = Instant::now();
    let result = rebuild(store, settings, &want, starter, lease.version).await;
    let released = store.leases.release(LEASE, holder, lease.version).await;
    let derived = result?;
    released.context("releasing the switch's lease")?;
    let took = started.elapsed();
    tracing::warn!(
        from = %was,
        to = %want,
        timeline_entries = derived.timeline_entries,
        delivered = derived.delivered,
        took_ms = took.as_millis() as u64,
        "timelines rebuilt for the new feed settings: every cache and bucket dropped (a cache \
         is built again on its owner's first read), a bucket strategy's buckets laid out from \
         the sources, hybrid's celebrities classified, every post marked delivered"
    );
    metrics::counter!("socialite_feed_switches_total").increment(1);
    Ok(Prepared::Rebuilt {
        from,
        derived,
        took,
    })
}

/// The rebuild under the lease, renewed meanwhile: "switching" recorded first, the
/// settled shape only after the rebuild, and only while the lease is still ours.
async fn rebuild(
    store: &Store,
    settings: &FeedSettings,
    want: &Shape,
    starter: &Starter<'_>,
    version: u64,
) -> anyhow::Result<Derived> {
    let now = starter.now_ms.clone();
    write(store, want, true, now()).await?;
    let lost = Arc::new(AtomicBool::new(false));
    let renewer = {
        let (store, lost, now) = (store.clone(), lost.clone(), now.clone());
        let (holder, ttl) = (starter.holder.to_owned(), starter.lease_ttl_ms);
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(Duration::from_millis((ttl / 3).max(1) as u64)).await;
                let held = store
                    .leases
                    .refresh(LEASE, &holder, version, now(), ttl)
                    .await;
                if !matches!(held, Ok(true)) {
                    lost.store(true, Ordering::SeqCst);
                    return;
                }
            }
        })
    };
    let step = Arc::new(|name: &'static str| tracing::info!(step = name, "switch rebuild"));
    let derived = store.bulk.derive_timelines(settings, step).await;
    renewer.abort();
    let derived = derived.context("rebuilding the timelines")?;
    let (holder, ttl) = (starter.holder, starter.lease_ttl_ms);
    let held = store
        .leases
        .refresh(LEASE, holder, version, now(), ttl)
        .await?;
    if lost.load(Ordering::SeqCst) || !held {
        bail!(
            "the switch's lease {LEASE:?} was lost during the rebuild (another process took it \
             over): the store stays recorded as switching; start again"
        );
    }
    write(store, want, false, now()).await?;
    Ok(derived)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes_keep_only_what_a_strategy_materialises() {
        let mut settings = FeedSettings {
            strategy: FeedStrategy::Cache,
            ..FeedSettings::default()
        };
        let cache = Shape::of(&settings);
        settings.cache_size += 1;
        settings.bucket_span_ms += 1;
        settings.hybrid_threshold += 1;
        assert_eq!(Shape::of(&settings), cache, "cache ignores sizes of others");
        settings.strategy = FeedStrategy::TimedBuckets;
        let timed = Shape::of(&settings);
        settings.bucket_span_ms += 1;
        assert_ne!(Shape::of(&settings), timed, "a new period regroups entries");
        settings.strategy = FeedStrategy::FanoutOnRead;
        let read = Shape::of(&settings);
        settings.embed_content = !settings.embed_content;
        assert_eq!(
            Shape::of(&settings),
            read,
            "fanout on read stores no entries"
        );
        settings.strategy = FeedStrategy::Hybrid;
        let hybrid = Shape::of(&settings);
        settings.hybrid_threshold += 1;
        assert_ne!(Shape::of(&settings), hybrid, "a new threshold reclassifies");
    }
}
