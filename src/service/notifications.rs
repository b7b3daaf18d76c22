//! Reading a user's notifications, plain or grouped, with their actors' display names.
//! Notifications are written by the notifications worker from the change feed
//! (`workers/notifications.rs`), so they trail their causes by the worker's lag; a plain
//! page is checked against their causes when it is read (`standing`), so none is served
//! after its cause was undone, whatever the worker has done yet.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use crate::domain::clock::{Clock, SystemClock};

use crate::domain::{
    Notification, NotificationFilter, NotificationGroup, NotificationType, PostId,
};
use crate::store::{PostRange, Store, StoreError, StoreResult};

/// An actor as a notification names them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Actor {
    pub id: String,
    /// `None` when the user is unknown (never, while users are never deleted).
    pub display_name: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotificationView {
    pub id: PostId,
    pub kind: NotificationType,
    pub actor: Actor,
    pub post: Option<PostId>,
    pub at_ms: i64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupView {
    pub kind: NotificationType,
    pub post: Option<PostId>,
    pub count: u64,
    pub actors: Vec<Actor>,
    pub latest_id: PostId,
    pub latest_at_ms: i64,
}

/// A page and the cursor of the next one (`None` at the end).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Page<T> {
    pub items: Vec<T>,
    pub next: Option<PostId>,
}

pub struct Notifications {
    store: Store,
    /// Dates the reader's mutes: one that has expired hides nothing.
    clock: Arc<dyn Clock>,
}

impl Notifications {
    pub fn new(store: Store) -> Self {
        Notifications {
            store,
            clock: Arc::new(SystemClock),
        }
    }

    pub fn with_clock(store: Store, clock: Arc<dyn Clock>) -> Self {
        Notifications { store, clock }
    }

    /// `filter` with the actors hidden from `user` now (blocks either way, mutes that
    /// hide notifications), from one read of their relations.
    async fn visible(
        &self,
        user: &str,
        filter: &NotificationFilter,
    ) -> StoreResult<NotificationFilter> {
        let hidden = self
            .store
            .relations
            .hidden(user, self.clock.now_ms())
            .await?;
        let mut filter = filter.clone();
        filter.hidden.extend(hidden.notifications_hidden());
        Ok(filter)
    }

    async fn names(&self, user: &str, ids: Vec<String>) -> StoreResult<HashMap<String, String>> {
        let mut ids = ids;
        ids.sort();
        ids.dedup();
        Ok(self
            .store
            .users
            .authors(user, &ids)
            .await?
            .into_iter()
            .map(|a| (a.id, a.display_name))
            .collect())
    }

    async fn known(&self, user: &str) -> StoreResult<()> {
        match self.store.users.user(user).await? {
            Some(_) => Ok(()),
            None => Err(StoreError::NotFound(format!("user {user}"))),
        }
    }

    /// `user`'s notifications that `filter` admits, newest first, below `before`.
    /// `NotFound` when the user is unknown.
    pub async fn page(
        &self,
        user: &str,
        filter: &NotificationFilter,
        before: Option<PostId>,
        limit: usize,
    ) -> StoreResult<Page<NotificationView>> {
        self.page_in(user, filter, PostRange::Older(before), limit)
            .await
    }

    /// [`Notifications::page`] on either side of an id: `Older(before)` as there, or
    /// `Newer(after)`, the `limit` oldest above `after` (the page just newer than it,
    /// Mastodon's `min_id`), still newest first. `next` continues in the range's
    /// direction: below the page (`Older`) or above it (`Newer`).
    pub async fn page_in(
        &self,
        user: &str,
        filter: &NotificationFilter,
        range: PostRange,
        limit: usize,
    ) -> StoreResult<Page<NotificationView>> {
        self.known(user).await?;
        let filter = &self.visible(user, filter).await?;
        let store = &self.store.notifications;
        let mut items: Vec<Notification> = match range {
            PostRange::Older(before) => store.notifications(user, filter, before, limit + 1),
            PostRange::Newer(after) => store.notifications_after(user, filter, after, limit + 1),
        }
        .await?;
        let more = items.len() > limit;
        items.truncate(limit);
        // The cursor is the last notification read, so a page that loses some to the
        // check below may be short, but never skips any.
        let next = more.then(|| items.last().map(|n| n.id)).flatten();
        if let PostRange::Newer(_) = range {
            items.reverse();
        }
        // Dismissed ones are removed by the dismissal's own write; read again here, so
        // none is served whatever a racing worker wrote (MongoDB).
        let dismissals = self.store.notifications.dismissals(user).await?;
        items.retain(|n| !dismissals.hides_notification(n));
        let items = self.standing(user, items).await?;
        self.views(user, items)
            .await
            .map(|items| Page { items, next })
    }

