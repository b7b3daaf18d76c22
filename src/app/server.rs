//! Serving: bind the listeners, run the HTTP server (and the operations listener) with
//! its background tasks, and drain on shutdown; in the background for tests
//! ([`RunningServer`]) or until a signal for `socialite serve`.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use tokio::net::TcpListener;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use super::{build_state, build_state_with_clock, open_store};
use crate::config::{AuthMode, Config};
use crate::domain::now_ms;
use crate::http::server::ConnectionSettings;
use crate::http::{AppState, HttpSettings, admin_router, router};
use crate::store::{ChangeFeed, Store};
use crate::workers::{Clock, SystemClock};

/// How often the embedded change feed is trimmed to its retention.
const TRIM_INTERVAL: Duration = Duration::from_secs(60);
/// How often the metrics recorder drains its buffered histogram samples.
const METRICS_UPKEEP_INTERVAL: Duration = Duration::from_secs(5);

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

/// As [`spawn_with_store`], with the clock the rate limits and the token cache read.
pub async fn spawn_with_clock(
    config: &Config,
    store: Store,
    clock: Arc<dyn Clock>,
) -> anyhow::Result<RunningServer> {
    let state = build_state_with_clock(config, store.clone(), clock).await?;
    let listener = match TcpListener::bind(config.server.listen).await {
        Ok(listener) => listener,
        Err(error) => {
            state.workers.stop().await;
            store.bulk.leave_serving().await?;
            return Err(error).with_context(|| format!("binding {}", config.server.listen));
        }
    };
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
    let metrics = state.metrics.clone();
    let settings = HttpSettings {
        request_timeout: config.server.request_timeout.0,
        body_limit_bytes: config.server.body_limit_bytes,
        separate_admin: config.server.admin_listen.is_some(),
        mastodon: config.mastodon.enabled,
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
    // The recorder keeps every histogram sample until an upkeep or a scrape drains it:
    // without this, a server nobody scrapes grows by each request's latency.
    let upkeep = tokio::spawn(async move {
        let mut tick = tokio::time::interval(METRICS_UPKEEP_INTERVAL);
        loop {
            tick.tick().await;
            metrics.run_upkeep();
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
    upkeep.abort();
    // In-flight requests are done: let each worker finish its step and hand its lease on.
    workers.stop().await;
    // Nothing of this server writes any more: a bulk load may begin.
    if let Err(error) = store.bulk.leave_serving().await {
        tracing::warn!(error = %error, "ending this server's registration failed");
    }
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
