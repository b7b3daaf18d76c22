//! Background workers that keep derived data in step with the change feed, each under a
//! lease with a fencing token (see [`runtime`]), one file per worker.

pub mod activity;
pub mod aggregates;
mod control;
pub mod counters;
pub mod events;
pub mod notifications;
mod pool;
pub mod runtime;
pub mod timelines;

pub use pool::{Wakers, WorkerReport, Workers};

pub use crate::domain::Fence;
pub use runtime::{
    Clock, Hooks, ManualClock, NoHooks, Point, Runner, RunnerSettings, Status, Step, SystemClock,
    Worker,
};
