//! Bulk loading, for `socialite seed` and `socialite import`: source rows in large
//! batches through the bulk port, then every derived datum built from the sources, then
//! every worker's position moved to the change feed's head.
//!
//! - **The service must be stopped.** A load writes sources without change-feed entries
//!   and rebuilds derived data from a moment's sources, so a server writing beside it
//!   could have writes that neither the rebuild nor its workers ever see. Every serving
//!   process registers with the store (`BulkStore::enter_serving`, in `app`), workers
//!   or not, and [`Loader::begin`] marks the store as being loaded
//!   (`BulkStore::begin_load`): each is refused while the other holds the store, in one
//!   atomic step of the store, so a server and a load started at once never both run.
//!   (A worker lease held and unexpired also refuses a load: a server of a version
//!   before the registration.)
//! - **Interrupted loads** leave the mark. Running the same load again finishes it in
//!   the same state: inserts skip rows that exist, derived data is recomputed from all
//!   the sources, and the mark goes only once positions are at the head.
//! - **Pipelined:** a producer thread builds batches (generating or parsing) while the
//!   store writes the previous one.

mod check;
mod check_reposts;
mod duplicates;
pub mod import;
mod lines;
mod progress;
pub mod seed;

use std::future::Future;
use std::time::Instant;

use anyhow::Context;

pub use progress::Progress;

use crate::config::Config;
use crate::domain::{ActivityLimits, now_ms};
use crate::store::Store;
use crate::store::bulk::{DeriveSettings, Derived, Rows};
use crate::workers::{activity, aggregates, counters, events, notifications, timelines};

/// Rows per batch: one transaction on the embedded store, one `insert_many` on MongoDB.
pub const BATCH: usize = 50_000;
/// The workers that read the change feed, and the one that reads the event log.
const CHANGE_WORKERS: [&str; 5] = [
    activity::NAME,
    timelines::NAME,
    counters::NAME,
    events::NAME,
    notifications::NAME,
];
const EVENT_WORKERS: [&str; 1] = [aggregates::NAME];

/// What a batch holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    Users,
    Follows,
    Posts,
    Likes,
    Blocks,
    Mutes,
    Reposts,
    /// API tokens: loaded, but not counted as source rows.
    Tokens,
}

impl Source {
    pub fn name(self) -> &'static str {
        match self {
            Source::Users => "users",
            Source::Follows => "follows",
            Source::Posts => "posts",
            Source::Likes => "likes",
            Source::Blocks => "blocks",
            Source::Mutes => "mutes",
            Source::Reposts => "reposts",
            Source::Tokens => "tokens",
        }
    }
}

/// Source rows a load wrote, and how long it took.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct LoadReport {
    pub users: u64,
    pub follows: u64,
    pub posts: u64,
    pub likes: u64,
    pub blocks: u64,
    pub mutes: u64,
    pub reposts: u64,
    /// Rows handed to the store but not written: their key was already stored (a
    /// re-run), or repeated an earlier row of the same values.
    pub not_written: u64,
    pub derived: Derived,
    /// Seconds from the start to the end, derived data and positions included.
    pub seconds: f64,
}

impl LoadReport {
    pub fn rows(&self) -> u64 {
        self.users
            + self.follows
            + self.posts
            + self.likes
            + self.blocks
            + self.mutes
            + self.reposts
    }

    pub fn rows_per_second(&self) -> f64 {
        self.rows() as f64 / self.seconds.max(1e-9)
    }
}

impl std::fmt::Display for LoadReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} users, {} follows, {} posts, {} likes, {} blocks, {} mutes, {} reposts written ({} source \
             rows; {} more already stored or repeated) in {:.1} s: {:.0} rows/s, \
             derived data included ({} activity entries, {} timeline entries, {} events, \
             {} notifications; {} follows removed beside blocks)",
            self.users,
            self.follows,
            self.posts,
            self.likes,
            self.blocks,
            self.mutes,
            self.reposts,
            self.rows(),
            self.not_written,
            self.seconds,
            self.rows_per_second(),
            self.derived.activity_entries,
            self.derived.timeline_entries,
            self.derived.events,
            self.derived.notifications,
            self.derived.follows_blocked,
        )
    }
}

/// The derived data's settings from the configuration.
pub fn derive_settings(config: &Config) -> DeriveSettings {
    DeriveSettings {
        feed: config.feed.settings().layout(),
        activity: ActivityLimits {
            primary_limit: config.activity.primary_limit,
            page_size: config.activity.page_size,
        },
        events: config.events.bounds(),
        now_ms: now_ms(),
    }
}

/// Fails when a worker lease is held and unexpired: a server is running on the store.
pub async fn ensure_stopped(store: &Store) -> anyhow::Result<()> {
    let now = now_ms();
    let leases = store
        .leases
        .leases()
        .await
        .context("reading the worker leases")?;
    if let Some(live) = leases
        .iter()
        .find(|l| l.holder.is_some() && l.expires_at_ms > now)
    {
        anyhow::bail!(
            "worker lease {:?} is held by {} for {} ms more: a server is running on this store. \
             A bulk load needs the service stopped; stop every server on it and run the load again",
            live.name,
            live.holder.as_deref().unwrap_or_default(),
            live.expires_at_ms - now
        );
    }
    Ok(())
}

