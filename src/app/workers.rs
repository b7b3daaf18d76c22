//! The workers this process runs, under one lease holder name, and the one-off
//! `socialite aggregates rebuild`.

use std::sync::Arc;

use anyhow::Context;

use super::{activity_limits, open_store};
use crate::config::Config;
use crate::store::Store;
use crate::workers::activity::ActivityWorker;
use crate::workers::aggregates::{
    AggregatesWorker, EventFeed, NAME as AGGREGATES, REBUILD_PREFIX, lock_type,
};
use crate::workers::counters::CountersWorker;
use crate::workers::events::EventsWorker;
use crate::workers::notifications::NotificationsWorker;
use crate::workers::timelines::TimelinesWorker;
use crate::workers::{Runner, RunnerSettings, Step, SystemClock, Wakers, Worker, Workers};

/// The aggregates worker under `holder`, over the event log.
pub fn aggregates_runner(config: &Config, store: &Store, holder: String) -> Runner {
    let worker = Arc::new(AggregatesWorker::new(
        store.trends.clone(),
        Arc::new(SystemClock),
    ));
    Runner::new(
        worker,
        store.leases.clone(),
        Arc::new(EventFeed::new(store.events.clone())),
        Arc::new(SystemClock),
        holder,
        runner_settings(config),
    )
}

pub(crate) fn runner_settings(config: &Config) -> RunnerSettings {
    RunnerSettings {
        lease_ttl_ms: config.workers.lease_ttl.0.as_millis() as i64,
        batch_size: config.workers.batch_size,
        refresh_ms: config.workers.refresh_interval.0.as_millis() as u64,
    }
}

/// `socialite aggregates rebuild`: recomputes every tag from the posts under the
/// aggregates lock of type `rebuild`, then releases it.
pub async fn rebuild_aggregates(config: &Config) -> anyhow::Result<String> {
    let store = open_store(config).await?;
    store
        .events
        .prepare_log(config.events.bounds())
        .await
        .context("the event log is needed for aggregates")?;
    let holder = format!("{REBUILD_PREFIX}{}", holder_id());
    let mut runner = aggregates_runner(config, &store, holder);
    match runner.rebuild_once().await? {
        Step::Rebuilt => {
            let status = runner.status();
            let position = status
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .position
                .clone();
            Ok(format!(
                "aggregates rebuilt; watermark {}",
                position.unwrap_or_else(|| "none".to_owned())
            ))
        }
        Step::Standby => {
            let lease = store
                .leases
                .leases()
                .await?
                .into_iter()
                .find(|l| l.name == AGGREGATES);
            let holder = lease.and_then(|l| l.holder).unwrap_or_default();
            anyhow::bail!(
                "the aggregates lock is held by {holder} (type {}); try again once it is released or expires",
                lock_type(&holder)
            )
        }
        other => anyhow::bail!("the rebuild did not complete: {other:?}"),
    }
}

/// A name for this process in leases: unique among processes on one store.
pub(crate) fn holder_id() -> String {
    let host = std::env::var("HOSTNAME").unwrap_or_else(|_| "host".to_owned());
    format!(
        "{host}-{}-{:08x}",
        std::process::id(),
        rand::random::<u32>()
    )
}

/// Every worker, when `workers.enabled`; none otherwise (another process runs them).
pub(super) fn start_workers(
    config: &Config,
    store: &Store,
    wakers: Arc<Wakers>,
    event_log: bool,
) -> Workers {
    let settings = runner_settings(config);
    let mut runners = Vec::new();
    if config.workers.enabled {
        let holder = holder_id();
        let activity = Arc::new(ActivityWorker::new(
            store.activity.clone(),
            activity_limits(config),
        ));
        let timelines = Arc::new(TimelinesWorker::new(store.clone(), &config.feed.settings()));
        let counters = Arc::new(CountersWorker::new(
            store.users.clone(),
            store.claims.clone(),
        ));
        let notifications = Arc::new(
            NotificationsWorker::new(store.notifications.clone())
                .settling_takings_after(config.workers.settle_takings_after.0.as_millis() as i64)
                .sweeping_in_batches_of(config.workers.batch_size),
        );
        let mut workers = vec![
            activity as Arc<dyn Worker>,
            timelines,
            counters,
            notifications,
        ];
        if event_log {
            workers.push(Arc::new(EventsWorker::new(
                store.events.clone(),
                config.events.bounds(),
                Some(wakers.clone()),
            )));
        }
        for worker in workers {
            runners.push(Runner::new(
                worker,
                store.leases.clone(),
                store.change_feed.clone(),
                Arc::new(SystemClock),
                holder.clone(),
                settings,
            ));
        }
        if event_log {
            runners.push(aggregates_runner(config, store, holder.clone()));
        }
    }
    Workers::start(
        runners,
        store.leases.clone(),
        wakers,
        config.workers.refresh_interval.0,
    )
}
