//! Wiring: configuration in, a running server out.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use tokio::net::TcpListener;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use crate::config::{AuthMode, Backend, Config};
use crate::domain::{ActivityLimits, now_ms};
use crate::events::{Hub, HubSettings};
use crate::http::rate::RateLimits;
use crate::http::server::ConnectionSettings;
use crate::http::{AppState, HttpSettings, admin_router, router};
use crate::service::{AuthSettings, EventsService, Social};
use crate::store::embedded::EmbeddedStore;
use crate::store::{ChangeFeed, Store};
use crate::telemetry;
use crate::workers::activity::ActivityWorker;
use crate::workers::aggregates::{
    AggregatesWorker, EventFeed, NAME as AGGREGATES, REBUILD_PREFIX, lock_type,
};
use crate::workers::counters::CountersWorker;
use crate::workers::events::EventsWorker;
use crate::workers::timelines::TimelinesWorker;
use crate::workers::{Clock, Runner, RunnerSettings, Step, SystemClock, Wakers, Worker, Workers};

/// How often the embedded change feed is trimmed to its retention.
const TRIM_INTERVAL: Duration = Duration::from_secs(60);

/// Opens the configured storage backend.
pub async fn open_store(config: &Config) -> anyhow::Result<Store> {
    let storage = &config.storage;
    Ok(match storage.backend {
        Backend::Embedded => {
            let path = storage.path.clone();
            let synchronous = storage.synchronous;
            let store =
                tokio::task::spawn_blocking(move || EmbeddedStore::open(&path, synchronous))
                    .await
                    .context("opening the embedded store")??;
            Store::new(Arc::new(store))
        }
        Backend::Mongodb => {
            let uri = storage
                .mongodb_uri
                .as_deref()
                .context("storage.mongodb_uri is required")?;
            crate::store::mongo::connect(uri).await?
        }
    })
}

/// The handlers' state over an open store, with this process's workers started.
pub async fn build_state(config: &Config, store: Store) -> anyhow::Result<AppState> {
    build_state_with_clock(config, store, Arc::new(SystemClock)).await
}

/// As [`build_state`], with the clock the rate limits read (tests move it by hand).
pub async fn build_state_with_clock(
    config: &Config,
    store: Store,
    clock: Arc<dyn Clock>,
) -> anyhow::Result<AppState> {
    let auth = AuthSettings::from_config(&config.auth)?;
    let limits = activity_limits(config);
    let wakers = Arc::new(Wakers::default());
    let event_log = prepare_event_log(config, &store).await;
    let workers = start_workers(config, &store, wakers.clone(), event_log);
    let hub = event_log.then(|| {
        Hub::start(
            store.clone(),
            HubSettings {
                batch_max: config.events.batch_max,
                poll: config.workers.refresh_interval.0,
                max_streams: config.events.max_streams,
                stream_buffer: config.events.stream_buffer,
            },
        )
    });
    let social =
        Social::new(store.clone(), &config.feed.settings(), limits, wakers).with_auth(auth);
    Ok(AppState {
        social: Arc::new(social),
        workers: Arc::new(workers),
        metrics: telemetry::metrics_handle(),
        events: Arc::new(EventsService::new(store, hub)),
        rate: Arc::new(RateLimits::new(
            &config.rate,
            config.server.trusted_proxies.clone(),
            clock,
        )),
    })
}

/// Creates the event log when needed. A store that cannot keep one (a MongoDB without
/// capped collections, such as the test stand-in) leaves the event log, the live streams
/// and the aggregates off in this process, and says so here.
async fn prepare_event_log(config: &Config, store: &Store) -> bool {
    match store.events.prepare_log(config.events.bounds()).await {
        Ok(()) => true,
        Err(error) => {
            tracing::error!(
                error = %error,
                "the event log is off: no events worker, no aggregates worker, and /v1/events, \
                 /v1/users/{{id}}/timeline/stream, /v1/tags and /v1/trends answer 503 or stay empty"
            );
            false
        }
    }
}

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

