//! Reading positions (Mastodon's markers): read a user's, set some, each write one
//! atomic upsert in the store (`store::markers`).

use super::Social;
use crate::domain::markers::{Marker, MarkerTimeline, validate_last_read_id};
use crate::store::{StoreError, StoreResult};

impl Social {
    /// `user`'s markers among `timelines` (none asked: none).
    pub async fn markers(
        &self,
        user: &str,
        timelines: &[MarkerTimeline],
    ) -> StoreResult<Vec<Marker>> {
        if timelines.is_empty() {
            return Ok(Vec::new());
        }
        self.store.markers.markers(user, timelines).await
    }

    /// Sets `user`'s marker of each timeline to its `last_read_id`, all checked before
    /// any is written (`Invalid` names the bad one); returns the markers written, each
    /// at its new version. A timeline given twice keeps its last id, written once.
    pub async fn set_markers(
        &self,
        user: &str,
        positions: &[(MarkerTimeline, String)],
    ) -> StoreResult<Vec<Marker>> {
        for (timeline, id) in positions {
            validate_last_read_id(id)
                .map_err(|why| StoreError::Invalid(format!("{timeline}: {why}")))?;
        }
        let mut last: Vec<(MarkerTimeline, &str)> = Vec::new();
        for (timeline, id) in positions {
            last.retain(|(t, _)| t != timeline);
            last.push((*timeline, id));
        }
        last.sort_by_key(|(t, _)| *t);
        let now = self.timelines.now_ms();
        let mut written = Vec::with_capacity(last.len());
        for (timeline, id) in last {
            written.push(
                self.store
                    .markers
                    .set_marker(user, timeline, id, now)
                    .await?,
            );
        }
        Ok(written)
    }
}
