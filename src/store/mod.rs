//! The storage ports: everything the product needs from a database, one trait per
//! concern, each in its own file, implemented by the embedded SQLite adapter
//! (`embedded/`) and the MongoDB adapter (`mongo/`), which use the same file names. One
//! conformance suite (`tests/conformance.rs`) holds both to the same behaviour.
//!
//! Callers hold one [`Store`]: a struct with one `Arc` per port, all pointing at the
//! same adapter. It was chosen over a supertrait because a call then names its concern
//! (`store.graph.followers(..)`) without importing six traits, and a component that
//! needs one concern can be handed just that `Arc` (a worker takes only the change feed).
//! A new concern is one port file here, one file per adapter, and one field below.

pub mod activity;
pub mod audit;
pub mod bulk;
pub mod changes;
pub mod claims;
pub mod content;
pub mod deliveries;
pub mod embedded;
pub mod events;
pub mod graph;
pub mod idempotency;
pub mod leases;
pub mod markers;
pub mod mongo;
pub mod notifications;
pub mod oauth;
pub mod relations;
pub mod reposts;
pub mod threads;
pub mod timelines;
pub mod tokens;
pub mod trends;
pub mod users;

use std::sync::Arc;

use async_trait::async_trait;

pub use activity::{ActivityStore, Liker};
pub use audit::AuditStore;
pub use bulk::BulkStore;
pub use changes::ChangeFeed;
pub use claims::{ClaimStore, Claimed, Counter};
pub use content::{ContentStore, Inserted, PostRange};
pub use deliveries::DeliveryStore;
pub use events::{EventStore, LogBounds};
pub use graph::{EdgeState, GraphStore, in_follower_batches};
pub use idempotency::{IdempotencyStore, KeyedInsert, PostKey};
pub use leases::{Lease, LeaseStore};
pub use markers::MarkerStore;
pub use notifications::{
    NotificationEffect, NotificationStore, RebuildBounds, Recipient, SweptTakings,
};
pub use oauth::{AccessRecord, AppRecord, CodeRecord, OAuthStore, RefreshRecord};
pub use relations::{Blocked, RelationStore};
pub use reposts::{RepostStore, Reposted};
pub use threads::ThreadStore;
pub use timelines::TimelineStore;
pub use tokens::{TokenHash, TokenRecord, TokenStore};
pub use trends::TrendStore;
pub use users::{Counted, NameWord, Recount, UserStore};

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("{0} not found")]
    NotFound(String),
    #[error("{0} already exists")]
    Conflict(String),
    /// The request breaks a rule of the product (raised by the services, not adapters).
    #[error("{0}")]
    Invalid(String),
    /// The change feed no longer holds the position a reader asked to resume from.
    #[error("change feed history lost: position {0} was trimmed")]
    HistoryLost(String),
    /// A feed that cannot start without a position, and has none yet (a first start):
    /// the worker builds its derived data from the sources. Normal, unlike
    /// `HistoryLost`, so it is logged as information and not counted as a loss.
    #[error("no position yet: {0}")]
    NoPosition(String),
    /// The event log no longer holds what follows the position a reader asked for.
    #[error("event log position lost: {0}")]
    PositionLost(String),
    #[error("invalid change feed position {0:?}")]
    InvalidPosition(String),
    /// A worker's write was refused because it no longer holds lease `{0}` at the
    /// version it acted under: a newer holder may have applied newer changes.
    #[error("fenced off: lease {0} is no longer held at this version")]
    Fenced(String),
    /// The caller may not do this (raised by the services, not adapters).
    #[error("{0}")]
    Forbidden(String),
    /// A change that can never be processed, whatever the retries (malformed data): the
    /// worker quarantines it with an alert instead of stopping the feed for ever.
    #[error("poison change: {0}")]
    Poison(String),
    #[error("storage failure: {0:#}")]
    Backend(#[from] anyhow::Error),
}

pub type StoreResult<T> = Result<T, StoreError>;

