//! Fanout on write into sized buckets: each user's entries fill a bucket of
//! `bucket_size` entries, then roll over to the next. The store makes the rollover
//! race-free; see `Store::sized_push`.

use async_trait::async_trait;

use super::buckets::read_buckets;
use super::{FeedService, FeedSettings, backfill_entries, retract_gone};
use crate::domain::{BucketKind, FeedStrategy, NameStamp, PostId, TimelineEntry, TimelineKind};
use crate::store::timelines::deliver_to_audience;
use crate::store::{Store, StoreResult};

const KIND: BucketKind = BucketKind::Sized;

pub struct SizedBuckets {
    store: Store,
    settings: FeedSettings,
}

impl SizedBuckets {
    pub fn new(store: Store, settings: FeedSettings) -> Self {
        SizedBuckets { store, settings }
    }
}

#[async_trait]
impl FeedService for SizedBuckets {
    fn strategy(&self) -> FeedStrategy {
        FeedStrategy::SizedBuckets
    }

    fn kind(&self) -> Option<TimelineKind> {
        Some(TimelineKind::Buckets(KIND))
    }

    async fn fan_out(&self, item: &TimelineEntry, name: Option<&NameStamp>) -> StoreResult<u64> {
        let entry = [item.stored(self.settings.embed_content, name)];
        let entry = &entry;
        let (store, size) = (&self.store, self.settings.bucket_size);
        deliver_to_audience(store.graph.as_ref(), &item.author, |targets| async move {
            store.timelines.sized_push(&targets, entry, size).await?;
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
        let entry = [item.stored(self.settings.embed_content, name)];
        let size = self.settings.bucket_size;
        self.store.timelines.sized_push(users, &entry, size).await?;
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
        let mut found = backfill_entries(
            &self.store,
            followee,
            since_ms,
            self.settings.backfill_on_follow as usize,
        )
        .await?;
        found.reverse();
        let entries: Vec<TimelineEntry> = found
            .iter()
            .map(|e| e.stored(self.settings.embed_content, name))
            .collect();
        self.store
            .timelines
            .sized_push(&[follower.to_owned()], &entries, self.settings.bucket_size)
            .await?;
        retract_gone(&self.store, TimelineKind::Buckets(KIND), &entries).await
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
