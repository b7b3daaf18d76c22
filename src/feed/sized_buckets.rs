//! Fanout on write into sized buckets: each user's entries fill a bucket of
//! `bucket_size` entries, then roll over to the next. The store makes the rollover
//! race-free; see `Store::sized_push`.

use std::sync::Arc;

use async_trait::async_trait;

use super::buckets::read_buckets;
use super::{FeedService, FeedSettings, in_follower_batches};
use crate::domain::{BucketKind, FeedStrategy, Post, PostId, TimelineEntry, TimelineKind};
use crate::store::{Store, StoreResult};

const KIND: BucketKind = BucketKind::Sized;

pub struct SizedBuckets {
    store: Arc<dyn Store>,
    settings: FeedSettings,
}

impl SizedBuckets {
    pub fn new(store: Arc<dyn Store>, settings: FeedSettings) -> Self {
        SizedBuckets { store, settings }
    }
}

#[async_trait]
impl FeedService for SizedBuckets {
    fn strategy(&self) -> FeedStrategy {
        FeedStrategy::SizedBuckets
    }

    async fn fan_out(&self, post: &Post) -> StoreResult<u64> {
        let entry = [post.entry(self.settings.embed_content)];
        let entry = &entry;
        let (store, size) = (self.store.as_ref(), self.settings.bucket_size);
        in_follower_batches(store, &post.author, |targets| async move {
            store.sized_push(&targets, entry, size).await?;
            Ok(targets.len() as u64)
        })
        .await
    }

    async fn retract(&self, post: PostId) -> StoreResult<()> {
        self.store
            .remove_post_entries(TimelineKind::Buckets(KIND), post)
            .await
    }

    async fn followed(&self, follower: &str, followee: &str) -> StoreResult<()> {
        let mut posts = self
            .store
            .posts_by_author(followee, None, self.settings.backfill_on_follow as usize)
            .await?;
        posts.reverse();
        let entries: Vec<TimelineEntry> = posts
            .iter()
            .map(|p| p.entry(self.settings.embed_content))
            .collect();
        self.store
            .sized_push(&[follower.to_owned()], &entries, self.settings.bucket_size)
            .await
    }

    async fn unfollowed(&self, follower: &str, followee: &str) -> StoreResult<()> {
        self.store
            .remove_author_entries(TimelineKind::Buckets(KIND), follower, followee)
            .await
    }

    async fn entries(
        &self,
        user: &str,
        before: Option<PostId>,
        want: usize,
    ) -> StoreResult<Vec<TimelineEntry>> {
        read_buckets(self.store.as_ref(), KIND, user, before, want).await
    }
}
