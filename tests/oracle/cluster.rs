//! The topology a seed picks (backend, processes, strategy, sizes, timings, faults) and
//! the server processes on one store: started, `kill -9`ed and restarted.

use std::ffi::OsString;
use std::process::Child;
use std::sync::Mutex;

use rand::rngs::Xoshiro256PlusPlus;
use rand::{RngExt, SeedableRng};
use socialite::domain::FeedStrategy;

use super::focus::Focus;
use crate::common::{Kind, fresh_name, mongo_base_uri, mongo_uri_with_database, try_start_binary};

#[derive(Debug, Clone)]
pub struct Topology {
    pub kind: Kind,
    pub processes: usize,
    pub strategy: FeedStrategy,
    pub embed: bool,
    pub cache_size: u32,
    pub bucket_size: u32,
    pub bucket_span: &'static str,
    pub timed_max: u32,
    pub inline_fanout_max: u32,
    pub backfill: u32,
    pub lease_ttl_ms: u64,
    pub refresh_ms: u64,
    pub token_ttl_ms: u64,
    pub users: usize,
    pub clients: usize,
    /// `kill -9` a random process now and then.
    pub kills: bool,
    /// In-binary faults (`[faults]`): abort and stall probabilities at the named points.
    pub faults: Option<(f64, f64)>,
    /// `faults.wake_delay` in milliseconds (0: none).
    pub wake_delay_ms: u64,
    pub fault_seed: u64,
    /// Embedded: a tiny change-feed retention, so that a stalled worker loses history.
    pub trim: bool,
    /// `faults.stall_for` in milliseconds (default: twice the lease, for take-overs).
    pub stall_ms: Option<u64>,
    /// `faults.jitter` in milliseconds (0: none).
    pub jitter_ms: u64,
    pub hybrid_threshold: u64,
    /// `feed.cache_idle`: often short enough that readers' caches are dropped between
    /// their reads (and built again by the next), so the histories check pages across
    /// drops and rebuilds.
    pub cache_idle: &'static str,
    pub focus: Focus,
    /// The share of home-timeline and notification reads that go through the Mastodon
    /// view (`oracle::masto`) rather than `/v1`.
    pub masto_share: f64,
}

