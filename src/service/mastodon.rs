//! What the Mastodon view needs beyond `/v1`'s operations: each operation here is one
//! of `/v1`'s (post, delete, like, repost, a timeline page, a thread) followed by the
//! reads that make its posts into statuses: the full posts, their authors' profiles,
//! what the viewer did to them (liked, reposted) and their like counts. Those are
//! batched per page: one read of the posts, one of the viewer's likes among them, one
//! of the viewer's reposts among them, one grouped count of their likes, and one read
//! of the accounts of the page's authors and reposters (their profiles and last
//! statuses, `masto_accounts.rs`), run together, never a lookup per status.

use std::collections::{HashMap, HashSet};

use super::Social;
use crate::domain::{AccountView, Post, PostId, now_ms};
use crate::store::{PostRange, StoreError, StoreResult};

/// What the viewer did to a post.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Viewed {
    pub favourited: bool,
    pub reblogged: bool,
}

/// A repost around a post: its own id and its reposter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reblog {
    pub id: PostId,
    pub by: AccountView,
}

/// A post as a viewer sees it, with everything a Status shows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StatusView {
    /// The post (a repost's original).
    pub post: Post,
    pub author: AccountView,
    /// Set when this is a repost of `post`.
    pub reblog: Option<Reblog>,
    pub viewed: Viewed,
    /// The post's standing likes.
    pub favourites: u64,
}

impl StatusView {
    /// The status's id: the repost's own, or the post's.
    pub fn id(&self) -> PostId {
        self.reblog.as_ref().map_or(self.post.id, |r| r.id)
    }
}

/// A status to make: a post, or a repost (its id and reposter) of one.
#[derive(Debug, Clone)]
pub(super) enum Entry {
    Post(Post),
    Repost { id: PostId, by: String, of: Post },
}

impl Entry {
    fn post(&self) -> &Post {
        match self {
            Entry::Post(post) | Entry::Repost { of: post, .. } => post,
        }
    }
}

/// A thread as a viewer sees it.
#[derive(Debug, Clone)]
pub struct ContextView {
    pub ancestors: Vec<StatusView>,
    pub descendants: Vec<StatusView>,
}

/// Which page of a home timeline: the newest below `before` (all when `None`), without
/// the items at or below `since` (Mastodon's `max_id` and `since_id`); or the page just
/// above `after` (`min_id`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HomeRange {
    Older {
        before: Option<PostId>,
        since: Option<PostId>,
    },
    Newer {
        after: PostId,
    },
}

impl HomeRange {
    /// The store's side of this page, and the `since_id` that cuts an older one.
    pub fn split(self) -> (PostRange, Option<PostId>) {
        match self {
            HomeRange::Older { before, since } => (PostRange::Older(before), since),
            HomeRange::Newer { after } => (PostRange::Newer(after), None),
        }
    }

    /// The `next` cursor (the page below) of `items` read newest first in this range
    /// with the store's `next`: an older page's own, cut at `since` ([`cut_at_since`]);
    /// a page above `min_id`'s oldest item, as older ones lie below it.
    pub fn next_below<T>(
        self,
        items: &mut Vec<T>,
        next: Option<PostId>,
        id: impl Fn(&T) -> PostId,
    ) -> Option<PostId> {
        match self {
            HomeRange::Older { since, .. } => cut_at_since(items, next, since, id),
            HomeRange::Newer { .. } => items.last().map(id),
        }
    }
}

/// A page of a timeline as statuses; `next` is the cursor of the following page.
#[derive(Debug, Clone)]
pub struct StatusPage {
    pub items: Vec<StatusView>,
    pub next: Option<PostId>,
}

/// Mastodon's `since_id` on a page read newest first: leaves out the items at or below
/// `since` (by `id`), and answers the page's `next` cursor only when nothing was cut,
/// since a page cut at `since` reached it and nothing older is asked for.
pub fn cut_at_since<T, C>(
    items: &mut Vec<T>,
    next: Option<C>,
    since: Option<PostId>,
    id: impl Fn(&T) -> PostId,
) -> Option<C> {
    let whole = items.len();
    if let Some(since) = since {
        items.retain(|item| id(item) > since);
    }
    next.filter(|_| items.len() == whole)
}

