//! The reading positions port (Mastodon's markers, `domain::markers`): one marker per
//! user and timeline, a source (the user's own writes) carried by backups. No
//! change-feed entries: nothing is derived from them.
//!
//! A write is one atomic upsert that stores the id and moves the version by one in the
//! same command (embedded: one `INSERT .. ON CONFLICT DO UPDATE`; MongoDB: one
//! `findOneAndUpdate` with `$inc`), so concurrent writers never lose a version and
//! never need Mastodon's 409: the last write's id stands, and each write got its own
//! version.

use async_trait::async_trait;

use super::StoreResult;
use crate::domain::markers::{Marker, MarkerTimeline};

#[async_trait]
pub trait MarkerStore: Send + Sync + 'static {
    /// `user`'s markers among `timelines`, in the order of [`MarkerTimeline::ALL`];
    /// a timeline never written has none.
    async fn markers(&self, user: &str, timelines: &[MarkerTimeline]) -> StoreResult<Vec<Marker>>;
    /// Stores `last_read_id` as `user`'s marker of `timeline` at `now_ms`, creating it at
    /// version 1 or moving its version by one, atomically. Returns the marker written.
    async fn set_marker(
        &self,
        user: &str,
        timeline: MarkerTimeline,
        last_read_id: &str,
        now_ms: i64,
    ) -> StoreResult<Marker>;
}
