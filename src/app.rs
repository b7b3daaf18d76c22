//! Wiring: configuration in, a running server out.
//!
//! This file opens the store and builds the handlers' [`AppState`]; `workers` starts
//! this process's workers (and runs the aggregates rebuild command), `server` binds,
//! serves and shuts down.

use std::sync::Arc;

use anyhow::Context;

use crate::config::{Backend, Config};
use crate::domain::ActivityLimits;
use crate::events::{Hub, HubSettings};
use crate::http::AppState;
use crate::http::rate::RateLimits;
use crate::service::{AuthSettings, EventsService, Social};
use crate::store::Store;
use crate::store::embedded::EmbeddedStore;
use crate::telemetry;
use crate::workers::{Clock, SystemClock, Wakers};

mod server;
mod workers;

pub use server::{RunningServer, serve, spawn, spawn_with_clock, spawn_with_store};
pub use workers::{aggregates_runner, rebuild_aggregates};
pub(crate) use workers::{holder_id, runner_settings};

use workers::start_workers;

/// Opens the configured storage backend.
pub async fn open_store(config: &Config) -> anyhow::Result<Store> {
    let storage = &config.storage;
    Ok(match storage.backend {
        Backend::Embedded => {
            let path = storage.path.clone();
            let (synchronous, mmap_mib) = (storage.synchronous, storage.mmap_mib);
            let store = tokio::task::spawn_blocking(move || {
                EmbeddedStore::open_mapped(&path, synchronous, mmap_mib)
            })
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

/// Opens the configured storage backend for reading only, as `socialite audit` does:
/// refused, with nothing created or written, unless it holds a socialite store of this
/// binary's format.
pub async fn open_store_read_only(config: &Config) -> anyhow::Result<Store> {
    let storage = &config.storage;
    Ok(match storage.backend {
        Backend::Embedded => {
            let (path, mmap_mib) = (storage.path.clone(), storage.mmap_mib);
            let store =
                tokio::task::spawn_blocking(move || EmbeddedStore::open_read_only(&path, mmap_mib))
                    .await
                    .context("opening the embedded store")??;
            Store::new(Arc::new(store))
        }
        Backend::Mongodb => {
            let uri = storage
                .mongodb_uri
                .as_deref()
                .context("storage.mongodb_uri is required")?;
            crate::store::mongo::connect_read_only(uri).await?
        }
    })
}

/// The handlers' state over an open store, with this process's workers started.
pub async fn build_state(config: &Config, store: Store) -> anyhow::Result<AppState> {
    build_state_with_clock(config, store, Arc::new(SystemClock)).await
}

/// As [`build_state`], with the clock the rate limits and the token cache read (tests
/// move it by hand).
pub async fn build_state_with_clock(
    config: &Config,
    store: Store,
    clock: Arc<dyn Clock>,
) -> anyhow::Result<AppState> {
    // Registers this process as serving, refused while a load runs or is marked; `run`
    // in `server.rs` ends the registration (see `BulkStore::enter_serving`).
    let layout = config.feed.settings().layout();
    let now: crate::feed::switch::Now = Arc::new(crate::domain::now_ms);
    crate::feed::switch::prepare(&store, &layout, &now).await?;
    if let Err(refused) = store.bulk.enter_serving(&workers::holder_id()).await? {
        anyhow::bail!("{refused}");
    }
    if let Err(error) = crate::feed::switch::check_settled(&store, &layout).await {
        store.bulk.leave_serving().await?;
        return Err(error);
    }
    let auth = match AuthSettings::from_config(&config.auth) {
        Ok(auth) => auth.with_clock(clock.clone()),
        Err(error) => {
            store.bulk.leave_serving().await?;
            return Err(error);
        }
    };
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
            clock.clone(),
        )
    });
    let social = Social::new(store.clone(), &config.feed.settings(), limits, wakers)
        .with_auth(auth)
        .with_oauth(crate::service::oauth::OAuthSettings {
            limits: crate::service::oauth::LimitSettings {
                per_account: config.mastodon.signin_failures_per_account,
                per_address: config.mastodon.signin_failures_per_address,
                window_ms: i64::try_from(config.mastodon.signin_failure_window.0.as_millis())
                    .unwrap_or(i64::MAX),
            },
            token_cache_ttl: config.auth.token_cache_ttl.0,
        })
        .with_mastodon_pages(crate::service::MastoPageSettings {
            mib: config.mastodon.page_memo_mib,
            max_age_ms: i64::try_from(config.mastodon.kept_page_max_age.0.as_millis())
                .unwrap_or(i64::MAX),
        })
        .with_clock(clock.clone())
        .with_streams(hub.clone());
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
        mastodon: Arc::new(crate::http::mastodon::Settings::from_config(
            &config.mastodon,
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

fn activity_limits(config: &Config) -> ActivityLimits {
    ActivityLimits {
        primary_limit: config.activity.primary_limit,
        page_size: config.activity.page_size,
    }
}