impl Social {
    /// `entries` as `viewer` sees them, in order. An entry whose author (or reposter)
    /// is unknown is left out.
    pub(super) async fn views(
        &self,
        viewer: Option<&str>,
        entries: Vec<Entry>,
    ) -> StoreResult<Vec<StatusView>> {
        let mut names: Vec<&str> = Vec::new();
        for entry in &entries {
            names.push(&entry.post().author);
            if let Entry::Repost { by, .. } = entry {
                names.push(by);
            }
        }
        let mut posts: Vec<PostId> = entries.iter().map(|e| e.post().id).collect();
        posts.sort_unstable();
        posts.dedup();
        let (profiles, (liked, reposted), counts) = tokio::try_join!(
            self.profiles(&names),
            self.viewed(viewer, &posts),
            self.store.activity.like_counts(&posts)
        )?;
        let counts: HashMap<PostId, u64> = counts.into_iter().collect();
        Ok(entries
            .into_iter()
            .filter_map(|entry| {
                let (post, reblog) = match entry {
                    Entry::Post(post) => (post, None),
                    Entry::Repost { id, by, of } => {
                        let by = profiles.get(&by)?.clone();
                        (of, Some(Reblog { id, by }))
                    }
                };
                Some(StatusView {
                    author: profiles.get(&post.author)?.clone(),
                    viewed: Viewed {
                        favourited: liked.contains(&post.id),
                        reblogged: reposted.contains(&post.id),
                    },
                    favourites: counts.get(&post.id).copied().unwrap_or(0),
                    post,
                    reblog,
                })
            })
            .collect())
    }

    /// Which of `posts` the viewer likes, and which they reposted: two reads.
    async fn viewed(
        &self,
        viewer: Option<&str>,
        posts: &[PostId],
    ) -> StoreResult<(HashSet<PostId>, HashSet<PostId>)> {
        let Some(viewer) = viewer.filter(|_| !posts.is_empty()) else {
            return Ok((HashSet::new(), HashSet::new()));
        };
        let pairs: Vec<(String, PostId)> = posts.iter().map(|p| (viewer.to_owned(), *p)).collect();
        let reposters = [viewer.to_owned()];
        let (likes, reposts) = tokio::try_join!(
            self.store.activity.likes_standing(&pairs),
            self.store
                .reposts
                .reposts_of(posts, &reposters, PostId::MAX)
        )?;
        Ok((
            likes.into_iter().map(|(_, p)| p).collect(),
            reposts.into_iter().map(|r| r.post.post).collect(),
        ))
    }

    async fn view(&self, viewer: Option<&str>, entry: Entry) -> StoreResult<StatusView> {
        let id = entry.post().id;
        self.views(viewer, vec![entry])
            .await?
            .pop()
            .ok_or_else(|| StoreError::NotFound(format!("post {id}")))
    }

    /// A post as `viewer` sees it: `NotFound` when it does not exist or its author
    /// blocks the viewer.
    pub async fn status(&self, viewer: Option<&str>, id: PostId) -> StoreResult<StatusView> {
        let post = self.get_post_as(id, viewer).await?;
        self.view(viewer, Entry::Post(post)).await
    }

    /// [`Social::post_reply`], as its author sees the new post; under an
    /// `Idempotency-Key`, [`Social::post_once`]: a retry answers the key's first post.
    pub async fn post_status(
        &self,
        author: &str,
        text: &str,
        in_reply_to: Option<PostId>,
        idempotency_key: Option<&str>,
    ) -> StoreResult<StatusView> {
        if let Some(parent) = in_reply_to {
            // Answering a post one cannot see is answering a post that does not exist.
            self.get_post_as(parent, Some(author)).await?;
        }
        let post = match idempotency_key {
            Some(key) => self.post_once(author, text, in_reply_to, key).await?.post,
            None => self.post_reply(author, text, in_reply_to).await?,
        };
        self.view(Some(author), Entry::Post(post)).await
    }

    /// Deletes `caller`'s post and answers it as it was: `NotFound` when it does not
    /// exist, is hidden from the caller, or is someone else's (Mastodon looks the status
    /// up among the caller's own, so another's is "not found" rather than forbidden).
    pub async fn delete_status(&self, caller: &str, id: PostId) -> StoreResult<StatusView> {
        let view = self.status(Some(caller), id).await?;
        match self.delete_post_as(id, Some(caller)).await {
            Ok(Some(_)) => Ok(view),
            Ok(None) | Err(StoreError::Forbidden(_)) => {
                Err(StoreError::NotFound(format!("post {id}")))
            }
            Err(other) => Err(other),
        }
    }

