//! Fanout on write into timed buckets: one bucket per user and period, keyed by
//! `floor(post time / span)`, so a bucket holds exactly its period's entries. A period
//! that fills up splits into parts of at most `timed_bucket_max_entries`, which keeps
//! every document far below MongoDB's 16 MB; reads order parts like any bucket.

use std::collections::BTreeMap;

use async_trait::async_trait;

use super::buckets::read_buckets;
use super::{FeedService, FeedSettings, backfill_entries, retract_gone};
use crate::domain::{BucketKind, FeedStrategy, NameStamp, PostId, TimelineEntry, TimelineKind};
use crate::store::timelines::deliver_to_audience;
use crate::store::{Store, StoreResult};

const KIND: BucketKind = BucketKind::Timed;

pub struct TimedBuckets {
    store: Store,
    settings: FeedSettings,
}

impl TimedBuckets {
    pub fn new(store: Store, settings: FeedSettings) -> Self {
        TimedBuckets { store, settings }
    }
}

/// The period a post belongs to. Division, not modulo: modulo would fold every period
/// onto a handful of buckets. `div_euclid` keeps times before 1970 in order too.
pub fn bucket_of(post: PostId, span_ms: i64) -> i64 {
    post.timestamp_ms().div_euclid(span_ms)
}

#[async_trait]
impl FeedService for TimedBuckets {
    fn strategy(&self) -> FeedStrategy {
        FeedStrategy::TimedBuckets
    }

    fn kind(&self) -> Option<TimelineKind> {
        Some(TimelineKind::Buckets(KIND))
    }

    async fn fan_out(&self, item: &TimelineEntry, name: Option<&NameStamp>) -> StoreResult<u64> {
        let key = bucket_of(item.id, self.settings.bucket_span_ms);
        let entry = [item.stored(self.settings.embed_content, name)];
        let entry = &entry;
        let (store, max) = (&self.store, self.settings.timed_bucket_max_entries);
        deliver_to_audience(store.graph.as_ref(), &item.author, |targets| async move {
            store
                .timelines
                .timed_push(&targets, key, entry, max)
                .await?;
            Ok(targets.len() as u64)
        })
        .await
    }

    async fn deliver(
        &self,
        item: &TimelineEntry,
        name: Option<&NameStamp>,
        users: &[String],
    ) -> StoreResult<u64> {
        let key = bucket_of(item.id, self.settings.bucket_span_ms);
        let entry = [item.stored(self.settings.embed_content, name)];
        let max = self.settings.timed_bucket_max_entries;
        self.store
            .timelines
            .timed_push(users, key, &entry, max)
            .await?;
        Ok(users.len() as u64)
    }

    async fn retract(&self, post: PostId) -> StoreResult<()> {
        self.store
            .timelines
            .remove_post_entries(TimelineKind::Buckets(KIND), post)
            .await
    }

    async fn followed(
        &self,
        follower: &str,
        followee: &str,
        since_ms: i64,
        name: Option<&NameStamp>,
    ) -> StoreResult<()> {
        let found = backfill_entries(
            &self.store,
            followee,
            since_ms,
            self.settings.backfill_on_follow as usize,
        )
        .await?;
        let mut by_bucket: BTreeMap<i64, Vec<TimelineEntry>> = BTreeMap::new();
        for entry in &found {
            by_bucket
                .entry(bucket_of(entry.id, self.settings.bucket_span_ms))
                .or_default()
                .push(entry.stored(self.settings.embed_content, name));
        }
        let follower = [follower.to_owned()];
        let max = self.settings.timed_bucket_max_entries;
        for (key, entries) in by_bucket {
            self.store
                .timelines
                .timed_push(&follower, key, &entries, max)
                .await?;
        }
        retract_gone(&self.store, TimelineKind::Buckets(KIND), &found).await
    }

    async fn unfollowed(&self, follower: &str, followee: &str) -> StoreResult<()> {
        self.store
            .timelines
            .remove_author_entries(TimelineKind::Buckets(KIND), follower, followee)
            .await
    }

    async fn entries(
        &self,
        user: &str,
        before: Option<PostId>,
        want: usize,
    ) -> StoreResult<Vec<TimelineEntry>> {
        read_buckets(&self.store, KIND, user, before, want).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_divide_time_by_the_span() {
        let day = 86_400_000;
        let at = |ms| PostId::at(ms, 0);
        assert_eq!(bucket_of(at(0), day), 0);
        assert_eq!(bucket_of(at(day - 1), day), 0);
        assert_eq!(bucket_of(at(day), day), 1);
        // 2023-11-14 is day 19675 since the epoch; modulo would have given a time of day.
        assert_eq!(bucket_of(at(1_700_000_000_000), day), 19_675);
        assert_eq!(bucket_of(at(1_700_000_000_000), 3_600_000), 472_222);
    }
}