impl Topology {
    /// The topology of `seed` on `kind`.
    pub fn of(seed: u64, kind: Kind) -> Topology {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed ^ 0x70b0);
        let strategy = FeedStrategy::ALL[rng.random_range(0..FeedStrategy::ALL.len())];
        let lease_ttl_ms = rng.random_range(1..=2) * 1000;
        let processes = rng.random_range(1..=3);
        let faults = rng.random_bool(0.35).then_some((0.003, 0.006));
        let wake_delay_ms = if rng.random_bool(0.3) {
            rng.random_range(50..=600)
        } else {
            0
        };
        let mut topology = Topology {
            kind,
            processes,
            strategy,
            embed: rng.random_bool(0.5),
            cache_size: rng.random_range(3..=6),
            bucket_size: rng.random_range(2..=4),
            bucket_span: ["1s", "3s", "1d"][rng.random_range(0..3)],
            timed_max: rng.random_range(2..=5),
            inline_fanout_max: rng.random_range(0..=2),
            backfill: rng.random_range(2..=4),
            lease_ttl_ms,
            refresh_ms: rng.random_range(100..=300),
            token_ttl_ms: 1000,
            users: rng.random_range(6..=12),
            clients: rng.random_range(3..=6),
            kills: rng.random_bool(0.6),
            faults,
            wake_delay_ms,
            fault_seed: seed,
            trim: kind == Kind::Embedded && faults.is_some() && rng.random_bool(0.5),
            jitter_ms: if rng.random_bool(0.3) {
                rng.random_range(1..=20)
            } else {
                0
            },
            stall_ms: None,
            hybrid_threshold: 100,
            cache_idle: "7d",
            focus: Focus::of(seed),
            masto_share: 0.0,
        };
        // Drawn apart, so that every other draw of a seed stays what it was.
        let mut idle = Xoshiro256PlusPlus::seed_from_u64(seed ^ 0x1d1e);
        topology.cache_idle = ["1s", "2s", "0s", "7d"][idle.random_range(0..4)];
        let mut share = Xoshiro256PlusPlus::seed_from_u64(seed ^ 0x3a57);
        topology.masto_share = [0.25, 0.5, 0.75][share.random_range(0..3)];
        if let Some(clients) = std::env::var("SOCIALITE_ORACLE_CLIENTS")
            .ok()
            .and_then(|c| c.trim().parse().ok())
        {
            topology.clients = clients;
        }
        topology.focus.shape(&mut topology, &mut rng);
        if let Some(p) = std::env::var("SOCIALITE_ORACLE_ABORTS")
            .ok()
            .and_then(|p| p.trim().parse::<f64>().ok())
        {
            topology.faults = Some((p, topology.faults.map_or(0.006, |f| f.1)));
        }
        if soak_kills() {
            topology.kills = true;
        }
        topology
    }

    pub fn env(&self, db: &std::path::Path, mongo_db: &str) -> Vec<(String, OsString)> {
        let mut env: Vec<(String, OsString)> = vec![
            ("SOCIALITE_STORAGE__PATH".into(), db.as_os_str().to_owned()),
            ("SOCIALITE_STORAGE__SYNCHRONOUS".into(), "normal".into()),
        ];
        if self.kind == Kind::Mongo {
            let uri = mongo_uri_with_database(&mongo_base_uri().unwrap(), mongo_db);
            env.push(("SOCIALITE_STORAGE__BACKEND".into(), "mongodb".into()));
            env.push(("SOCIALITE_STORAGE__MONGODB_URI".into(), uri.into()));
        }
        let mut set = |k: &str, v: String| env.push((format!("SOCIALITE_{k}"), v.into()));
        set("FEED__STRATEGY", self.strategy.as_str().into());
        set("FEED__EMBED_CONTENT", self.embed.to_string());
        set("FEED__CACHE_SIZE", self.cache_size.to_string());
        set("FEED__BUCKET_SIZE", self.bucket_size.to_string());
        set("FEED__BUCKET_SPAN", self.bucket_span.into());
        set("FEED__TIMED_BUCKET_MAX_ENTRIES", self.timed_max.to_string());
        set(
            "FEED__INLINE_FANOUT_MAX",
            self.inline_fanout_max.to_string(),
        );
        set("FEED__BACKFILL_ON_FOLLOW", self.backfill.to_string());
        set("FEED__CACHE_IDLE", self.cache_idle.into());
        set("WORKERS__LEASE_TTL", format!("{}ms", self.lease_ttl_ms));
        set(
            "WORKERS__REFRESH_INTERVAL",
            format!("{}ms", self.refresh_ms),
        );
        // Claims of dismissals killed part way are swept soon, well within the checks'
        // retries after quiescence.
        set("WORKERS__SETTLE_TAKINGS_AFTER", "1s".into());
        set("AUTH__MODE", "token".into());
        set("AUTH__TOKEN_CACHE_TTL", format!("{}ms", self.token_ttl_ms));
        set("RATE__WRITES_PER_MIN", "0".into());
        set("RATE__READS_PER_MIN", "0".into());
        set("RATE__IP_PER_MIN", "0".into());
        if let Some((crash, stall)) = self.faults {
            set("FAULTS__SEED", self.fault_seed.max(1).to_string());
            set("FAULTS__CRASH_PROBABILITY", crash.to_string());
            set("FAULTS__STALL_PROBABILITY", stall.to_string());
            let stall = self.stall_ms.unwrap_or(self.lease_ttl_ms * 2);
            set("FAULTS__STALL_FOR", format!("{stall}ms"));
        }
        if self.wake_delay_ms > 0 {
            set("FAULTS__WAKE_DELAY", format!("{}ms", self.wake_delay_ms));
        }
        if self.jitter_ms > 0 {
            set("FAULTS__SEED", self.fault_seed.max(1).to_string());
            set("FAULTS__JITTER", format!("{}ms", self.jitter_ms));
        }
        set("FEED__HYBRID_THRESHOLD", self.hybrid_threshold.to_string());
        if self.trim {
            set("CHANGE_FEED__RETENTION", "1s".into());
            set("CHANGE_FEED__MAX_RETENTION", "2s".into());
        }
        env
    }

    /// Topology and settings on one line, for the report.
    pub fn describe(&self) -> String {
        format!("{self:?}")
    }
}

/// `SOCIALITE_ORACLE_KILLS=1` (the soak): `kill -9`s in every run, more often.
pub fn soak_kills() -> bool {
    std::env::var("SOCIALITE_ORACLE_KILLS").is_ok_and(|v| v.trim() == "1")
}