fn runner_settings(config: &Config) -> RunnerSettings {
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

/// Says loudly what is left open.
fn warn_about_exposure(config: &Config) {
    if config.auth.mode == AuthMode::None {
        tracing::warn!(
            "AUTHENTICATION IS OFF (auth.mode = none): any client can act as any user. \
             Run this only on a trusted network behind a gateway that authenticates."
        );
    }
    if config.server.admin_listen.is_none() && config.auth.admin_token.is_none() {
        tracing::warn!(
            "/metrics and /v1/workers are open to every client of server.listen; set \
             server.admin_listen or auth.admin_token to restrict them"
        );
    }
}

fn activity_limits(config: &Config) -> ActivityLimits {
    ActivityLimits {
        primary_limit: config.activity.primary_limit,
        page_size: config.activity.page_size,
    }
}

/// A name for this process in leases: unique among processes on one store.
fn holder_id() -> String {
    let host = std::env::var("HOSTNAME").unwrap_or_else(|_| "host".to_owned());
    format!(
        "{host}-{}-{:08x}",
        std::process::id(),
        rand::random::<u32>()
    )
}

/// Every worker, when `workers.enabled`; none otherwise (another process runs them).
fn start_workers(config: &Config, store: &Store, wakers: Arc<Wakers>, event_log: bool) -> Workers {
    let settings = runner_settings(config);
    let mut runners = Vec::new();
    if config.workers.enabled {
        let holder = holder_id();
        let activity = Arc::new(ActivityWorker::new(
            store.activity.clone(),
            activity_limits(config),
        ));
        let timelines = Arc::new(TimelinesWorker::new(store.clone(), &config.feed.settings()));
        let counters = Arc::new(CountersWorker::new(store.users.clone()));
        let mut workers = vec![activity as Arc<dyn Worker>, timelines, counters];
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

/// A server running in the background, as tests and `serve` use it.
pub struct RunningServer {
    pub addr: SocketAddr,
    pub state: AppState,
    shutdown: Option<oneshot::Sender<()>>,
    handle: JoinHandle<anyhow::Result<()>>,
}

impl RunningServer {
    /// Stops accepting, lets in-flight requests finish, and waits.
    pub async fn stop(mut self) -> anyhow::Result<()> {
        if let Some(shutdown) = self.shutdown.take() {
            let _ = shutdown.send(());
        }
        self.handle.await.context("server task panicked")?
    }
}

/// Binds `server.listen` (port 0 picks a free port) and serves in the background.
pub async fn spawn(config: &Config) -> anyhow::Result<RunningServer> {
    let store = open_store(config).await?;
    spawn_with_store(config, store).await
}

/// As [`spawn`], over a store the caller opened (tests wrap ports to inject faults).
pub async fn spawn_with_store(config: &Config, store: Store) -> anyhow::Result<RunningServer> {
    spawn_with_clock(config, store, Arc::new(SystemClock)).await
}

/// As [`spawn_with_store`], with the clock the rate limits read.
pub async fn spawn_with_clock(
    config: &Config,
    store: Store,
    clock: Arc<dyn Clock>,
) -> anyhow::Result<RunningServer> {
    let state = build_state_with_clock(config, store.clone(), clock).await?;
    let listener = TcpListener::bind(config.server.listen)
        .await
        .with_context(|| format!("binding {}", config.server.listen))?;
    let addr = listener.local_addr()?;
    let (tx, rx) = oneshot::channel::<()>();
    let handle = tokio::spawn(run(listener, state.clone(), store, config.clone(), async {
        let _ = rx.await;
    }));
    Ok(RunningServer {
        addr,
        state,
        shutdown: Some(tx),
        handle,
    })
}

async fn run(
    listener: TcpListener,
    state: AppState,
    store: Store,
    config: Config,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    let workers = state.workers.clone();
    let state_hub = state.events.hub().cloned();
    let rate = state.rate.clone();
    let settings = HttpSettings {
        request_timeout: config.server.request_timeout.0,
        body_limit_bytes: config.server.body_limit_bytes,
        separate_admin: config.server.admin_listen.is_some(),
    };
    let connections = ConnectionSettings {
        header_timeout: config.server.header_timeout.0,
        idle_timeout: config.server.idle_timeout.0,
        max_connections: config.server.max_connections,
    };
    warn_about_exposure(&config);
    tracing::info!(mode = state.social.auth().mode(), "authentication");
    let (admin_stop, admin_stopped) = oneshot::channel::<()>();
    let admin = match config.server.admin_listen {
        Some(address) => {
            let listener = TcpListener::bind(address)
                .await
                .with_context(|| format!("binding server.admin_listen {address}"))?;
            tracing::info!("operations endpoints on http://{}", listener.local_addr()?);
            let app = admin_router(state.clone(), &settings);
            Some(tokio::spawn(crate::http::server::serve(
                listener,
                app,
                connections,
                async {
                    let _ = admin_stopped.await;
                },
            )))
        }
        None => None,
    };
    let app = router(state, &settings);
    let forget = tokio::spawn(async move {
        let mut tick = tokio::time::interval(Duration::from_secs(60));
        loop {
            tick.tick().await;
            rate.forget_idle();
        }
    });
    let trimmer = tokio::spawn(trim_changes(
        store.change_feed.clone(),
        config.change_feed.retention.0,
        config.change_feed.max_retention.0,
    ));
    let hub = state_hub;
    let shutdown = async move {
        shutdown.await;
        // Open streams never end on their own: end them so the drain can finish.
        if let Some(hub) = hub {
            hub.close();
        }
    };
    let served = crate::http::server::serve(listener, app, connections, shutdown).await;
    let _ = admin_stop.send(());
    if let Some(admin) = admin {
        let _ = admin.await;
    }
    trimmer.abort();
    forget.abort();
    // In-flight requests are done: let each worker finish its step and hand its lease on.
    workers.stop().await;
    served.context("serving HTTP")
}

/// Keeps the change feed within its retention.
async fn trim_changes(feed: Arc<dyn ChangeFeed>, retention: Duration, max_retention: Duration) {
    let mut tick = tokio::time::interval(TRIM_INTERVAL);
    loop {
        tick.tick().await;
        let now = now_ms();
        let cutoff = now - retention.as_millis() as i64;
        let hard_cutoff = now - max_retention.as_millis() as i64;
        match feed.trim_changes(cutoff, hard_cutoff).await {
            Ok(0) => {}
            Ok(dropped) => tracing::info!(dropped, "trimmed the change feed"),
            Err(error) => tracing::warn!(error = %error, "trimming the change feed failed"),
        }
    }
}

/// Serves until SIGINT or SIGTERM, then drains in-flight requests.
pub async fn serve(config: Config) -> anyhow::Result<()> {
    let store = open_store(&config).await?;
    let state = build_state(&config, store.clone()).await?;
    let listener = TcpListener::bind(config.server.listen)
        .await
        .with_context(|| format!("binding {}", config.server.listen))?;
    tracing::info!("listening on http://{}", listener.local_addr()?);
    run(listener, state, store, config, shutdown_signal()).await
}

async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        _ = ctrl_c => {},
        _ = terminate => {},
    }
    tracing::info!("shutting down: finishing in-flight requests");
}
