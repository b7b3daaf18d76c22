//! Types of the product, free of any transport or storage library.

mod activity;
pub mod clock;
mod events;
mod hashtags;
mod ids;
pub mod markers;
mod notifications;
pub mod relations;
mod reposts;
pub mod scopes;
mod threads;
mod time;
mod validate;
mod words;

pub use activity::{
    Activity, ActivityLayout, ActivityLimits, ActivityPage, ActivityType, Slot, window,
};
pub use events::{Event, EventId, EventType};
pub use hashtags::{MAX_TAGS_PER_POST, hashtags, is_tag};
pub use ids::{MAX_LEAD_MS, PostId, PostIdError, PostIdGenerator, PostIdTimeError};
pub use notifications::{
    Dismissals, GROUP_ACTORS, MAX_MENTIONS_PER_POST, Notification, NotificationFilter,
    NotificationGroup, NotificationType, NotifyPost, NotifySources, group_notifications,
    mention_counts, mentions, notification_id, notifies, post_notifies, rebuilt_notification_id,
};
pub use reposts::{REPOSTS, Repost};
pub use threads::{MAX_ANCESTORS, MAX_DESCENDANTS, ReplyTo, reply_visible};
pub use time::{
    CLOCK_SKEW_MS, MAX_TIME_MS, MIN_TIME_MS, Rfc3339Ms, TimeError, check_time_at, check_time_ms,
    format_date_ms, format_time_ms,
};
pub use validate::{MAX_POST_CHARS, validate_display_name, validate_post_text, validate_user_id};
pub use words::{MAX_NAME_WORDS, name_matches, name_words, word_prefix_end};

use serde::{Deserialize, Serialize};

/// A user profile with counters that the store keeps consistent with the graph and the posts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct User {
    pub id: String,
    pub display_name: String,
    pub followers_count: u64,
    pub following_count: u64,
    pub posts_count: u64,
    pub created_at_ms: i64,
    /// Increases on every profile change; a fencing token for denormalised copies.
    pub version: u64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewUser {
    pub id: String,
    pub display_name: String,
    pub created_at_ms: i64,
}

/// A post. Its creation time is the time encoded in its id.
///
/// As a change-feed document it carries its sources only: `id`, `author`, `text`, and
/// `reply_to` when it answers a post. `replies_count` is derived (the number of existing
/// posts whose `reply_to.post` is this post), read with the post and never serialised.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Post {
    pub id: PostId,
    pub author: String,
    pub text: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reply_to: Option<ReplyTo>,
    #[serde(skip)]
    pub replies_count: u64,
    /// How many standing reposts of this post exist (derived like `replies_count`).
    #[serde(skip)]
    pub reposts_count: u64,
}

impl Post {
    pub fn created_at_ms(&self) -> i64 {
        self.id.timestamp_ms()
    }

    /// The post's timeline entry; with content embedded, it carries the text and the
    /// author's display name as `name` stamps it.
    pub fn entry(&self, embed_content: bool, name: Option<&NameStamp>) -> TimelineEntry {
        TimelineEntry {
            id: self.id,
            author: self.author.clone(),
            text: embed_content.then(|| self.text.clone()),
            name: name.filter(|_| embed_content).cloned(),
            reply_to_author: self.reply_to.as_ref().map(|r| r.author.clone()),
            repost_of: None,
        }
    }
}

/// A copy of a user's display name and the user version it was read at. Copies are
/// only ever replaced by a copy of a higher version, so an older rename applied late
/// never overwrites a newer one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NameStamp {
    pub display_name: String,
    pub version: u64,
}

impl User {
    pub fn name_stamp(&self) -> NameStamp {
        NameStamp {
            display_name: self.display_name.clone(),
            version: self.version,
        }
    }
}

/// A user as an account shows them: the profile, and the id of their newest post or
/// repost that exists (`None` when they have neither). Ids carry their creation time,
/// so the id dates the account's last status.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AccountView {
    pub user: User,
    pub last_status: Option<PostId>,
}

impl AccountView {
    /// The UTC date (`YYYY-MM-DD`) of the account's last status.
    pub fn last_status_date(&self) -> Option<String> {
        self.last_status.map(|id| format_date_ms(id.timestamp_ms()))
    }
}

/// What a timeline page needs to know about one of its authors.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuthorView {
    pub id: String,
    pub display_name: String,
    /// The author's user version, which `display_name` was read at.
    pub version: u64,
    /// Whether the reader currently follows this author.
    pub followed: bool,
}

impl AuthorView {
    pub fn name_stamp(&self) -> NameStamp {
        NameStamp {
            display_name: self.display_name.clone(),
            version: self.version,
        }
    }
}

