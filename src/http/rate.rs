//! Rate limits: token buckets (GCRA, through `governor`) per authenticated user for
//! reads and for writes, and per client IP for every request but the health checks.
//! Limits live in this process: several processes behind one balancer each allow them.

use std::net::IpAddr;
use std::num::NonZeroU32;
use std::sync::{Arc, Mutex};

use axum::http::{HeaderMap, Method};
use governor::clock::Clock as GovernorClock;
use governor::middleware::StateInformationMiddleware;
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

type Keyed<K> = RateLimiter<K, DefaultKeyedStateStore<K>, RateClock, StateInformationMiddleware>;

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
            )
            .with_middleware::<StateInformationMiddleware>(),
            what,
        })
    }

    /// Takes one request from `key`'s bucket, and says where the bucket stands after
    /// it (or, refused, when it will take one again).
    fn check(&self, key: &K, clock: &RateClock) -> Result<Standing, (Standing, ApiError)> {
        let now = clock.now();
        let now_ms = (now.as_u64() / 1_000_000) as i64;
        match self.limiter.check_key(key) {
            Ok(snapshot) => {
                let remaining = snapshot.remaining_burst_capacity().min(self.per_minute);
                // GCRA refills one request every 60 s / limit: full again after the
                // ones missing are back.
                let missing = u64::from(self.per_minute - remaining);
                let refill_ms = (missing * 60_000).div_ceil(u64::from(self.per_minute));
                Ok(Standing {
                    limit: self.per_minute,
                    remaining,
                    reset_ms: now_ms + refill_ms as i64,
                })
            }
            Err(not_until) => {
                let wait = not_until.wait_time_from(now);
                let seconds = wait.as_secs() + u64::from(wait.subsec_nanos() > 0);
                metrics::counter!("http_rate_limited_total", "class" => self.what).increment(1);
                let standing = Standing {
                    limit: self.per_minute,
                    remaining: 0,
                    reset_ms: now_ms + wait.as_millis() as i64,
                };
                let error =
                    ApiError::too_many_requests(self.per_minute, seconds.max(1) as u32, self.what);
                Err((standing, error))
            }
        }
    }

    fn forget_idle(&self) {
        self.limiter.retain_recent();
        self.limiter.shrink_to_fit();
    }
}

/// Where one bucket stands after a request drew from it: Mastodon's `X-RateLimit-*`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Standing {
    /// Requests a minute.
    pub limit: u32,
    /// Requests left before the bucket refuses one.
    pub remaining: u32,
    /// When the bucket is full again (when it takes one again, for a refusal).
    pub reset_ms: i64,
}

/// A request's slot for the tightest bucket it drew from: put in its extensions by the
/// layer that writes the headers (`mastodon::rate_headers`), filled by the checks.
#[derive(Debug, Clone, Default)]
pub struct StandingSlot(Arc<Mutex<Option<Standing>>>);

impl StandingSlot {
    /// Keeps `standing` if it leaves fewer requests than the one kept.
    pub fn record(&self, standing: Standing) {
        let mut kept = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if kept.is_none_or(|k| standing.remaining < k.remaining) {
            *kept = Some(standing);
        }
    }

    pub fn get(&self) -> Option<Standing> {
        *self.0.lock().unwrap_or_else(|e| e.into_inner())
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

fn note(
    checked: Result<Standing, (Standing, ApiError)>,
    slot: Option<&StandingSlot>,
) -> Result<(), ApiError> {
    let (standing, result) = match checked {
        Ok(standing) => (standing, Ok(())),
        Err((standing, error)) => (standing, Err(error)),
    };
    if let Some(slot) = slot {
        slot.record(standing);
    }
    result
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
        self.check_user_into(user, class, None)
    }

    /// [`RateLimits::check_user`], recording where the bucket stands in `slot`.
    pub fn check_user_into(
        &self,
        user: &str,
        class: Class,
        slot: Option<&StandingSlot>,
    ) -> Result<(), ApiError> {
        let limit = match class {
            Class::Read => &self.reads,
            Class::Write => &self.writes,
        };
        match limit {
            Some(limit) => note(limit.check(&user.to_owned(), &self.clock), slot),
            None => Ok(()),
        }
    }

    /// Takes one request from the client address's bucket, recording where it stands
    /// in `slot`.
    pub fn check_ip(&self, ip: IpAddr, slot: Option<&StandingSlot>) -> Result<(), ApiError> {
        match &self.ip {
            Some(limit) => note(limit.check(&ip, &self.clock), slot),
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