/// One bulk load in progress.
pub struct Loader {
    store: Store,
    settings: DeriveSettings,
    progress: Progress,
    started: Instant,
    report: LoadReport,
}

impl Loader {
    /// Marks the store as being loaded, refused while a server is registered on it
    /// (one atomic step: see the bulk port), and until the load ends.
    pub async fn begin(store: Store, settings: DeriveSettings) -> anyhow::Result<Loader> {
        ensure_stopped(&store).await?;
        let earlier = store.bulk.load_in_progress().await?;
        if let Err(refused) = store.bulk.begin_load(now_ms()).await? {
            anyhow::bail!("{refused}");
        }
        if let Some(at) = earlier {
            tracing::warn!(
                started_ms = at,
                "an earlier load did not finish; this one finishes it"
            );
        }
        Ok(Loader {
            store,
            settings,
            progress: Progress::new(),
            started: Instant::now(),
            report: LoadReport::default(),
        })
    }

    /// Writes the batches `produce` makes (on a blocking thread, handing each to `send`)
    /// with `insert`, while the next batch is being made. Returns the rows written (as
    /// `insert` counts them: rows whose key exists are not).
    pub async fn load<R, P, I, Fut>(
        &mut self,
        source: Source,
        expected: u64,
        produce: P,
        insert: I,
    ) -> anyhow::Result<u64>
    where
        R: Send + 'static,
        P: FnOnce(&mut dyn FnMut(Rows<R>) -> anyhow::Result<()>) -> anyhow::Result<()>
            + Send
            + 'static,
        I: Fn(Store, Rows<R>) -> Fut,
        Fut: Future<Output = crate::store::StoreResult<u64>>,
    {
        let what = source.name();
        let bar = self.progress.bar(what, expected);
        let started = Instant::now();
        let (tx, mut rx) = tokio::sync::mpsc::channel::<Rows<R>>(2);
        let producer = tokio::task::spawn_blocking(move || {
            produce(&mut |rows| {
                tx.blocking_send(rows)
                    .map_err(|_| anyhow::anyhow!("the writer stopped"))
            })
        });
        let (mut rows, mut handed) = (0, 0);
        while let Some(batch) = rx.recv().await {
            let n = batch.len() as u64;
            rows += insert(self.store.clone(), batch)
                .await
                .with_context(|| format!("writing {what}"))?;
            handed += n;
            bar.inc(n);
        }
        producer.await.context("the batch producer panicked")??;
        bar.finish();
        let seconds = started.elapsed().as_secs_f64();
        tracing::info!(
            rows,
            not_written = handed.saturating_sub(rows),
            seconds,
            "loaded {what}"
        );
        if source != Source::Tokens {
            self.report.not_written += handed.saturating_sub(rows);
        }
        match source {
            Source::Users => self.report.users += rows,
            Source::Follows => self.report.follows += rows,
            Source::Posts => self.report.posts += rows,
            Source::Likes => self.report.likes += rows,
            Source::Blocks => self.report.blocks += rows,
            Source::Mutes => self.report.mutes += rows,
            Source::Reposts => self.report.reposts += rows,
            Source::Tokens => {}
        }
        Ok(rows)
    }

    /// Builds the derived data, moves every worker to the head, clears the mark.
    pub async fn finish(mut self) -> anyhow::Result<LoadReport> {
        let spinner = self.progress.spinner("derived data");
        let reporter = spinner.clone();
        // Each step's start ends the step before; the log has how long each took.
        let last = std::sync::Mutex::new((Instant::now(), ""));
        let step: crate::store::bulk::StepReport =
            std::sync::Arc::new(move |name: &'static str| {
                let mut last = last.lock().unwrap_or_else(|p| p.into_inner());
                if !last.1.is_empty() {
                    let seconds = last.0.elapsed().as_secs_f64();
                    tracing::info!(seconds, "done: {}", last.1);
                }
                *last = (Instant::now(), name);
                reporter.set_message(name);
            });
        self.report.derived = self
            .store
            .bulk
            .derive_all(&self.settings, step.clone())
            .await
            .context("building the derived data")?;
        // The timelines are now built for these settings (see `feed::switch`).
        crate::feed::switch::record_built(&self.store, &self.settings.feed, now_ms()).await?;
        step("worker positions");
        self.store
            .bulk
            .set_positions_to_head(&CHANGE_WORKERS, &EVENT_WORKERS)
            .await
            .context("moving the workers to the head")?;
        step("store settings and checkpoint");
        self.store.bulk.finish_load().await?;
        step("done");
        spinner.finish_with_message("done");
        self.report.seconds = self.started.elapsed().as_secs_f64();
        Ok(self.report)
    }
}
