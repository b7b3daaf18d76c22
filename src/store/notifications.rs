//! The notifications port: each user's notifications and their groups, written by the
//! notifications worker (`workers/notifications.rs`) and read by the API.
//!
//! Every write is one effect of one change at feed order `seq`, fenced (embedded: the
//! lease, in the effect's own transaction; MongoDB: the lease checked just before, and
//! each group's `seq` watermark) and idempotent by the notification's key (user, type,
//! actor, post): a replay changes nothing. A group row per (user, type, post) holds the
//! count, the latest few actors and the latest notification's id and time, moved in the
//! same effect, so the grouped page reads one row per group whatever its size.

use async_trait::async_trait;

use super::StoreResult;
use crate::domain::{
    Dismissals, Fence, Notification, NotificationFilter, NotificationGroup, NotificationType,
    NotifySources, PostId,
};

/// Who a new notification goes to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Recipient {
    /// This user, if they exist (a follow's followee, a reply's parent author).
    User(String),
    /// This user, if they exist and were created at or before `post_ms` (a mention).
    Mentioned { user: String, post_ms: i64 },
    /// The author of this post, if it still exists (a like). Read in the effect itself.
    AuthorOf(PostId),
}

/// One effect of one change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NotificationEffect {
    /// Adds the notification unless its key exists; none when the recipient is the actor
    /// or does not exist.
    Add {
        to: Recipient,
        kind: NotificationType,
        actor: String,
        post: Option<PostId>,
        at_ms: i64,
    },
    /// Removes the notification of this key, if any; `user: None` when only the post
    /// names it (an unlike: the liked post's author).
    Remove {
        user: Option<String>,
        kind: NotificationType,
        actor: String,
        post: Option<PostId>,
    },
    /// Removes every notification about this post (it was deleted) and its groups.
    RemovePost(PostId),
}

impl NotificationEffect {
    /// What a test holds this effect by (`faults::gate`): its recipient when it names
    /// one, else its actor; a post's removal is not held.
    pub fn gate_key(&self) -> &str {
        match self {
            NotificationEffect::Add {
                to: Recipient::User(user) | Recipient::Mentioned { user, .. },
                ..
            }
            | NotificationEffect::Remove {
                user: Some(user), ..
            } => user,
            NotificationEffect::Add { actor, .. } | NotificationEffect::Remove { actor, .. } => {
                actor
            }
            NotificationEffect::RemovePost(_) => "",
        }
    }
}

/// What a notifications rebuild holds in memory at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RebuildBounds {
    /// Recipients whose notifications are written together (embedded), or notifications
    /// written together, of whole recipients (MongoDB).
    pub per_write: usize,
    /// MongoDB: causes sorted in memory before a run of them is written to a temporary
    /// file.
    pub causes_in_memory: usize,
}

impl Default for RebuildBounds {
    fn default() -> Self {
        RebuildBounds {
            per_write: 2_000,
            causes_in_memory: 100_000,
        }
    }
}

