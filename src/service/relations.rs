//! Blocks and mutes: the rules (no self-block or self-mute, known users), the store
//! call, and what the reader expects at once: the timeline upkeep of every follow a
//! block removed (as `Social::unfollow` does it), and the live streams of this process
//! told (see `events::stream`). Kept pages need nothing here: the store call moved the
//! affected readers' cache versions in the same write.

use crate::domain::relations::{MAX_MUTE_MS, MuteSettings, Relation};
use crate::domain::{Post, PostId};
use crate::store::relations::RelationCursor;
use crate::store::{StoreError, StoreResult};

use super::{Page, Social};

/// What a mute request asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MuteRequest {
    pub notifications: bool,
    /// For how long; `None`: for ever.
    pub duration_ms: Option<i64>,
}

fn not_self(user: &str, other: &str, what: &str) -> StoreResult<()> {
    if user == other {
        return Err(StoreError::Invalid(format!(
            "a user cannot {what} themselves"
        )));
    }
    Ok(())
}

impl Social {
    /// Blocks `other` for `user`, removing the follows between them both ways with
    /// their timeline upkeep. Idempotent; returns whether the block is new.
    pub async fn block(&self, user: &str, other: &str) -> StoreResult<bool> {
        not_self(user, other, "block")?;
        let now = self.timelines.now_ms();
        let blocked = self.store.relations.block(user, other, now).await?;
        self.relations_changed(&[user, other]);
        if !blocked.removed.is_empty() {
            self.wakers.wake_all();
        }
        for (follower, followee) in &blocked.removed {
            crate::faults::point("unfollow.edge").await;
            self.timelines.sync_edge(follower, followee).await?;
        }
        Ok(blocked.added)
    }

    /// Idempotent; restores no follow. `NotFound` when either user is unknown.
    pub async fn unblock(&self, user: &str, other: &str) -> StoreResult<()> {
        self.both_known(user, other).await?;
        if self.store.relations.unblock(user, other).await? {
            self.relations_changed(&[user, other]);
        }
        Ok(())
    }

    /// Mutes `other` for `user`, replacing the settings of a mute that stands; a
    /// duration counts from now by the server's clock. Returns whether it is new.
    pub async fn mute(&self, user: &str, other: &str, request: MuteRequest) -> StoreResult<bool> {
        not_self(user, other, "mute")?;
        if let Some(ms) = request.duration_ms
            && !(1..=MAX_MUTE_MS).contains(&ms)
        {
            return Err(StoreError::Invalid(format!(
                "a mute lasts from 1 ms to {} days",
                MAX_MUTE_MS / 86_400_000
            )));
        }
        let now = self.timelines.now_ms();
        let settings = MuteSettings {
            notifications: request.notifications,
            until_ms: request.duration_ms.map(|ms| now + ms),
        };
        let added = self
            .store
            .relations
            .mute(user, other, settings, now)
            .await?;
        self.relations_changed(&[user]);
        Ok(added)
    }

    /// Idempotent. `NotFound` when either user is unknown.
    pub async fn unmute(&self, user: &str, other: &str) -> StoreResult<()> {
        self.both_known(user, other).await?;
        if self.store.relations.unmute(user, other).await? {
            self.relations_changed(&[user]);
        }
        Ok(())
    }

    /// One page of `user`'s blocks (`mutes`: of their standing mutes), newest first.
    pub async fn relation_list(
        &self,
        user: &str,
        mutes: bool,
        after: Option<RelationCursor>,
        limit: usize,
    ) -> StoreResult<Page<Relation, RelationCursor>> {
        self.user(user).await?;
        let relations = &self.store.relations;
        let items = match mutes {
            true => {
                let now = self.timelines.now_ms();
                relations.mute_list(user, after, now, limit + 1).await?
            }
            false => relations.block_list(user, after, limit + 1).await?,
        };
        Ok(Page::from_extra(items, limit, |r| {
            (r.created_ms, r.other.clone())
        }))
    }

    /// [`Social::get_post`] as `caller` sees it: a post whose author blocks the caller
    /// does not exist for them (`NotFound`, as for an unknown post).
    pub async fn get_post_as(&self, id: PostId, caller: Option<&str>) -> StoreResult<Post> {
        let post = self.get_post(id).await?;
        match caller {
            Some(caller) if self.store.relations.blocks(&post.author, caller).await? => {
                Err(StoreError::NotFound(format!("post {id}")))
            }
            _ => Ok(post),
        }
    }

    async fn both_known(&self, user: &str, other: &str) -> StoreResult<()> {
        for id in [user, other] {
            self.user(id).await?;
        }
        Ok(())
    }

    /// Tells this process's live streams of `users` that what they hide changed.
    fn relations_changed(&self, users: &[&str]) {
        if let Some(hub) = &self.streams {
            hub.relations_changed(users);
        }
    }
}
