//! The bulk port: source rows written in large batches, without the change-feed entry,
//! event and activity each API write makes, and every derived datum then built from
//! the sources at once (`socialite seed`, `socialite import`).
//!
//! A load is bracketed by [`BulkStore::begin_load`] and [`BulkStore::finish_load`]. In
//! between, the store is marked as being loaded, since the sources and the derived data
//! disagree until [`BulkStore::derive_all`] and [`BulkStore::set_positions_to_head`]
//! have run.
//!
//! **Serving and loading exclude each other**, each in one atomic step of the store:
//! [`BulkStore::enter_serving`] registers a server and is refused while a load runs or
//! its mark is set; [`BulkStore::begin_load`] sets the mark and is refused while a server
//! is registered. (Embedded: a lock file a server holds shared and a load exclusively,
//! taken before the mark is checked or set, dropped by the kernel when the process
//! dies. MongoDB: one document whose conditional upsert registers a server with an
//! expiry the adapter renews, and whose conditional update sets the mark only while no
//! registration is unexpired.) Every step is idempotent: inserts skip
//! rows whose key exists, derived data is recomputed from all the sources, so a load
//! interrupted anywhere ends in the same state when it is run again.
//!
//! Rows travel in [`Rows`]: their strings in one buffer per batch, so building a batch
//! allocates per batch and not per row.

use std::sync::Arc;

use async_trait::async_trait;

use super::{LogBounds, StoreResult, TokenHash};
use crate::domain::relations::MuteSettings;
use crate::domain::{
    ActivityLimits, Dismissals, FeedStrategy, Notification, NotificationType, PostId,
    rebuilt_notification_id,
};

/// A string inside a [`Rows`] buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Span {
    start: u32,
    end: u32,
}

/// A batch of rows whose strings live in one buffer.
#[derive(Debug, Clone)]
pub struct Rows<R> {
    strings: String,
    rows: Vec<R>,
}

impl<R> Default for Rows<R> {
    fn default() -> Self {
        Rows {
            strings: String::new(),
            rows: Vec::new(),
        }
    }
}

impl<R> Rows<R> {
    /// Room for `rows` rows of about `bytes_per_row` bytes of strings each.
    pub fn with_capacity(rows: usize, bytes_per_row: usize) -> Self {
        Rows {
            strings: String::with_capacity(rows * bytes_per_row),
            rows: Vec::with_capacity(rows),
        }
    }

    /// Copies `text` into the buffer. Batches stay far below 4 GiB of text.
    pub fn intern(&mut self, text: &str) -> Span {
        let start = self.strings.len() as u32;
        self.strings.push_str(text);
        Span {
            start,
            end: self.strings.len() as u32,
        }
    }

    /// Appends the characters `write` produces as one string.
    pub fn intern_with(&mut self, write: impl FnOnce(&mut String)) -> Span {
        let start = self.strings.len() as u32;
        write(&mut self.strings);
        Span {
            start,
            end: self.strings.len() as u32,
        }
    }

    pub fn push(&mut self, row: R) {
        self.rows.push(row);
    }

    pub fn str(&self, span: Span) -> &str {
        &self.strings[span.start as usize..span.end as usize]
    }

    pub fn rows(&self) -> &[R] {
        &self.rows
    }

    pub fn len(&self) -> usize {
        self.rows.len()
    }

    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    pub fn clear(&mut self) {
        self.strings.clear();
        self.rows.clear();
    }
}

#[derive(Debug, Clone, Copy)]
pub struct UserRow {
    pub id: Span,
    pub display_name: Span,
    pub created_at_ms: i64,
}

#[derive(Debug, Clone, Copy)]
pub struct FollowRow {
    pub follower: Span,
    pub followee: Span,
    pub created_at_ms: i64,
}

/// A post; its creation time is its id's. A reply names its parent only: the parent's
/// author (`reply_to_author`) and the parent's `replies_count` are derived by the load.
#[derive(Debug, Clone, Copy)]
pub struct PostRow {
    pub id: PostId,
    pub author: Span,
    pub text: Span,
    pub reply_to: Option<PostId>,
}

#[derive(Debug, Clone, Copy)]
pub struct LikeRow {
    pub user: Span,
    pub post: PostId,
    pub created_at_ms: i64,
}

/// A block of `other` by `user`, or, with `mute`, a mute.
#[derive(Debug, Clone, Copy)]
pub struct RelationRow {
    pub user: Span,
    pub other: Span,
    pub created_at_ms: i64,
    /// `None`: a block.
    pub mute: Option<MuteSettings>,
}

