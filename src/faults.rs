//! In-binary fault injection for the timeline oracle (`tests/oracle.rs`), off by
//! default (`[faults]` in the configuration). Named points sit where a crash or a pause
//! is most telling: on MongoDB after a post is stored and before its counter moves;
//! after a post is stored and before its fan-out, between fan-out
//! batches, after a follow edge is written or removed and before the timeline upkeep,
//! between an upkeep's read of the edge and its action, on MongoDB between a cache
//! merge's read and its guarded write,
//! and in a worker between applying a batch and committing its position. At a point,
//! the process aborts (as a `kill -9` would) with `faults.crash_probability`, or stalls
//! for `faults.stall_for` with `faults.stall_probability`; `faults.wake_delay` delays
//! an idle worker's timer wake-ups, through which it sees other processes' writes;
//! `faults.jitter` makes every point first wait a random time, widening the windows
//! between a read and the write that rests on it (a token's lookup and its caching, a
//! recount's count and its write, an edge's write and its timeline upkeep).
//!
//! When off, a point is one load of an unset `OnceLock`.

use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use rand::rngs::Xoshiro256PlusPlus;
use rand::{RngExt, SeedableRng};

use crate::config::FaultsConfig;

struct Faults {
    crash: f64,
    stall: f64,
    stall_for: Duration,
    wake_delay: Duration,
    jitter: Duration,
    draws: Mutex<Xoshiro256PlusPlus>,
}

static FAULTS: OnceLock<Faults> = OnceLock::new();

/// Turns the fault points on as `config` says (once per process; later calls and
/// inactive settings change nothing).
pub fn install(config: &FaultsConfig) {
    if !config.active() {
        return;
    }
    let seed = if config.seed == 0 {
        rand::random()
    } else {
        config.seed
    };
    tracing::warn!(
        ?config,
        seed,
        "fault injection is ON: this process may abort or stall on purpose"
    );
    let _ = FAULTS.set(Faults {
        crash: config.crash_probability,
        stall: config.stall_probability,
        stall_for: config.stall_for.0,
        wake_delay: config.wake_delay.0,
        jitter: config.jitter.0,
        draws: Mutex::new(Xoshiro256PlusPlus::seed_from_u64(
            seed ^ u64::from(std::process::id()),
        )),
    });
}

/// A named fault point: abort, stall, or (nearly always) nothing.
pub async fn point(name: &'static str) {
    let Some(faults) = FAULTS.get() else { return };
    let (roll, wait): (f64, f64) = {
        let mut draws = faults.draws.lock().unwrap();
        (draws.random(), draws.random())
    };
    if !faults.jitter.is_zero() {
        tokio::time::sleep(faults.jitter.mul_f64(wait)).await;
    }
    if roll < faults.crash {
        tracing::error!(point = name, "fault injection: aborting the process");
        std::process::abort();
    }
    if roll < faults.crash + faults.stall {
        tracing::warn!(point = name, stall = ?faults.stall_for, "fault injection: stalling");
        tokio::time::sleep(faults.stall_for).await;
    }
}

/// The delay added to an idle worker's timer wake-up.
pub async fn wake_delay() {
    if let Some(faults) = FAULTS.get()
        && !faults.wake_delay.is_zero()
    {
        tokio::time::sleep(faults.wake_delay).await;
    }
}

/// Gates that hold one call at a named place until a test releases it, for races proven
/// deterministically in one process (`faults::gate`). Unset unless a test installs one.
static GATES: OnceLock<Mutex<Vec<HeldAt>>> = OnceLock::new();

/// A gate installed at a place, for a key.
type HeldAt = (&'static str, String, std::sync::Arc<Gate>);

/// A held call: `reached` once it waits at the gate, `release` lets it go on.
#[derive(Default)]
pub struct Gate {
    pub reached: tokio::sync::Notify,
    pub release: tokio::sync::Notify,
}

/// Makes the next call that passes [`gate`] `name` with `key` wait there until the
/// returned gate's `release` is notified. For tests.
pub fn hold(name: &'static str, key: &str) -> std::sync::Arc<Gate> {
    let gate = std::sync::Arc::new(Gate::default());
    GATES
        .get_or_init(Mutex::default)
        .lock()
        .unwrap()
        .push((name, key.to_owned(), gate.clone()));
    gate
}

/// A place where a test may hold one call (see [`hold`]), keyed by what the call acts
/// on (a user id) so that parallel tests do not catch each other's calls. Without any
/// gate installed, one load of an unset `OnceLock`.
pub async fn gate(name: &'static str, key: &str) {
    let Some(gates) = GATES.get() else { return };
    let held = {
        let mut gates = gates.lock().unwrap();
        let found = gates.iter().position(|(n, k, _)| *n == name && k == key);
        found.map(|i| gates.remove(i).2)
    };
    if let Some(gate) = held {
        gate.reached.notify_one();
        gate.release.notified().await;
    }
}
