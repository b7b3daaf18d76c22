//! The product's operations, shared by the HTTP handlers and the seeder. Each write is
//! the store call (atomic with its change-feed entry) plus the timeline upkeep that the
//! reader expects at once; activities are recorded from the change feed by the activity
//! worker, which every write wakes. Every rule (existence checks, no self-follow) lives
//! here, once. The store is private: the handlers and the seeder reach storage only
//! through these operations.
//!
//! This file holds `Social` itself (its parts and settings), users, tokens and follows;
//! the other operations are in a file per concern: posts in `posts.rs`, the home
//! timeline's reads in `timeline.rs`, reposts, replies, blocks and mutes, listings and
//! the Mastodon views in theirs.

mod account_statuses;
mod activity;
pub mod auth;
mod discovery;
mod engagement;
pub mod events;
mod idempotency;
mod keyset;
mod listings;
mod markers;
mod masto_accounts;
mod masto_listings;
pub mod masto_notifications;
mod masto_pages;
pub mod masto_stream;
pub mod mastodon;
pub mod notifications;
pub mod oauth;
mod pages;
mod posts;
mod relations;
mod relationships;
mod reposts;
mod threads;
mod timeline;

use std::sync::Arc;

use crate::domain::clock::Clock;
use crate::domain::{ActivityLimits, FeedStrategy, NewUser, User, now_ms};
use crate::feed::{FeedSettings, Timelines};
use crate::store::{Store, StoreError, StoreResult};
use crate::workers::Wakers;

pub use account_statuses::StatusFilter;
pub use activity::ActivityLog;
pub use auth::{Auth, AuthError, AuthSettings, IssuedToken};
pub use discovery::{Found, SearchFor};
pub use engagement::{liker_cursor, parse_liker_cursor};
pub use events::{EventPage, EventsService, Window};
pub use idempotency::{KeyedPost, POST_KEY_TTL_MS};
pub use keyset::{ListPage, ListRange};
pub use masto_pages::MastoPageSettings;
pub use notifications::Notifications;
pub use relations::MuteRequest;
pub use relationships::RelationshipView;
pub use reposts::Listed;
pub use threads::Context;

/// A page of a keyset-paginated list: `next` is the cursor of the following page.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Page<T, C> {
    pub items: Vec<T>,
    pub next: Option<C>,
}

impl<T, C> Page<T, C> {
    /// Builds a page from up to `limit + 1` items fetched: the extra one only tells
    /// that another page exists.
    pub fn from_extra(mut items: Vec<T>, limit: usize, cursor: impl Fn(&T) -> C) -> Self {
        let next = (items.len() > limit).then(|| cursor(&items[limit - 1]));
        items.truncate(limit);
        Page { items, next }
    }
}

/// Which side of the follow graph a list shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    Following,
    Followers,
}

pub struct Social {
    store: Store,
    timelines: Timelines,
    pages: pages::PageMemo,
    /// The Mastodon home timeline's kept pages (`masto_pages.rs`).
    masto_pages: masto_pages::MastoPages,
    activity: ActivityLog,
    notifications: Notifications,
    auth: Auth,
    wakers: Arc<Wakers>,
    /// This process's live streams, told of block and mute changes.
    streams: Option<Arc<crate::events::Hub>>,
    /// Sign-in state: limits, the authorize form's key, cached OAuth grants.
    oauth: oauth::OAuthState,
}

fn user_not_found(id: &str) -> StoreError {
    StoreError::NotFound(format!("user {id}"))
}

impl Social {
    /// `wakers` are told about every write, so that workers apply it at once.
    pub fn new(
        store: Store,
        feed: &FeedSettings,
        limits: ActivityLimits,
        wakers: Arc<Wakers>,
    ) -> Self {
        Social {
            timelines: Timelines::new(store.clone(), feed),
            pages: pages::PageMemo::new(feed.page_memo_mib),
            masto_pages: masto_pages::MastoPages::new(MastoPageSettings {
                mib: 0,
                max_age_ms: 0,
            }),
            activity: ActivityLog::new(store.clone(), limits, wakers.clone()),
            notifications: Notifications::new(store.clone()),
            auth: Auth::new(&store, AuthSettings::default()),
            store,
            wakers,
            streams: None,
            oauth: oauth::OAuthState::new(oauth::OAuthSettings::default()),
        }
    }

    /// Tells `hub`'s live streams of every block and mute change, at once.
    pub fn with_streams(mut self, hub: Option<Arc<crate::events::Hub>>) -> Self {
        self.streams = hub;
        self
    }

    /// Dates cache reads (and so which caches are idle, see `feed.cache_idle`) by
    /// `clock` instead of the system's.
    pub fn with_clock(mut self, clock: Arc<dyn Clock>) -> Self {
        let settings = self.timelines.settings().clone();
        self.timelines = Timelines::with_clock(self.store.clone(), &settings, clock.clone());
        self.notifications = Notifications::with_clock(self.store.clone(), clock.clone());
        self.oauth.clock = clock;
        self
    }

