//! The engine's listings for the Mastodon view: who liked or reposted a status (as
//! profiles, in the engine's order) and the public and tag timelines (as statuses),
//! each batched per page as `mastodon.rs` batches the home timeline.

use super::keyset::{ListPage, ListRange};
use super::mastodon::{Entry, StatusPage};
use super::{Page, Social};
use crate::domain::{AccountView, PostId};
use crate::store::{Liker, PostRange, StoreResult};

impl Social {
    /// [`Social::liker_range`] with each liker's profile, in the page's order.
    pub async fn liker_accounts(
        &self,
        post: PostId,
        caller: Option<&str>,
        range: ListRange<Liker>,
        limit: usize,
    ) -> StoreResult<ListPage<AccountView, Liker>> {
        let page = self.liker_range(post, caller, range, limit).await?;
        let ids: Vec<&str> = page.items.iter().map(|l| l.user.as_str()).collect();
        let users = self.profiles_in_order(&ids).await?;
        Ok(page.with_items(users))
    }

    /// [`Social::reposter_range`] with each reposter's profile, in the page's order.
    pub async fn reposter_accounts(
        &self,
        post: PostId,
        caller: Option<&str>,
        range: ListRange<PostId>,
        limit: usize,
    ) -> StoreResult<ListPage<AccountView, PostId>> {
        let page = self.reposter_range(post, caller, range, limit).await?;
        let ids: Vec<&str> = page.items.iter().map(|r| r.user.as_str()).collect();
        let users = self.profiles_in_order(&ids).await?;
        Ok(page.with_items(users))
    }

    /// [`Social::public_posts`] as statuses seen by `caller`.
    pub async fn public_statuses(
        &self,
        caller: Option<&str>,
        range: PostRange,
        limit: usize,
    ) -> StoreResult<StatusPage> {
        let page = self.public_posts(caller, range, limit).await?;
        self.post_page(caller, page).await
    }

    /// [`Social::tagged_posts`] as statuses seen by `caller`.
    pub async fn tagged_statuses(
        &self,
        caller: Option<&str>,
        tag: &str,
        range: PostRange,
        limit: usize,
    ) -> StoreResult<StatusPage> {
        let page = self.tagged_posts(caller, tag, range, limit).await?;
        self.post_page(caller, page).await
    }

    async fn post_page(
        &self,
        caller: Option<&str>,
        page: Page<crate::domain::Post, PostId>,
    ) -> StoreResult<StatusPage> {
        let entries = page.items.into_iter().map(Entry::Post).collect();
        Ok(StatusPage {
            items: self.views(caller, entries).await?,
            next: page.next,
        })
    }
}
