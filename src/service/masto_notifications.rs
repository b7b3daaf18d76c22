//! Notifications for the Mastodon view: a page of the engine's notifications (plain or
//! grouped), with their actors' profiles and their posts as statuses, batched per page
//! as `mastodon.rs` does for timelines.

use std::collections::HashMap;

use super::Social;
use super::mastodon::{Entry, HomeRange, StatusView};
use super::notifications::{GroupView, NotificationView};
use crate::domain::{AccountView, NotificationFilter, NotificationType, Post, PostId};
use crate::store::{StoreError, StoreResult};

/// A notification with its actor's profile and its post as the reader sees it.
#[derive(Debug, Clone)]
pub struct NotificationItem {
    pub id: PostId,
    pub kind: NotificationType,
    pub at_ms: i64,
    pub actor: AccountView,
    /// The post it is about; `None` for follows.
    pub status: Option<StatusView>,
}

/// A page of groups with the profiles of the actors they name and their posts.
#[derive(Debug, Clone)]
pub struct GroupPage {
    pub groups: Vec<GroupView>,
    pub actors: Vec<AccountView>,
    pub statuses: Vec<StatusView>,
    pub next: Option<PostId>,
}

/// A page of notifications; `next` is the cursor of the following page.
#[derive(Debug, Clone)]
pub struct NotificationPage {
    pub items: Vec<NotificationItem>,
    pub next: Option<PostId>,
}

impl Social {
    /// The posts among `ids` as `user` sees them, by id.
    pub(super) async fn statuses_by_id(
        &self,
        user: &str,
        mut ids: Vec<PostId>,
    ) -> StoreResult<HashMap<PostId, StatusView>> {
        ids.sort_unstable();
        ids.dedup();
        if ids.is_empty() {
            return Ok(HashMap::new());
        }
        let posts: Vec<Post> = self.store.content.posts_by_ids(&ids, &[]).await?;
        let views = self
            .views(Some(user), posts.into_iter().map(Entry::Post).collect())
            .await?;
        Ok(views.into_iter().map(|v| (v.post.id, v)).collect())
    }

    /// One page of `user`'s notifications that `filter` admits, newest first: the newest
    /// below `before` (cut at `since` when given), or the page just above `after`, as
    /// [`Social::home_statuses`] pages the home timeline (`next` is then the page's
    /// oldest). A notification whose actor or post is gone is left out.
    pub async fn notification_statuses(
        &self,
        user: &str,
        filter: &NotificationFilter,
        range: HomeRange,
        limit: usize,
    ) -> StoreResult<NotificationPage> {
        let (side, _) = range.split();
        let page = self
            .notifications
            .page_in(user, filter, side, limit)
            .await?;
        let actors: Vec<&str> = page.items.iter().map(|n| n.actor.id.as_str()).collect();
        let posts: Vec<PostId> = page.items.iter().filter_map(|n| n.post).collect();
        let (profiles, statuses) =
            tokio::try_join!(self.profiles(&actors), self.statuses_by_id(user, posts))?;
        let mut items = page
            .items
            .into_iter()
            .filter_map(|n: NotificationView| {
                let status = match n.post {
                    Some(post) => Some(statuses.get(&post)?.clone()),
                    None => None,
                };
                Some(NotificationItem {
                    id: n.id,
                    kind: n.kind,
                    at_ms: n.at_ms,
                    actor: profiles.get(&n.actor.id)?.clone(),
                    status,
                })
            })
            .collect();
        let next = range.next_below(&mut items, page.next, |n| n.id);
        Ok(NotificationPage { items, next })
    }

    /// `user`'s notification `id` with its actor and post: `NotFound` as
    /// [`Notifications::get`](super::Notifications::get), or when its actor or post is
    /// gone.
    pub async fn notification_status(
        &self,
        user: &str,
        id: PostId,
    ) -> StoreResult<NotificationItem> {
        let n = self.notifications.get(user, id).await?;
        let posts: Vec<PostId> = n.post.into_iter().collect();
        let actors = [n.actor.id.as_str()];
        let (profiles, statuses) =
            tokio::try_join!(self.profiles(&actors), self.statuses_by_id(user, posts))?;
        let status = match n.post {
            Some(post) => statuses.get(&post).cloned(),
            None => None,
        };
        let actor = profiles.get(&n.actor.id).cloned();
        match (actor, status.is_some() || n.post.is_none()) {
            (Some(actor), true) => Ok(NotificationItem {
                id: n.id,
                kind: n.kind,
                at_ms: n.at_ms,
                actor,
                status,
            }),
            _ => Err(StoreError::NotFound(format!("notification {id}"))),
        }
    }

    /// Dismisses `user`'s notification `id` for good (see
    /// [`Notifications::dismiss`](super::Notifications::dismiss)).
    pub async fn dismiss_notification(&self, user: &str, id: PostId) -> StoreResult<()> {
        self.notifications.dismiss(user, id).await
    }

    /// Clears all of `user`'s notifications for good (see
    /// [`Notifications::clear`](super::Notifications::clear)).
    pub async fn clear_notifications(&self, user: &str) -> StoreResult<()> {
        self.notifications.clear(user).await
    }

    /// One page of `user`'s notification groups, newest first by each group's latest
    /// notification, in `range` (by that notification's id) as
    /// [`Social::notification_statuses`] pages; a group whose post is gone is left out.
    pub async fn notification_group_statuses(
        &self,
        user: &str,
        filter: &NotificationFilter,
        range: HomeRange,
        limit: usize,
    ) -> StoreResult<GroupPage> {
        let (side, _) = range.split();
        let page = self
            .notifications
            .groups_in(user, filter, side, limit)
            .await?;
        let actors: Vec<&str> = page
            .items
            .iter()
            .flat_map(|g| g.actors.iter().map(|a| a.id.as_str()))
            .collect();
        let posts: Vec<PostId> = page.items.iter().filter_map(|g| g.post).collect();
        let (profiles, statuses) =
            tokio::try_join!(self.profiles(&actors), self.statuses_by_id(user, posts))?;
        let mut groups: Vec<GroupView> = page
            .items
            .into_iter()
            .filter(|g| g.post.is_none_or(|p| statuses.contains_key(&p)))
            .collect();
        let next = range.next_below(&mut groups, page.next, |g| g.latest_id);
        let mut actors: Vec<AccountView> = profiles.into_values().collect();
        actors.sort_by(|a, b| a.user.id.cmp(&b.user.id));
        let mut statuses: Vec<StatusView> = statuses.into_values().collect();
        statuses.sort_by_key(|s| std::cmp::Reverse(s.post.id));
        Ok(GroupPage {
            groups,
            actors,
            statuses,
            next,
        })
    }
}
