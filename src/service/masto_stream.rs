//! The Mastodon streaming view's renders: a message of the engine's live timeline
//! stream (`events::stream`, which has already applied the timeline rules, blocks and
//! mutes) made into a status or a notification with the same batched reads as a page.

use super::Social;
use super::masto_notifications::NotificationItem;
use super::mastodon::StatusView;
use crate::domain::{NotificationType, PostId};
use crate::feed::TimelineItem;
use crate::store::StoreResult;

impl Social {
    /// A new timeline item as `user` sees it; `None` when its post is already gone.
    pub async fn live_status(
        &self,
        user: &str,
        item: TimelineItem,
    ) -> StoreResult<Option<StatusView>> {
        Ok(self.item_statuses(user, vec![item]).await?.pop())
    }

    /// A new notification of `user` with its actor's profile and its post; `None` when
    /// either is already gone.
    pub async fn live_notification(
        &self,
        user: &str,
        id: PostId,
        kind: NotificationType,
        actor: &str,
        post: Option<PostId>,
        at_ms: i64,
    ) -> StoreResult<Option<NotificationItem>> {
        let posts: Vec<PostId> = post.into_iter().collect();
        let actors = [actor];
        let (mut profiles, statuses) =
            tokio::try_join!(self.profiles(&actors), self.statuses_by_id(user, posts))?;
        let status = match post {
            Some(post) => match statuses.get(&post) {
                Some(status) => Some(status.clone()),
                None => return Ok(None),
            },
            None => None,
        };
        Ok(profiles.remove(actor).map(|actor| NotificationItem {
            id,
            kind,
            at_ms,
            actor,
            status,
        }))
    }
}