    async fn views(
        &self,
        user: &str,
        items: Vec<Notification>,
    ) -> StoreResult<Vec<NotificationView>> {
        let names = self
            .names(user, items.iter().map(|n| n.actor.clone()).collect())
            .await?;
        Ok(items
            .into_iter()
            .map(|n| NotificationView {
                id: n.id,
                kind: n.kind,
                actor: Actor {
                    display_name: names.get(&n.actor).cloned(),
                    id: n.actor,
                },
                post: n.post,
                at_ms: n.at_ms,
            })
            .collect())
    }

    /// `user`'s notification `id`, as a page would serve it: `NotFound` when the user is
    /// unknown, or it is not theirs, was dismissed or cleared, its cause no longer
    /// stands, or its actor is hidden from them (a block either way, a mute that hides
    /// notifications).
    pub async fn get(&self, user: &str, id: PostId) -> StoreResult<NotificationView> {
        self.shown(user, id)
            .await?
            .ok_or_else(|| StoreError::NotFound(format!("notification {id}")))
    }

    async fn shown(&self, user: &str, id: PostId) -> StoreResult<Option<NotificationView>> {
        self.known(user).await?;
        let Some(n) = self.store.notifications.notification(user, id).await? else {
            return Ok(None);
        };
        let filter = self.visible(user, &NotificationFilter::default()).await?;
        let dismissals = self.store.notifications.dismissals(user).await?;
        if !filter.admits(n.kind, &n.actor) || dismissals.hides_notification(&n) {
            return Ok(None);
        }
        let items = self.standing(user, vec![n]).await?;
        Ok(self.views(user, items).await?.pop())
    }

    /// Dismisses `user`'s notification `id` for good: its cause (type, actor, post) is
    /// recorded as dismissed up to now (a source), so neither the worker nor a rebuild
    /// brings it back; the same cause done again later notifies again. `NotFound` as
    /// [`Notifications::get`].
    pub async fn dismiss(&self, user: &str, id: PostId) -> StoreResult<()> {
        self.known(user).await?;
        let Some(n) = self.store.notifications.notification(user, id).await? else {
            return Err(StoreError::NotFound(format!("notification {id}")));
        };
        // Notifications are dated by their writers' clocks: up to the later of now and
        // its own time, so a clock behind the writer's still covers it.
        let upto = crate::domain::now_ms().max(n.at_ms);
        self.store
            .notifications
            .dismiss_notification(user, n.kind, &n.actor, n.post, upto)
            .await
    }

    /// Clears every notification `user` has now, for good (a source: see
    /// [`Notifications::dismiss`]): up to the later of now and their newest one's time.
    /// `NotFound` when the user is unknown.
    pub async fn clear(&self, user: &str) -> StoreResult<()> {
        self.known(user).await?;
        let all = NotificationFilter::default();
        let newest = self
            .store
            .notifications
            .notifications(user, &all, None, 1)
            .await?;
        let upto = newest
            .iter()
            .map(|n| n.at_ms)
            .fold(crate::domain::now_ms(), i64::max);
        self.store
            .notifications
            .clear_notifications(user, upto)
            .await
    }