/// What every adapter answers about itself.
#[async_trait]
pub trait Health: Send + Sync + 'static {
    /// `embedded` or `mongodb`.
    fn backend(&self) -> &'static str;
    /// Fails when the storage cannot serve requests.
    async fn ping(&self) -> StoreResult<()>;
}

/// Every port an adapter implements.
pub trait Adapter:
    Health
    + UserStore
    + GraphStore
    + ContentStore
    + TimelineStore
    + ThreadStore
    + ChangeFeed
    + ActivityStore
    + LeaseStore
    + DeliveryStore
    + EventStore
    + TrendStore
    + TokenStore
    + BulkStore
    + AuditStore
    + RelationStore
    + NotificationStore
    + RepostStore
    + OAuthStore
    + ClaimStore
    + IdempotencyStore
    + MarkerStore
{
}

impl<T> Adapter for T where
    T: Health
        + UserStore
        + GraphStore
        + ContentStore
        + TimelineStore
        + ThreadStore
        + ChangeFeed
        + ActivityStore
        + LeaseStore
        + DeliveryStore
        + EventStore
        + TrendStore
        + TokenStore
        + BulkStore
        + AuditStore
        + RelationStore
        + NotificationStore
        + RepostStore
        + OAuthStore
        + ClaimStore
        + IdempotencyStore
        + MarkerStore
{
}

/// One handle on one adapter, by concern. Cheap to clone.
#[derive(Clone)]
pub struct Store {
    pub health: Arc<dyn Health>,
    pub users: Arc<dyn UserStore>,
    pub graph: Arc<dyn GraphStore>,
    pub content: Arc<dyn ContentStore>,
    pub timelines: Arc<dyn TimelineStore>,
    pub threads: Arc<dyn ThreadStore>,
    pub change_feed: Arc<dyn ChangeFeed>,
    pub activity: Arc<dyn ActivityStore>,
    pub leases: Arc<dyn LeaseStore>,
    pub deliveries: Arc<dyn DeliveryStore>,
    pub events: Arc<dyn EventStore>,
    pub trends: Arc<dyn TrendStore>,
    pub tokens: Arc<dyn TokenStore>,
    pub bulk: Arc<dyn BulkStore>,
    /// The audit's own reads (`socialite audit`).
    pub audit: Arc<dyn AuditStore>,
    /// Blocks and mutes.
    pub relations: Arc<dyn RelationStore>,
    /// Notifications and their groups (`workers/notifications.rs`).
    pub notifications: Arc<dyn NotificationStore>,
    /// Reposts (`reposts.rs`).
    pub reposts: Arc<dyn RepostStore>,
    /// Passwords and OAuth 2 apps, codes and tokens (`oauth.rs`).
    pub oauth: Arc<dyn OAuthStore>,
    /// Claims left by writers that died mid-write (`claims.rs`).
    pub claims: Arc<dyn ClaimStore>,
    pub idempotency: Arc<dyn IdempotencyStore>,
    /// Reading positions, Mastodon's markers (`markers.rs`).
    pub markers: Arc<dyn MarkerStore>,
}

impl Store {
    pub fn new<A: Adapter>(adapter: Arc<A>) -> Store {
        Store {
            health: adapter.clone(),
            users: adapter.clone(),
            graph: adapter.clone(),
            content: adapter.clone(),
            timelines: adapter.clone(),
            threads: adapter.clone(),
            change_feed: adapter.clone(),
            activity: adapter.clone(),
            leases: adapter.clone(),
            deliveries: adapter.clone(),
            events: adapter.clone(),
            trends: adapter.clone(),
            tokens: adapter.clone(),
            bulk: adapter.clone(),
            relations: adapter.clone(),
            audit: adapter.clone(),
            notifications: adapter.clone(),
            reposts: adapter.clone(),
            oauth: adapter.clone(),
            claims: adapter.clone(),
            idempotency: adapter.clone(),
            markers: adapter,
        }
    }

    pub fn backend(&self) -> &'static str {
        self.health.backend()
    }
}
