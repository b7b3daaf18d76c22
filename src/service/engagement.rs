//! Who liked and who reposted a post (Mastodon's `favourited_by` and `reblogged_by`):
//! newest first, keyset pages read from one index range each (either way from a
//! cursor), without the users hidden from the caller by a block either way.

use super::keyset::{self, ListPage, ListRange};
use super::{Page, Social};
use crate::domain::{PostId, Repost};
use crate::store::{Liker, StoreResult};

impl Social {
    /// Who likes `post`, newest like first, below `before` (the previous page's `next`).
    /// As [`Social::liker_range`] otherwise.
    pub async fn likers(
        &self,
        post: PostId,
        caller: Option<&str>,
        before: Option<Liker>,
        limit: usize,
    ) -> StoreResult<Page<Liker, Liker>> {
        let range = ListRange::older(before);
        Ok(self
            .liker_range(post, caller, range, limit)
            .await?
            .into_page())
    }

    /// Who likes `post`, newest like first, the page of `range`. `NotFound` when the
    /// post does not exist or its author blocks `caller`, as a read of it answers.
    /// Likers in a block with `caller` are left out; the cursors are the likes read, so
    /// a page may be short but never skips one.
    pub async fn liker_range(
        &self,
        post: PostId,
        caller: Option<&str>,
        range: ListRange<Liker>,
        limit: usize,
    ) -> StoreResult<ListPage<Liker, Liker>> {
        self.get_post_as(post, caller).await?;
        let (activity, size) = (&self.store.activity, keyset::read_size(&range, limit));
        let read = match &range {
            ListRange::Older { before, .. } => activity.likers(post, before.as_ref(), size),
            ListRange::Newer { after } => activity.likers_newer(post, after, size),
        }
        .await?;
        let newer = |a: &Liker, b: &Liker| (a.at_ms, &a.user) > (b.at_ms, &b.user);
        let mut page = keyset::shape(&range, read, limit, Liker::clone, newer);
        self.unblocked(caller, &mut page.items, |l| &l.user).await?;
        Ok(page)
    }

    /// Who reposted `post`, newest repost first, below `before` (a repost id, the
    /// previous page's `next`). As [`Social::reposter_range`] otherwise.
    pub async fn reposters(
        &self,
        post: PostId,
        caller: Option<&str>,
        before: Option<PostId>,
        limit: usize,
    ) -> StoreResult<Page<Repost, PostId>> {
        let range = ListRange::older(before);
        Ok(self
            .reposter_range(post, caller, range, limit)
            .await?
            .into_page())
    }

    /// Who reposted `post`, newest repost first, the page of `range` (cursors are
    /// repost ids). As [`Social::liker_range`] otherwise.
    pub async fn reposter_range(
        &self,
        post: PostId,
        caller: Option<&str>,
        range: ListRange<PostId>,
        limit: usize,
    ) -> StoreResult<ListPage<Repost, PostId>> {
        self.get_post_as(post, caller).await?;
        let (reposts, size) = (&self.store.reposts, keyset::read_size(&range, limit));
        let read = match &range {
            ListRange::Older { before, .. } => reposts.reposts_of_post(post, *before, size),
            ListRange::Newer { after } => reposts.reposts_of_post_newer(post, *after, size),
        }
        .await?;
        let mut page = keyset::shape(&range, read, limit, |r| r.id, |a, b| a > b);
        self.unblocked(caller, &mut page.items, |r| &r.user).await?;
        Ok(page)
    }

    /// `items` without those whose user is in a block with `caller` (either way).
    async fn unblocked<T>(
        &self,
        caller: Option<&str>,
        items: &mut Vec<T>,
        user: impl Fn(&T) -> &String,
    ) -> StoreResult<()> {
        let Some(caller) = caller else {
            return Ok(());
        };
        let hidden = self
            .store
            .relations
            .hidden(caller, self.timelines.now_ms())
            .await?;
        items.retain(|item| !hidden.blocks(user(item)));
        Ok(())
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
