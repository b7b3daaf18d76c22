//! Kept pages of the Mastodon home timeline: the first `max_id` pages rendered as
//! statuses, kept like `/v1`'s (`pages.rs`) and served again after the same one light
//! read finds the cache's version standing, with no removal and no rename of a shown
//! author pending (and, for a page with reposts, the below clock standing: any unrepost,
//! delete or rename moves it). So a block, mute, delete, unfollow, new entry or rename
//! of a shown author, or a change of which repost of a post is its first, shows on the
//! next read, as on `/v1`.
//!
//! A Status shows more than the cache's rows: counts (`favourites_count`,
//! `replies_count`, `reblogs_count`, an Account's followers, following and statuses)
//! and the viewer's own `favourited`. Those are read when the page is rendered, and a
//! kept page is served for at most `mastodon.kept_page_max_age` after that (by the
//! feed's clock); other users' likes, replies, reposts and follows show within it. The
//! viewer's own like or unlike moves the viewer's epoch in this process (`ActEpochs`,
//! part of the key), so it shows on their next read here, and in other processes
//! within the max age. The viewer's own repost and unrepost write their cache, which
//! moves its version.

use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};

use bytes::Bytes;

use super::mastodon::StatusPage;
use super::{Social, pages};
use crate::domain::PostId;
use crate::store::{StoreError, StoreResult};

/// Slots of [`ActEpochs`]: users share a slot by hash, which costs a shared user a
/// rendering now and then, never a stale page.
const SLOTS: usize = 4096;

/// For each user (by hash), how many likes and unlikes this process has written:
/// a kept page is keyed by its viewer's count when it was read, so a like or unlike
/// written here is never served a page rendered before it.
pub(super) struct ActEpochs {
    slots: Box<[AtomicU64]>,
}

impl Default for ActEpochs {
    fn default() -> Self {
        ActEpochs {
            slots: (0..SLOTS).map(|_| AtomicU64::new(0)).collect(),
        }
    }
}

impl ActEpochs {
    fn slot(&self, user: &str) -> &AtomicU64 {
        let mut hasher = DefaultHasher::new();
        user.hash(&mut hasher);
        &self.slots[(hasher.finish() as usize) % SLOTS]
    }

    /// `user`'s epoch: read before anything the page shows is read.
    pub fn of(&self, user: &str) -> u64 {
        self.slot(user).load(Ordering::Acquire)
    }

    /// Moves `user`'s epoch on: called after their like or unlike is written and
    /// before it is answered.
    pub fn bump(&self, user: &str) {
        self.slot(user).fetch_add(1, Ordering::AcqRel);
    }
}

/// How the Mastodon view's kept pages are kept: at most `mib` of them, each served for
/// at most `max_age_ms` after it was rendered (0 for either keeps none).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MastoPageSettings {
    pub mib: u32,
    pub max_age_ms: i64,
}

pub(super) struct MastoPages {
    pub memo: pages::PageMemo,
    pub max_age_ms: i64,
}

impl MastoPages {
    pub fn new(settings: MastoPageSettings) -> Self {
        let mib = if settings.max_age_ms > 0 {
            settings.mib
        } else {
            0
        };
        MastoPages {
            memo: pages::PageMemo::new(mib),
            max_age_ms: settings.max_age_ms,
        }
    }
}

impl Social {
    /// Keeps the Mastodon home timeline's pages as `settings` say.
    pub fn with_mastodon_pages(mut self, settings: MastoPageSettings) -> Self {
        self.masto_pages = MastoPages::new(settings);
        self
    }

    /// The home page of `user` below `before` (the newest without), as `render` writes
    /// it in the `form` it stands for (part of the key: whatever else the bytes depend
    /// on, such as the address the page's links name and the body's encoding). A page
    /// the store gives a version is kept and served again, as the module says.
    pub async fn rendered_home_statuses(
        &self,
        user: &str,
        before: Option<PostId>,
        limit: usize,
        form: &str,
        render: impl FnOnce(StatusPage) -> anyhow::Result<Bytes>,
    ) -> StoreResult<Bytes> {
        let memo = &self.masto_pages.memo;
        if !memo.enabled() {
            let range = super::mastodon::HomeRange::Older {
                before,
                since: None,
            };
            let page = self.home_statuses(user, range, limit).await?;
            return render(page).map_err(StoreError::Backend);
        }
        // The epoch before any read: a like landing after it moves it, so the page
        // read below is never kept under a key a later read finds.
        let epoch = self.activity.epochs().of(user);
        let owner = format!("{user}\n{epoch}\n{form}");
        let key = pages::PageKey(&owner, before, limit);
        if let Some(kept) = memo.get(&key)
            && kept.unexpired(self.timelines.now_ms())
            && let Some(version) = self.timelines.page_stands(user, &kept.version).await?
        {
            metrics::counter!("socialite_masto_page_hits_total").increment(1);
            let now = self.timelines.now_ms();
            let read_ms = match self.timelines.note_read(user, kept.read_ms, now).await {
                true => now,
                false => kept.read_ms,
            };
            if version != kept.version || read_ms != kept.read_ms {
                memo.put(key, Some(version), &kept.body, (read_ms, kept.expires_ms));
            }
            return Ok(kept.body);
        }
        let read_ms = self.timelines.now_ms();
        let (page, version, hidden_expiry) =
            self.timelines.versioned_page(user, before, limit).await?;
        let items = self.item_statuses(user, page.items).await?;
        let body = render(StatusPage {
            items,
            next: page.next_cursor,
        })
        .map_err(StoreError::Backend)?;
        let aged = read_ms.saturating_add(self.masto_pages.max_age_ms);
        let expires_ms = Some(hidden_expiry.map_or(aged, |e| e.min(aged)));
        memo.put(key, version, &body, (read_ms, expires_ms));
        Ok(body)
    }
}
