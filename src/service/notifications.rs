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
use crate::store::{Store, StoreError, StoreResult};

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
        self.known(user).await?;
        let filter = &self.visible(user, filter).await?;
        let mut items: Vec<Notification> = self
            .store
            .notifications
            .notifications(user, filter, before, limit + 1)
            .await?;
        let more = items.len() > limit;
        items.truncate(limit);
        // The cursor is the last notification read, so a page that loses some to the
        // check below may be short, but never skips any.
        let next = more.then(|| items.last().map(|n| n.id)).flatten();
        let items = self.standing(user, items).await?;
        let names = self
            .names(user, items.iter().map(|n| n.actor.clone()).collect())
            .await?;
        let items = items
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
            .collect();
        Ok(Page { items, next })
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
        self.known(user).await?;
        let filter = &self.visible(user, filter).await?;
        let mut groups: Vec<NotificationGroup> = self
            .store
            .notifications
            .notification_groups(user, filter, before, limit + 1)
            .await?;
        let more = groups.len() > limit;
        groups.truncate(limit);
        let names = self
            .names(
                user,
                groups
                    .iter()
                    .flat_map(|g| g.actors.iter().cloned())
                    .collect(),
            )
            .await?;
        let next = more.then(|| groups.last().map(|g| g.latest_id)).flatten();
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