/// A repost of `post` by `user`. Its id is minted like a post id at the repost's time
/// (`id.timestamp_ms()`); the original's author is read from the stored post when the
/// row is written, and the posts' `reposts_count` is derived by the load.
#[derive(Debug, Clone, Copy)]
pub struct RepostRow {
    pub id: PostId,
    pub user: Span,
    pub post: PostId,
}

/// An API token, by the SHA-256 of its value (see the tokens port).
#[derive(Debug, Clone, Copy)]
pub struct TokenRow {
    pub hash: TokenHash,
    pub user: Span,
    pub token_id: Span,
    pub created_at_ms: i64,
}

/// How a load lays out the derived timelines: the feed settings it needs, as values
/// (the port takes no type of the feed layer's).
#[derive(Debug, Clone)]
pub struct TimelineLayout {
    pub strategy: FeedStrategy,
    pub bucket_size: u32,
    pub bucket_span_ms: i64,
    /// A timed bucket's period is split into parts of at most this many entries.
    pub timed_bucket_max_entries: u32,
    pub embed_content: bool,
    /// `hybrid`: authors with more followers than this are celebrities...
    pub hybrid_threshold: u64,
    /// ...and those already marked stay celebrities down to this many followers.
    pub hybrid_leave_below: u64,
}

/// What the derived data is built for.
#[derive(Debug, Clone)]
pub struct DeriveSettings {
    pub feed: TimelineLayout,
    pub activity: ActivityLimits,
    pub events: LogBounds,
    /// The clock: which hours of tag counts are kept.
    pub now_ms: i64,
}

/// The derived data a load built.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Derived {
    pub users_counted: u64,
    pub activity_entries: u64,
    pub timeline_entries: u64,
    pub delivered: u64,
    pub tags: u64,
    pub events: u64,
    /// Follows removed because a block stands between the two (either way): no follow
    /// stands beside a block, as the API's block removes them.
    pub follows_blocked: u64,
    pub notifications: u64,
}

/// Why serving or loading was refused: the other holds the store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Exclusion {
    /// A load runs, or an interrupted one left its mark (since `since_ms`, when known).
    Loading { since_ms: Option<i64> },
    /// A server is registered (`holder` until `expires_at_ms`, when known).
    Serving {
        holder: Option<String>,
        expires_at_ms: Option<i64>,
    },
}

impl std::fmt::Display for Exclusion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Exclusion::Loading { since_ms } => {
                write!(f, "a bulk load (socialite seed or import) ")?;
                match since_ms {
                    Some(at) => write!(
                        f,
                        "that began at {} is running or was interrupted on this store, so its \
                         derived data may be incomplete: let it end, or run it again to finish it",
                        crate::domain::format_time_ms(*at)
                    ),
                    None => write!(f, "is running on this store: let it end"),
                }
            }
            Exclusion::Serving {
                holder,
                expires_at_ms,
            } => {
                match (holder, expires_at_ms) {
                    (Some(holder), Some(until)) => write!(
                        f,
                        "a server is running on this store ({holder}, registered until {} \
                         unless renewed)",
                        crate::domain::format_time_ms(*until)
                    )?,
                    _ => write!(
                        f,
                        "a server, or another bulk load, is running on this store"
                    )?,
                }
                write!(
                    f,
                    ": a bulk load needs the service stopped; stop every server on it and run \
                     the load again"
                )
            }
        }
    }
}

