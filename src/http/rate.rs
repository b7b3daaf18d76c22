//! Rate limits: token buckets (GCRA, through `governor`) per authenticated user for
//! reads and for writes, and per client IP for every request but the health checks.
//! Limits live in this process: several processes behind one balancer each allow them.

use std::net::IpAddr;
use std::num::NonZeroU32;
use std::sync::Arc;

use axum::http::{HeaderMap, Method};
use governor::clock::Clock as GovernorClock;
use governor::middleware::NoOpMiddleware;
use governor::nanos::Nanos;
use governor::state::keyed::DefaultKeyedStateStore;
use governor::{Quota, RateLimiter};

use super::error::ApiError;
use crate::config::RateConfig;
use crate::workers::Clock;

/// The project's injectable clock, as `governor` reads time.
#[derive(Clone)]
pub struct RateClock(Arc<dyn Clock>);

impl GovernorClock for RateClock {
    type Instant = Nanos;

    fn now(&self) -> Nanos {
        Nanos::from(self.0.now_ms().max(0) as u64 * 1_000_000)
    }
}

type Keyed<K> = RateLimiter<K, DefaultKeyedStateStore<K>, RateClock, NoOpMiddleware<Nanos>>;

/// One class of requests with its own buckets.
struct Limit<K: std::hash::Hash + Eq + Clone> {
    per_minute: u32,
    limiter: Keyed<K>,
    what: &'static str,
}

impl<K: std::hash::Hash + Eq + Clone> Limit<K> {
    fn new(per_minute: u32, clock: &RateClock, what: &'static str) -> Option<Self> {
        let per_minute_nz = NonZeroU32::new(per_minute)?;
        Some(Limit {
            per_minute,
            limiter: RateLimiter::dashmap_with_clock(
                Quota::per_minute(per_minute_nz),
                clock.clone(),
            ),
            what,
        })
    }

    fn check(&self, key: &K, clock: &RateClock) -> Result<(), ApiError> {
        self.limiter.check_key(key).map_err(|not_until| {
            let wait = not_until.wait_time_from(clock.now());
            let seconds = wait.as_secs() + u64::from(wait.subsec_nanos() > 0);
            metrics::counter!("http_rate_limited_total", "class" => self.what).increment(1);
            ApiError::too_many_requests(self.per_minute, seconds.max(1) as u32, self.what)
        })
    }

    fn forget_idle(&self) {
        self.limiter.retain_recent();
        self.limiter.shrink_to_fit();
    }
}

/// Which bucket an authenticated request draws from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Class {
    Read,
    Write,
}

impl Class {
    pub fn of(method: &Method) -> Class {
        if method == Method::GET || method == Method::HEAD {
            Class::Read
        } else {
            Class::Write
        }
    }
}

pub struct RateLimits {
    clock: RateClock,
    reads: Option<Limit<String>>,
    writes: Option<Limit<String>>,
    ip: Option<Limit<IpAddr>>,
    trusted_proxies: Vec<IpAddr>,
}

impl RateLimits {
    pub fn new(config: &RateConfig, trusted_proxies: Vec<IpAddr>, clock: Arc<dyn Clock>) -> Self {
        let clock = RateClock(clock);
        RateLimits {
            reads: Limit::new(config.reads_per_min, &clock, "reads per user"),
            writes: Limit::new(config.writes_per_min, &clock, "writes per user"),
            ip: Limit::new(config.ip_per_min, &clock, "requests per client address"),
            trusted_proxies,
            clock,
        }
    }

    /// Takes one request of `class` from `user`'s bucket.
    pub fn check_user(&self, user: &str, class: Class) -> Result<(), ApiError> {
        let limit = match class {
            Class::Read => &self.reads,
            Class::Write => &self.writes,
        };
        match limit {
            Some(limit) => limit.check(&user.to_owned(), &self.clock),
            None => Ok(()),
        }
    }

    /// Takes one request from the client address's bucket.
    pub fn check_ip(&self, ip: IpAddr) -> Result<(), ApiError> {
        match &self.ip {
            Some(limit) => limit.check(&ip, &self.clock),
            None => Ok(()),
        }
    }

    /// The client's address: the peer, or, when the peer is a trusted proxy, the
    /// right-most `X-Forwarded-For` entry that is not one (entries further left are
    /// whatever the client claimed).
    pub fn client_ip(&self, peer: IpAddr, headers: &HeaderMap) -> IpAddr {
        if !self.trusted_proxies.contains(&peer) {
            return peer;
        }
        let hops = headers
            .get_all("x-forwarded-for")
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(','))
            .map(str::trim)
            .collect::<Vec<_>>();
        for hop in hops.iter().rev() {
            match hop.parse::<IpAddr>() {
                Ok(ip) if self.trusted_proxies.contains(&ip) => continue,
                Ok(ip) => return ip,
                Err(_) => return peer,
            }
        }
        peer
    }

    /// Drops the buckets of keys that are full again, so memory follows active clients.
    pub fn forget_idle(&self) {
        if let Some(l) = &self.reads {
            l.forget_idle();
        }
        if let Some(l) = &self.writes {
            l.forget_idle();
        }
        if let Some(l) = &self.ip {
            l.forget_idle();
        }
    }
}
