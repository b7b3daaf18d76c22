//! Delivering a post or a repost just stored: fan-out to its author and every follower
//! (or to the author alone, leaving the rest to the timelines worker), then the checks
//! that close the races of a delivery that landed (a delete or a rename that ran
//! meanwhile), then the delivery marker; and the retraction of a deleted post.

use super::Timelines;
use crate::domain::{FeedStrategy, NameStamp, Post, PostId, Repost, TimelineEntry};
use crate::store::StoreResult;

impl Timelines {
    /// Fans a freshly stored post out to its author and every follower, its entries
    /// stamped with `name`, the author's name as the post's insert read it.
    pub async fn post_created(&self, post: &Post, name: &NameStamp) -> StoreResult<u64> {
        self.entry_created(&post.entry(true, None), name).await
    }

    /// Fans a fresh repost out as a post of the reposter's: to the reposter and every
    /// follower, under the repost's id, carrying `original`'s text; marked delivered
    /// under the repost's id like a post.
    pub async fn repost_created(
        &self,
        repost: &Repost,
        original: &str,
        name: &NameStamp,
    ) -> StoreResult<u64> {
        self.entry_created(&repost.entry(Some(original), true, None), name)
            .await
    }

    /// Delivers a fresh repost to the reposter's own timeline only (see
    /// [`Timelines::post_created_own`]).
    pub async fn repost_created_own(
        &self,
        repost: &Repost,
        original: &str,
        name: &NameStamp,
    ) -> StoreResult<()> {
        self.entry_created_own(&repost.entry(Some(original), true, None), name)
            .await
    }

    /// [`Timelines::post_created`] for a post's or a repost's entry.
    async fn entry_created(&self, item: &TimelineEntry, name: &NameStamp) -> StoreResult<u64> {
        let strategy = self.strategy();
        if strategy == FeedStrategy::FanoutOnRead {
            return Ok(0);
        }
        let fanned_out = self.feed.fan_out(item, Some(name)).await;
        // Checked even after a failed fan-out: most batches were delivered.
        self.settle_delivery(item, name, None).await?;
        let written = fanned_out?;
        self.store.deliveries.mark_delivered(item.id).await?;
        metrics::counter!("socialite_fanout_posts_total", "strategy" => strategy.as_str())
            .increment(1);
        metrics::counter!("socialite_fanout_timelines_total", "strategy" => strategy.as_str())
            .increment(written);
        Ok(written)
    }

    /// Delivers a fresh post to its author's own timeline only, leaving the followers to
    /// the timelines worker (the post is not marked delivered).
    pub async fn post_created_own(&self, post: &Post, name: &NameStamp) -> StoreResult<()> {
        self.entry_created_own(&post.entry(true, None), name).await
    }

    async fn entry_created_own(&self, item: &TimelineEntry, name: &NameStamp) -> StoreResult<()> {
        if self.strategy() == FeedStrategy::FanoutOnRead {
            return Ok(());
        }
        let own = std::slice::from_ref(&item.author);
        self.feed.deliver(item, Some(name), own).await?;
        self.settle_delivery(item, name, Some(own)).await
    }

    /// Closes the races of a delivery that just landed, with two reads at once:
    /// - a delete that ran meanwhile may have retracted before our pushes; the delete
    ///   removes the post first, so seeing it gone now means retracting again (the id
    ///   index only). For a repost, its unrepost or its original's delete (which
    ///   removes the repost first on either store) likewise;
    /// - a rename that committed after the insert read `name` may have been propagated
    ///   before our pushes; a newer version now means stamping it again, on `users` or
    ///   (`None`) the whole audience.
    async fn settle_delivery(
        &self,
        item: &TimelineEntry,
        name: &NameStamp,
        users: Option<&[String]>,
    ) -> StoreResult<()> {
        let (ids, author) = ([item.id], std::slice::from_ref(&item.author));
        let existence = async {
            Ok(match item.is_repost() {
                true => self.store.reposts.reposts_by_ids(&ids).await?.is_empty(),
                false => self
                    .store
                    .content
                    .existing_posts(&ids, author)
                    .await?
                    .is_empty(),
            })
        };
        let (gone, current) = tokio::try_join!(existence, self.store.users.user(&item.author))?;
        if gone {
            self.feed.retract(item.id).await?;
        }
        match current {
            Some(user) if user.version > name.version => {
                self.stamp(&item.author, &user.name_stamp(), users).await
            }
            _ => Ok(()),
        }
    }

    /// Whether `author`'s fan-out is small enough to do in the request.
    pub fn fans_out_inline(&self, followers: u64) -> bool {
        followers <= self.settings.inline_fanout_max
    }

    /// Removes a deleted post from every timeline. Idempotent.
    pub async fn retract(&self, post: PostId) -> StoreResult<()> {
        self.feed.retract(post).await
    }
}
