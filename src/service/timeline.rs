//! The home timeline's reads: a page older than a cursor, the page just newer than an
//! id (Mastodon's `min_id`), and a page rendered and kept (`pages.rs`), served again
//! while the store finds its version unchanged.

use bytes::Bytes;

use super::{Social, pages};
use crate::domain::PostId;
use crate::feed::{NewerPage, TimelinePage};
use crate::store::{StoreError, StoreResult};

impl Social {
    pub async fn timeline(
        &self,
        user: &str,
        before: Option<PostId>,
        limit: usize,
    ) -> StoreResult<TimelinePage> {
        self.timelines.page(user, before, limit).await
    }

    /// The page of `user`'s home timeline immediately newer than `after` (Mastodon's
    /// `min_id`): its `limit` oldest items with ids above `after`, newest first, served
    /// exactly as a `before` walk serves them (filters, merge, each post once at the
    /// same occurrence; see `feed::newer`). Never from kept pages. `NotFound` for an
    /// unknown user. (`since_id`, the newest page cut at an id, is the first `before`
    /// page with the items at or below that id left out: a view's truncation.)
    pub async fn timeline_after(
        &self,
        user: &str,
        after: PostId,
        limit: usize,
    ) -> StoreResult<NewerPage> {
        self.timelines.page_after(user, after, limit).await
    }

    /// A page of `user`'s home timeline as `render` writes it. A page the store gives a
    /// version is kept rendered and served again while one light read finds that version
    /// unchanged (see `pages`).
    pub async fn rendered_timeline(
        &self,
        user: &str,
        before: Option<PostId>,
        limit: usize,
        render: impl FnOnce(TimelinePage) -> anyhow::Result<Bytes>,
    ) -> StoreResult<Bytes> {
        if !self.pages.enabled() {
            let page = self.timelines.page(user, before, limit).await?;
            return render(page).map_err(StoreError::Backend);
        }
        let key = pages::PageKey(user, before, limit);
        if let Some(kept) = self.pages.get(&key)
            && kept.unexpired(self.timelines.now_ms())
            && let Some(version) = self.timelines.page_stands(user, &kept.version).await?
        {
            metrics::counter!("socialite_page_memo_hits_total").increment(1);
            // A hit is a read of the cache too: recorded as coarsely as any other.
            let now = self.timelines.now_ms();
            let read_ms = match self.timelines.note_read(user, kept.read_ms, now).await {
                true => now,
                false => kept.read_ms,
            };
            if version != kept.version || read_ms != kept.read_ms {
                let kept_for = (read_ms, kept.expires_ms);
                self.pages.put(key, Some(version), &kept.body, kept_for);
            }
            return Ok(kept.body);
        }
        // The read below records itself on the cache when its stamp was stale.
        let read_ms = self.timelines.now_ms();
        let (page, version, expires_ms) =
            self.timelines.versioned_page(user, before, limit).await?;
        let body = render(page).map_err(StoreError::Backend)?;
        self.pages.put(key, version, &body, (read_ms, expires_ms));
        Ok(body)
    }
}