/// A server process slot: its current child, URL and generation (bumped per restart).
struct Slot {
    child: Option<Child>,
    base: Option<String>,
    generation: u32,
}

pub struct Cluster {
    slots: Mutex<Vec<Slot>>,
    env: Vec<(String, OsString)>,
    _dir: tempfile::TempDir,
    /// Extra environment for restarts only (faults are off after quiescence starts).
    quiet: Mutex<bool>,
}

/// A process as a request saw it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    pub slot: usize,
    pub generation: u32,
    pub base: String,
}

impl Cluster {
    pub async fn start(topology: &Topology, seed: u64) -> Cluster {
        let dir = tempfile::tempdir().unwrap();
        let env = topology.env(
            &dir.path().join("oracle.db"),
            &fresh_name(&format!("oracle{seed}")),
        );
        let cluster = Cluster {
            slots: Mutex::new(Vec::new()),
            env,
            _dir: dir,
            quiet: Mutex::new(false),
        };
        for _ in 0..topology.processes {
            cluster.slots.lock().unwrap().push(Slot {
                child: None,
                base: None,
                generation: 0,
            });
        }
        for slot in 0..topology.processes {
            cluster.restart(slot).await;
        }
        cluster
    }

    /// Starts slot `slot` (again), with faults unless the run is quiescing. A start that
    /// dies before it reports its address (an in-binary abort fired while it started) is
    /// tried again.
    pub async fn restart(&self, slot: usize) {
        let mut env = self.env.clone();
        if *self.quiet.lock().unwrap() {
            env.retain(|(k, _)| !k.starts_with("SOCIALITE_FAULTS__"));
        }
        let mut attempts = 0;
        let (child, base) = loop {
            let env = env.clone();
            let started = tokio::task::spawn_blocking(move || {
                let refs: Vec<(&str, &std::ffi::OsStr)> = env
                    .iter()
                    .map(|(k, v)| (k.as_str(), v.as_os_str()))
                    .collect();
                try_start_binary(&[], &refs)
            })
            .await
            .unwrap();
            attempts += 1;
            match started {
                Some(started) => break started,
                None if attempts < 10 => {
                    eprintln!(
                        "oracle: slot {slot} ended while starting (attempt {attempts}); again"
                    );
                }
                None => panic!("slot {slot} ended while starting, {attempts} times in a row"),
            }
        };
        let mut slots = self.slots.lock().unwrap();
        let s = &mut slots[slot];
        s.child = Some(child);
        s.base = Some(base);
        s.generation += 1;
    }

    /// `kill -9` of slot `slot`; returns whether it was running.
    pub fn kill(&self, slot: usize) -> bool {
        let mut child = {
            let mut slots = self.slots.lock().unwrap();
            slots[slot].base = None;
            slots[slot].child.take()
        };
        match child.as_mut() {
            Some(c) => {
                let _ = c.kill();
                let _ = c.wait();
                true
            }
            None => false,
        }
    }

    /// Slots whose process died on its own (an in-binary abort), now marked down.
    pub fn reap(&self) -> Vec<usize> {
        let mut slots = self.slots.lock().unwrap();
        let mut dead = Vec::new();
        for (i, s) in slots.iter_mut().enumerate() {
            if let Some(c) = s.child.as_mut()
                && matches!(c.try_wait(), Ok(Some(_)))
            {
                s.child = None;
                s.base = None;
                dead.push(i);
            }
        }
        dead
    }

    pub fn len(&self) -> usize {
        self.slots.lock().unwrap().len()
    }

    /// The running processes.
    pub fn up(&self) -> Vec<Target> {
        self.slots
            .lock()
            .unwrap()
            .iter()
            .enumerate()
            .filter_map(|(slot, s)| {
                s.base.clone().map(|base| Target {
                    slot,
                    generation: s.generation,
                    base,
                })
            })
            .collect()
    }

    /// Faults off for every later (re)start.
    pub fn quiesce(&self) {
        *self.quiet.lock().unwrap() = true;
    }

    pub fn faulty(&self) -> bool {
        self.env
            .iter()
            .any(|(k, _)| k.starts_with("SOCIALITE_FAULTS__"))
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        for slot in self.slots.get_mut().unwrap().iter_mut() {
            if let Some(mut c) = slot.child.take() {
                let _ = c.kill();
                let _ = c.wait();
            }
        }
    }
}