/// One entry of a materialised timeline: the post id and its author, plus, when content
/// is embedded rather than linked, the text and a copy of the author's display name (kept
/// current by the timelines worker, see `NameStamp`). Entries written before names were
/// embedded carry none; reads look those names up. A reply's entry carries the author
/// of the post it answers, which the home rule (`reply_visible`) needs at every read;
/// entries written before replies existed carry none and are no reply.
///
/// A repost's entry (`repost_of` set) is ordered by the repost's own id, its `author`
/// is the reposter (so unfollows, the follow check and name stamps treat it as the
/// reposter's), its `text` the original's when content is embedded, and it carries no
/// `reply_to_author`: the home rule for replies does not apply to reposts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TimelineEntry {
    pub id: PostId,
    pub author: String,
    pub text: Option<String>,
    pub name: Option<NameStamp>,
    pub reply_to_author: Option<String>,
    /// A repost's: the original post and its author.
    pub repost_of: Option<ReplyTo>,
}

impl TimelineEntry {
    /// This entry as a strategy stores it: with the text and `name` when content is
    /// embedded, linked (id and author only) otherwise.
    pub fn stored(&self, embed_content: bool, name: Option<&NameStamp>) -> TimelineEntry {
        TimelineEntry {
            text: self.text.clone().filter(|_| embed_content),
            name: name.filter(|_| embed_content).cloned(),
            ..self.clone()
        }
    }

    pub fn is_repost(&self) -> bool {
        self.repost_of.is_some()
    }
}

/// A bucket document of a materialised timeline.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bucket {
    /// The day number for timed buckets, the sequence number for sized buckets.
    pub key: i64,
    /// How many entries were ever pushed into the bucket; never more than its size.
    pub pushes: u64,
    /// An upper bound of the entries' ids, which orders buckets on reads.
    pub newest: PostId,
    pub entries: Vec<TimelineEntry>,
}

/// How a materialised timeline is laid out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BucketKind {
    Timed,
    Sized,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TimelineKind {
    Buckets(BucketKind),
    Cache,
}

/// The state of a user's timeline cache.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CacheState {
    /// False while the cache is still being filled from fanout on read.
    pub ready: bool,
    pub started_at_ms: i64,
    /// True while the cache holds its owner's whole timeline: nothing was ever left below
    /// its oldest entry (see `feed::cache` for what a cache covers).
    pub complete: bool,
    /// Newest first.
    pub entries: Vec<TimelineEntry>,
}

/// An opaque position in the change feed. The embedded store uses a decimal sequence
/// number, MongoDB a resume token.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ChangePosition(pub String);

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ChangeOp {
    Insert,
    Update,
    Delete,
}

impl ChangeOp {
    pub fn as_str(self) -> &'static str {
        match self {
            ChangeOp::Insert => "insert",
            ChangeOp::Update => "update",
            ChangeOp::Delete => "delete",
        }
    }

    /// `None` for text that names no operation, which a reader must treat as corrupt
    /// rather than guess.
    pub fn parse(text: &str) -> Option<Self> {
        [ChangeOp::Insert, ChangeOp::Update, ChangeOp::Delete]
            .into_iter()
            .find(|op| op.as_str() == text)
    }
}

/// One entry of the ordered change feed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Change {
    pub position: ChangePosition,
    /// Increases along the feed: the embedded sequence number, MongoDB's cluster time.
    /// Derived data records the last `seq` applied, so a replay is recognised.
    pub seq: u64,
    /// When the change was committed, in milliseconds since the Unix epoch (MongoDB:
    /// the event's wall time, or its cluster time to the second).
    pub at_ms: i64,
    pub collection: String,
    pub op: ChangeOp,
    pub key: String,
    /// The document after the change; `None` for deletions.
    pub document: Option<serde_json::Value>,
}

/// The collection a MongoDB change feed files counter-only user updates under (an `$inc`
/// or a recount): not a rename, but a reason to recount. The embedded store moves
/// counters in the write's transaction and never emits these.
pub const COUNTER_UPDATES: &str = "user_counts";

/// What a worker's effects are conditional on: the lease it acts under.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fence {
    pub lease: String,
    pub holder: String,
    pub version: u64,
}

/// Which way timelines are built.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FeedStrategy {
    FanoutOnRead,
    TimedBuckets,
    SizedBuckets,
    Cache,
    Hybrid,
}

impl FeedStrategy {
    pub const ALL: [FeedStrategy; 5] = [
        FeedStrategy::FanoutOnRead,
        FeedStrategy::TimedBuckets,
        FeedStrategy::SizedBuckets,
        FeedStrategy::Cache,
        FeedStrategy::Hybrid,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            FeedStrategy::FanoutOnRead => "fanout_on_read",
            FeedStrategy::TimedBuckets => "timed_buckets",
            FeedStrategy::SizedBuckets => "sized_buckets",
            FeedStrategy::Cache => "cache",
            FeedStrategy::Hybrid => "hybrid",
        }
    }
}

impl std::fmt::Display for FeedStrategy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for FeedStrategy {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        FeedStrategy::ALL
            .into_iter()
            .find(|strategy| strategy.as_str() == s)
            .ok_or_else(|| {
                format!(
                    "unknown feed strategy {s:?}; expected one of fanout_on_read, timed_buckets, sized_buckets, cache"
                )
            })
    }
}

pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}
