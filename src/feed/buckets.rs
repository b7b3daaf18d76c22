//! The read shared by timed and sized buckets.

use crate::domain::{BucketKind, PostId, TimelineEntry};
use crate::store::{Store, StoreResult};

use super::normalise;

const FIRST_BATCH: usize = 2;
const MAX_BATCH: usize = 16;

/// Walks the user's buckets in order of their newest entry, newest first, until the page
/// is full and no further bucket can hold an entry newer than the page's oldest.
///
/// Buckets are ordered by an upper bound of their ids rather than by their key because a
/// sized bucket can hold old posts next to new ones (a follow backfills old posts into the
/// newest bucket), so sequence order is not id order. With that bound the stop is exact.
pub(crate) async fn read_buckets(
    store: &Store,
    kind: BucketKind,
    user: &str,
    before: Option<PostId>,
    want: usize,
) -> StoreResult<Vec<TimelineEntry>> {
    let mut collected: Vec<TimelineEntry> = Vec::with_capacity(want);
    let mut skip = 0;
    let mut batch = FIRST_BATCH;
    loop {
        let buckets = store
            .timelines
            .buckets(kind, user, before, skip, batch, want)
            .await?;
        let last_batch = buckets.len() < batch;
        skip += buckets.len();
        for bucket in buckets {
            if collected.len() >= want && bucket.newest < collected[want - 1].id {
                return Ok(collected);
            }
            collected.extend(bucket.entries);
            normalise(&mut collected, before, want);
        }
        if last_batch {
            return Ok(collected);
        }
        batch = (batch * 2).min(MAX_BATCH);
    }
}