/// Called with the name of each derivation step as it starts.
pub type StepReport = Arc<dyn Fn(&'static str) + Send + Sync>;

#[async_trait]
pub trait BulkStore: Send + Sync + 'static {
    /// Registers this store handle as serving requests, `holder` naming the process;
    /// refused while a load runs or is marked. Counted: each registration is ended by
    /// one [`BulkStore::leave_serving`], and the handle stays registered until the last.
    /// (The registration also ends with the process; on MongoDB by expiring.)
    async fn enter_serving(&self, holder: &str) -> StoreResult<Result<(), Exclusion>>;
    async fn leave_serving(&self) -> StoreResult<()>;
    /// Marks the store as being loaded, since `at_ms`, and tunes it for bulk writes;
    /// refused while a server is registered (the embedded store: or another load runs).
    /// A load already marked (an interrupted one) keeps its mark.
    async fn begin_load(&self, at_ms: i64) -> StoreResult<Result<(), Exclusion>>;
    /// When the load in progress began, if one is.
    async fn load_in_progress(&self) -> StoreResult<Option<i64>>;
    /// Each insert writes its batch at once (embedded: one transaction, one prepared
    /// statement; MongoDB: one unordered `insert_many`) and skips rows whose key exists,
    /// so a re-run adds nothing. No change-feed entry is written. Returns the rows added.
    async fn insert_users(&self, rows: Rows<UserRow>) -> StoreResult<u64>;
    async fn insert_follows(&self, rows: Rows<FollowRow>) -> StoreResult<u64>;
    async fn insert_posts(&self, rows: Rows<PostRow>) -> StoreResult<u64>;
    async fn insert_likes(&self, rows: Rows<LikeRow>) -> StoreResult<u64>;
    async fn insert_tokens(&self, rows: Rows<TokenRow>) -> StoreResult<u64>;
    /// Blocks and mutes; a row whose (user, other) is stored as the same kind is skipped.
    async fn insert_relations(&self, rows: Rows<RelationRow>) -> StoreResult<u64>;
    /// Reposts, each with its original's author read from the stored post (so the posts
    /// go first); a row whose id or (user, post) is stored, or whose post is not, is
    /// skipped.
    async fn insert_reposts(&self, rows: Rows<RepostRow>) -> StoreResult<u64>;
    /// Builds every derived datum from all the sources the store holds, replacing what
    /// was there: first the sources' own consequences (the follows beside a block
    /// removed, each reply's parent author filled in, every `replies_count` and
    /// `reposts_count` recounted),
    /// then counters, activity logs, the configured strategy's timelines (caches
    /// are dropped, to be rebuilt on first read; buckets are materialised), delivery
    /// markers, tag counts, a bounded event log, and every notification with its groups
    /// as the notifications worker's rebuild writes them ([`rebuilt_for_user`]).
    async fn derive_all(&self, settings: &DeriveSettings, step: StepReport)
    -> StoreResult<Derived>;
    /// The timeline steps of [`BulkStore::derive_all`] alone, for a store whose
    /// `feed.strategy` (or a setting that shapes its timelines) changed while it was
    /// stopped: every cache dropped (to be built on first read), the buckets of every
    /// kind dropped and those of `feed`'s kind materialised from the sources, `hybrid`'s
    /// celebrities classified, and the delivery markers set for every post (none added
    /// under `fanout_on_read`; orphans removed). Runs on a store no other process
    /// writes; a re-run after an interruption ends in the same state. Fills
    /// `timeline_entries` and `delivered`.
    async fn derive_timelines(
        &self,
        feed: &TimelineLayout,
        step: StepReport,
    ) -> StoreResult<Derived>;
    /// The record of what the store's timelines were last built for (see
    /// `feed::switch`), as [`BulkStore::record_feed`] last wrote it.
    async fn feed_record(&self) -> StoreResult<Option<String>>;
    /// Replaces that record, in one atomic write.
    async fn record_feed(&self, record: &str) -> StoreResult<()>;
    /// Sets the committed position of every worker in `change_workers` to the change
    /// feed's head, and of those in `event_workers` to the event log's head, releasing
    /// their leases with a new fencing version: the workers start with nothing to replay.
    async fn set_positions_to_head(
        &self,
        change_workers: &[&str],
        event_workers: &[&str],
    ) -> StoreResult<()>;
    /// Restores the store's normal settings and clears the load's mark.
    async fn finish_load(&self) -> StoreResult<()>;
}

/// A standing cause of a notification of one user: what `derived::notifications`
/// keys it by, and the time of its cause.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Cause {
    pub at_ms: i64,
    pub kind: NotificationType,
    pub actor: String,
    pub post: Option<PostId>,
}

/// `user`'s notifications from their causes, with rebuilt ids: ranked by (time, key),
/// as `derived::notifications::rebuilt` ranks them, so a bulk load writes exactly what
/// the notifications worker's rebuild would.
/// The causes `dismissals` (the user's) hides are left out before ranking, as the
/// definition leaves them out.
pub fn rebuilt_for_user(
    user: &str,
    mut causes: Vec<Cause>,
    dismissals: &Dismissals,
) -> Vec<Notification> {
    causes.retain(|c| !dismissals.hides(c.kind, &c.actor, c.post, c.at_ms));
    causes.sort();
    causes.dedup();
    causes
        .into_iter()
        .enumerate()
        .map(|(rank, cause)| Notification {
            id: rebuilt_notification_id(cause.at_ms, rank as u64),
            user: user.to_owned(),
            kind: cause.kind,
            actor: cause.actor,
            post: cause.post,
            at_ms: cause.at_ms,
        })
        .collect()
}