    /// Signs in to the Mastodon API under `settings`.
    pub fn with_oauth(mut self, settings: oauth::OAuthSettings) -> Self {
        let clock = self.oauth.clock.clone();
        self.oauth = oauth::OAuthState::new(settings);
        self.oauth.clock = clock;
        self
    }

    /// Checks credentials as `settings` say (the default: this service's tokens).
    pub fn with_auth(mut self, settings: AuthSettings) -> Self {
        self.auth = Auth::new(&self.store, settings);
        self
    }

    pub fn auth(&self) -> &Auth {
        &self.auth
    }

    pub fn activity(&self) -> &ActivityLog {
        &self.activity
    }

    pub fn notifications(&self) -> &Notifications {
        &self.notifications
    }

    pub fn backend(&self) -> &'static str {
        self.store.backend()
    }

    pub fn strategy(&self) -> FeedStrategy {
        self.timelines.strategy()
    }

    pub async fn ping(&self) -> StoreResult<()> {
        self.store.health.ping().await
    }

    pub async fn create_user(&self, id: &str, display_name: &str) -> StoreResult<User> {
        let user = self
            .store
            .users
            .create_user(&NewUser {
                id: id.to_owned(),
                display_name: display_name.to_owned(),
                created_at_ms: now_ms(),
            })
            .await?;
        self.wakers.wake_all();
        Ok(user)
    }

    /// Creates a user and, when this service issues tokens, their first token. The user
    /// is stored first: should the token fail to store, the id is taken and has no token
    /// (the answer is 503), which is safe; a token stored first could name an id that
    /// someone else then takes.
    pub async fn register(
        &self,
        id: &str,
        display_name: &str,
    ) -> StoreResult<(User, Option<IssuedToken>)> {
        let user = self.create_user(id, display_name).await?;
        let token = if self.auth.issues_tokens() {
            Some(self.auth.issue(id).await?)
        } else {
            None
        };
        Ok((user, token))
    }

    /// Another token for an existing user.
    pub async fn issue_token(&self, user: &str) -> StoreResult<IssuedToken> {
        if !self.auth.issues_tokens() {
            return Err(StoreError::NotFound(format!(
                "tokens (none are issued with auth.mode = {})",
                self.auth.mode()
            )));
        }
        self.user(user).await?;
        self.auth.issue(user).await
    }

    /// `NotFound` when `user` has no token `id`.
    pub async fn revoke_token(&self, user: &str, id: &str) -> StoreResult<()> {
        if self.auth.revoke(user, id).await? {
            Ok(())
        } else {
            Err(StoreError::NotFound(format!("token {id}")))
        }
    }

    pub async fn user(&self, id: &str) -> StoreResult<User> {
        self.store
            .users
            .user(id)
            .await?
            .ok_or_else(|| user_not_found(id))
    }

    pub async fn rename(&self, id: &str, display_name: &str) -> StoreResult<User> {
        let user = self
            .store
            .users
            .rename_user(id, display_name)
            .await?
            .ok_or_else(|| user_not_found(id))?;
        self.wakers.wake_all();
        Ok(user)
    }

    /// The edge first, then the backfill: a post racing with the follow is either seen
    /// by the backfill or fans out to the new edge. Returns whether the edge is new.
    pub async fn follow(&self, follower: &str, followee: &str) -> StoreResult<bool> {
        if follower == followee {
            return Err(StoreError::Invalid(
                "a user cannot follow themselves".into(),
            ));
        }
        let added = self
            .store
            .graph
            .follow(follower, followee, now_ms())
            .await?;
        if added {
            self.wakers.wake_all();
            crate::faults::point("follow.edge").await;
            // The timelines worker, seeing the mark, does not backfill again. Marked only
            // if the edge still stood after the upkeep; a later unfollow's own upkeep,
            // and its change, take over otherwise.
            if let Some(created_ms) = self.timelines.sync_edge(follower, followee).await? {
                let graph = &self.store.graph;
                graph
                    .mark_backfilled(follower, followee, created_ms)
                    .await?;
            }
        }
        Ok(added)
    }

    /// Idempotent. `NotFound` when either user is unknown.
    pub async fn unfollow(&self, follower: &str, followee: &str) -> StoreResult<()> {
        for id in [follower, followee] {
            self.user(id).await?;
        }
        if self.store.graph.unfollow(follower, followee).await? {
            self.wakers.wake_all();
            crate::faults::point("unfollow.edge").await;
            self.timelines.sync_edge(follower, followee).await?;
        }
        Ok(())
    }

    /// One page of the users `user` follows, or of `user`'s followers, by id.
    pub async fn follow_list(
        &self,
        user: &str,
        direction: Direction,
        after: Option<&str>,
        limit: usize,
    ) -> StoreResult<Page<String, String>> {
        self.user(user).await?;
        let graph = &self.store.graph;
        let ids = match direction {
            Direction::Following => graph.following(user, after, limit + 1).await?,
            Direction::Followers => graph.followers(user, after, limit + 1).await?,
        };
        Ok(Page::from_extra(ids, limit, String::clone))
    }
}