    /// Likes (`on`) or unlikes a post `user` can see, and answers it as it then stands.
    pub async fn favourite_status(
        &self,
        user: &str,
        id: PostId,
        on: bool,
    ) -> StoreResult<StatusView> {
        self.get_post_as(id, Some(user)).await?;
        match on {
            true => self.activity.like(user, id).await?,
            false => self.activity.unlike(user, id).await?,
        }
        self.status(Some(user), id).await
    }

    /// Reposts a post (or finds the repost that stands), answered as the repost.
    pub async fn reblog_status(&self, user: &str, id: PostId) -> StoreResult<StatusView> {
        let (reposted, original) = self.repost(user, id).await?;
        let entry = Entry::Repost {
            id: reposted.repost.id,
            by: user.to_owned(),
            of: original,
        };
        self.view(Some(user), entry).await
    }

    /// Removes `user`'s repost of a post they can see, answered as the original.
    pub async fn unreblog_status(&self, user: &str, id: PostId) -> StoreResult<StatusView> {
        self.get_post_as(id, Some(user)).await?;
        self.unrepost(user, id).await?;
        self.status(Some(user), id).await
    }

    /// The thread around a post `viewer` can see, without the posts of anyone hidden
    /// from them (a block either way, a mute), their own always shown.
    pub async fn status_context(
        &self,
        viewer: Option<&str>,
        id: PostId,
    ) -> StoreResult<ContextView> {
        self.get_post_as(id, viewer).await?;
        let context = self.context(id).await?;
        let hidden = match viewer {
            Some(viewer) => Some(self.store.relations.hidden(viewer, now_ms()).await?),
            None => None,
        };
        let shown = |posts: Vec<Post>| -> Vec<Entry> {
            posts
                .into_iter()
                .filter(|p| {
                    viewer == Some(p.author.as_str())
                        || hidden.as_ref().is_none_or(|h| !h.hides(&p.author))
                })
                .map(Entry::Post)
                .collect()
        };
        let ancestors = shown(context.ancestors);
        let descendants = shown(context.descendants);
        let split = ancestors.len();
        let mut all = self
            .views(viewer, ancestors.into_iter().chain(descendants).collect())
            .await?;
        let descendants = all.split_off(split.min(all.len()));
        Ok(ContextView {
            ancestors: all,
            descendants,
        })
    }

    /// One page of `user`'s home timeline as statuses, newest first: the newest below
    /// `before` (cut at `since` when given), or the page just above `after`. An entry
    /// whose post was deleted after the page was read is left out.
    pub async fn home_statuses(
        &self,
        user: &str,
        range: HomeRange,
        limit: usize,
    ) -> StoreResult<StatusPage> {
        let (mut items, next) = match range {
            HomeRange::Older { before, .. } => {
                let page = self.timelines.page(user, before, limit).await?;
                (page.items, page.next_cursor)
            }
            HomeRange::Newer { after } => {
                let page = self.timelines.page_after(user, after, limit).await?;
                (page.items, None)
            }
        };
        let next = range.next_below(&mut items, next, |item| item.id);
        Ok(StatusPage {
            items: self.item_statuses(user, items).await?,
            next,
        })
    }

    /// Timeline `items` as `user` sees them, in order, in one read of their posts (a
    /// repost's original) and [`Social::views`]' batched reads; an item whose post is
    /// gone is left out. Pages and the live stream (`masto_stream.rs`) both use it.
    pub(super) async fn item_statuses(
        &self,
        user: &str,
        items: Vec<crate::feed::TimelineItem>,
    ) -> StoreResult<Vec<StatusView>> {
        let mut ids = Vec::with_capacity(items.len());
        let mut authors = Vec::with_capacity(items.len());
        for item in &items {
            match &item.repost_of {
                Some(original) => {
                    ids.push(original.id);
                    authors.push(original.author.clone());
                }
                None => {
                    ids.push(item.id);
                    authors.push(item.author.clone());
                }
            }
        }
        let posts: HashMap<PostId, Post> = self
            .store
            .content
            .posts_by_ids(&ids, &authors)
            .await?
            .into_iter()
            .map(|p| (p.id, p))
            .collect();
        let entries = items
            .into_iter()
            .filter_map(|item| match item.repost_of {
                Some(original) => Some(Entry::Repost {
                    id: item.id,
                    by: item.author,
                    of: posts.get(&original.id)?.clone(),
                }),
                None => Some(Entry::Post(posts.get(&item.id)?.clone())),
            })
            .collect();
        self.views(Some(user), entries).await
    }
}