#[async_trait]
pub trait NotificationStore: Send + Sync + 'static {
    /// Applies the effect of the change at feed order `seq`, fenced by `fence`; a replay
    /// changes nothing. The notification's id is `notification_id(at_ms, seq)`.
    async fn apply_notification(
        &self,
        fence: &Fence,
        seq: u64,
        effect: &NotificationEffect,
    ) -> StoreResult<()>;
    /// Everything notifications derive from, as the store holds it now, in memory at
    /// once: for tests and checkers over small stores; the rebuild does not use it.
    async fn notification_sources(&self) -> StoreResult<NotifySources>;
    /// Replaces every notification and group with those the sources imply, exactly
    /// `derived::notifications::rebuilt` (ids and groups included), fenced by `fence`:
    /// the worker's rebuild after history lost, and the audit's repair. Its memory is
    /// bounded by `bounds`, not by the data set: a range of recipients at a time, each
    /// range's old notifications replaced by its new ones (embedded: one transaction per
    /// range, from causes staged in a temporary table on disk; MongoDB: from an external
    /// sort of the causes by recipient, each range deleted then inserted). Returns how
    /// many notifications it wrote.
    async fn rebuild_notifications(&self, fence: &Fence, bounds: RebuildBounds)
    -> StoreResult<u64>;
    /// `user`'s notifications that `filter` admits, newest first, with ids below
    /// `before`, at most `limit`.
    async fn notifications(
        &self,
        user: &str,
        filter: &NotificationFilter,
        before: Option<PostId>,
        limit: usize,
    ) -> StoreResult<Vec<Notification>>;
    /// `user`'s groups of the types `filter` admits, newest first by their latest
    /// notification, with latest ids below `before`, at most `limit`. Hidden actors are
    /// left out of each group's actors (the count is the stored one); a group whose
    /// stored actors are all hidden is left out.
    async fn notification_groups(
        &self,
        user: &str,
        filter: &NotificationFilter,
        before: Option<PostId>,
        limit: usize,
    ) -> StoreResult<Vec<NotificationGroup>>;
    /// [`NotificationStore::notifications`] read the other way: those with ids above
    /// `after`, oldest first, at most `limit` (the page just newer than `after`, from
    /// the same indexes walked upwards).
    async fn notifications_after(
        &self,
        user: &str,
        filter: &NotificationFilter,
        after: PostId,
        limit: usize,
    ) -> StoreResult<Vec<Notification>>;
    /// [`NotificationStore::notification_groups`] read the other way: the groups with
    /// latest ids above `after`, oldest first by their latest notification, at most
    /// `limit`, hidden actors left out as there.
    async fn notification_groups_after(
        &self,
        user: &str,
        filter: &NotificationFilter,
        after: PostId,
        limit: usize,
    ) -> StoreResult<Vec<NotificationGroup>>;
    /// `user`'s stored notification `id`, if any: one index lookup (embedded:
    /// `notifications_by_id`; MongoDB: `{user: 1, id: -1}`).
    async fn notification(&self, user: &str, id: PostId) -> StoreResult<Option<Notification>>;
    /// What `user` dismissed and cleared: a source (see `Dismissals`), which the worker
    /// (in the effect: embedded, in its transaction; MongoDB, read before the insert and
    /// again after it, undoing the insert when a dismissal landed in between), every
    /// rebuild and the audit respect.
    async fn dismissals(&self, user: &str) -> StoreResult<Dismissals>;
    /// Records that `user` dismissed the notification of (`kind`, `actor`, `post`) up to
    /// `upto_ms`, and removes it (with its group moved) if stored: embedded, in one
    /// transaction; MongoDB, the source first, then the notification made a tombstone
    /// and its group moved by one only if this call's write did so (each notification
    /// leaves its group once, whether the worker or a dismissal takes it). Idempotent; a
    /// later dismissal of the same cause moves `upto_ms` up.
    async fn dismiss_notification(
        &self,
        user: &str,
        kind: NotificationType,
        actor: &str,
        post: Option<PostId>,
        upto_ms: i64,
    ) -> StoreResult<()>;
    /// Records that `user` cleared every notification up to `upto_ms`, and removes them
    /// with their groups, as [`NotificationStore::dismiss_notification`] does. Dismissals
    /// the clear covers are dropped from the source.
    async fn clear_notifications(&self, user: &str, upto_ms: i64) -> StoreResult<()>;
    /// Finishes `user`'s dismissals and clears that were killed (or stalled) part way
    /// and whose claims are older than `stale_before_ms`, so that every group's count is
    /// its standing notifications again; each is applied once, even when its writer
    /// resumes after. MongoDB only (`mongo::notifications::takings`; each dismissal or
    /// clear also runs it first, with a cutoff requests finish well within); the
    /// embedded store takes in one transaction and leaves nothing. Idempotent. Returns
    /// how many claims it settled.
    async fn settle_notification_takings(
        &self,
        _user: &str,
        _stale_before_ms: i64,
    ) -> StoreResult<u64> {
        Ok(0)
    }
    /// [`NotificationStore::settle_notification_takings`] for every user: the claims
    /// older than `stale_before_ms`, wherever they are, settled the same way and as
    /// safely beside any other settler or the writer itself; and an empty claim field
    /// left on a group removed. One batch: at most `limit` groups read, the oldest
    /// claims first; a group it settles is not read again, so the caller calls again
    /// while [`SweptTakings::more`] and the backlog drains whole. The notifications
    /// worker's upkeep runs it (the sweep), so a dismissal killed part way is finished
    /// without anyone dismissing again. MongoDB only; nothing to do on the embedded
    /// store.
    async fn sweep_notification_takings(
        &self,
        _stale_before_ms: i64,
        _limit: usize,
    ) -> StoreResult<SweptTakings> {
        Ok(SweptTakings::default())
    }
}

/// One batch of the takings sweep ([`NotificationStore::sweep_notification_takings`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SweptTakings {
    /// How many claims it settled.
    pub settled: u64,
    /// The batch was full: more groups with old claims may be waiting.
    pub more: bool,
}
