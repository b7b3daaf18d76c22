//! Who liked and who reposted a post (Mastodon's `favourited_by` and `reblogged_by`):
//! newest first, keyset pages read from one index range each, without the users hidden
//! from the caller by a block either way.

use super::{Page, Social};
use crate::domain::{PostId, Repost};
use crate::store::{Liker, StoreResult};

impl Social {
    /// Who likes `post`, newest like first, below `before` (the previous page's `next`).
    /// `NotFound` when the post does not exist or its author blocks `caller`, as a read
    /// of it answers. Likers in a block with `caller` are left out; the cursor is the
    /// last like read, so a page may be short but never skips one.
    pub async fn likers(
        &self,
        post: PostId,
        caller: Option<&str>,
        before: Option<Liker>,
        limit: usize,
    ) -> StoreResult<Page<Liker, Liker>> {
        self.get_post_as(post, caller).await?;
        let read = self
            .store
            .activity
            .likers(post, before.as_ref(), limit + 1)
            .await?;
        let page = Page::from_extra(read, limit, Liker::clone);
        self.unblocked(caller, page, |l| &l.user).await
    }

    /// Who reposted `post`, newest repost first, below `before` (a repost id, the
    /// previous page's `next`). As [`Social::likers`] otherwise.
    pub async fn reposters(
        &self,
        post: PostId,
        caller: Option<&str>,
        before: Option<PostId>,
        limit: usize,
    ) -> StoreResult<Page<Repost, PostId>> {
        self.get_post_as(post, caller).await?;
        let read = self
            .store
            .reposts
            .reposts_of_post(post, before, limit + 1)
            .await?;
        let page = Page::from_extra(read, limit, |r| r.id);
        self.unblocked(caller, page, |r| &r.user).await
    }

    /// `page` without the items whose user is in a block with `caller` (either way).
    async fn unblocked<T, C>(
        &self,
        caller: Option<&str>,
        mut page: Page<T, C>,
        user: impl Fn(&T) -> &String,
    ) -> StoreResult<Page<T, C>> {
        let Some(caller) = caller else {
            return Ok(page);
        };
        let hidden = self
            .store
            .relations
            .hidden(caller, self.timelines.now_ms())
            .await?;
        page.items.retain(|item| !hidden.blocks(user(item)));
        Ok(page)
    }
}

/// A likers page's cursor as text: `<ms>.<user>`, the time read up to the first `.`.
pub fn liker_cursor(liker: &Liker) -> String {
    format!("{}.{}", liker.at_ms, liker.user)
}

/// The cursor [`liker_cursor`] wrote; `None` for anything else.
pub fn parse_liker_cursor(raw: &str) -> Option<Liker> {
    let (at, user) = raw.split_once('.')?;
    let at_ms = at.parse().ok()?;
    (!user.is_empty()).then(|| Liker {
        user: user.to_owned(),
        at_ms,
    })
}