    /// Those of `items` (notifications of `user`) whose cause stands now: the follow
    /// edge, the like, the repost, the post (a like's, a repost's, a reply's or a
    /// mention's). A few lookups per page, never one per item for posts, likes and
    /// reposts; a follow's edge is one primary-key read each.
    async fn standing(
        &self,
        user: &str,
        items: Vec<Notification>,
    ) -> StoreResult<Vec<Notification>> {
        let mut posts = Vec::new();
        let mut likes = Vec::new();
        let mut reposts = Vec::new();
        let mut follows = HashSet::new();
        for n in &items {
            posts.extend(n.post);
            match n.kind {
                NotificationType::Like => likes.extend(n.post.map(|p| (n.actor.clone(), p))),
                NotificationType::Repost => reposts.extend(n.post.map(|p| (n.actor.clone(), p))),
                NotificationType::Follow
                    if self.store.graph.edge(&n.actor, user).await?.is_some() =>
                {
                    follows.insert(n.actor.clone());
                }
                _ => {}
            }
        }
        posts.sort();
        posts.dedup();
        let live: HashSet<PostId> = self
            .store
            .content
            .existing_posts(&posts, &[])
            .await?
            .into_iter()
            .collect();
        let liked: HashSet<(String, PostId)> = match likes.is_empty() {
            true => HashSet::new(),
            false => self
                .store
                .activity
                .likes_standing(&likes)
                .await?
                .into_iter()
                .collect(),
        };
        let mut reposted = HashSet::new();
        if !reposts.is_empty() {
            let (actors, of): (Vec<String>, Vec<PostId>) = reposts.iter().cloned().unzip();
            for r in self
                .store
                .reposts
                .reposts_of(&of, &actors, PostId::MAX)
                .await?
            {
                reposted.insert((r.user, r.post.post));
            }
        }
        Ok(items
            .into_iter()
            .filter(|n| {
                let post_stands = n.post.is_none_or(|p| live.contains(&p));
                post_stands
                    && match (n.kind, n.post) {
                        (NotificationType::Follow, _) => follows.contains(&n.actor),
                        (NotificationType::Like, Some(p)) => liked.contains(&(n.actor.clone(), p)),
                        (NotificationType::Repost, Some(p)) => {
                            reposted.contains(&(n.actor.clone(), p))
                        }
                        _ => true,
                    }
            })
            .collect())
    }

    /// `user`'s groups (one per type and post, follows per type), newest first by their
    /// latest notification, below `before` (a group's `latest_id`). One stored row per
    /// group: the cost does not grow with a group's size.
    pub async fn groups(
        &self,
        user: &str,
        filter: &NotificationFilter,
        before: Option<PostId>,
        limit: usize,
    ) -> StoreResult<Page<GroupView>> {
        self.groups_in(user, filter, PostRange::Older(before), limit)
            .await
    }

    /// [`Notifications::groups`] on either side of a `latest_id`, as
    /// [`Notifications::page_in`] is for notifications.
    pub async fn groups_in(
        &self,
        user: &str,
        filter: &NotificationFilter,
        range: PostRange,
        limit: usize,
    ) -> StoreResult<Page<GroupView>> {
        self.known(user).await?;
        let filter = &self.visible(user, filter).await?;
        let store = &self.store.notifications;
        let mut groups: Vec<NotificationGroup> = match range {
            PostRange::Older(before) => store.notification_groups(user, filter, before, limit + 1),
            PostRange::Newer(after) => {
                store.notification_groups_after(user, filter, after, limit + 1)
            }
        }
        .await?;
        let more = groups.len() > limit;
        groups.truncate(limit);
        // Cleared groups are removed by the clear's own write; read again here.
        let cleared = self.store.notifications.dismissals(user).await?.cleared_ms;
        let next_before_clear = groups.last().map(|g| g.latest_id);
        if let PostRange::Newer(_) = range {
            groups.reverse();
        }
        groups.retain(|g| cleared.is_none_or(|c| g.latest_at_ms > c));
        let names = self
            .names(
                user,
                groups
                    .iter()
                    .flat_map(|g| g.actors.iter().cloned())
                    .collect(),
            )
            .await?;
        let next = more.then_some(next_before_clear).flatten();
        let items = groups
            .into_iter()
            .map(|g| GroupView {
                kind: g.kind,
                post: g.post,
                count: g.count,
                actors: g
                    .actors
                    .into_iter()
                    .map(|id| Actor {
                        display_name: names.get(&id).cloned(),
                        id,
                    })
                    .collect(),
                latest_id: g.latest_id,
                latest_at_ms: g.latest_at_ms,
            })
            .collect();
        Ok(Page { items, next })
    }
}
