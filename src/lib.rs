//! socialite: a social feed service with switchable timeline strategies over an embedded
//! SQLite store or MongoDB.

pub mod app;
pub mod audit;
pub mod backup;
pub mod bulk;
pub mod cli;
pub mod config;
pub mod derived;
pub mod domain;
pub mod events;
pub mod faults;
pub mod feed;
pub mod http;
pub mod seed;
pub mod service;
pub mod store;
pub mod telemetry;
pub mod workers;
