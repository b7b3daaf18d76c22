//! Domain events: the immutable, bounded log derived from the change feed.

use serde::{Deserialize, Serialize};

/// An event's id: the `seq` of the change it was derived from, so ids increase along
/// the feed, and a replayed change maps to the same id.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct EventId(pub u64);

impl std::fmt::Display for EventId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.0)
    }
}

impl std::str::FromStr for EventId {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        s.parse::<u64>()
            .map(EventId)
            .map_err(|_| format!("event id must be a non-negative integer, got {s:?}"))
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EventType {
    PostCreated,
    PostDeleted,
    UserFollowed,
    UserUnfollowed,
    PostLiked,
    UserRenamed,
    PostReposted,
    PostUnreposted,
}

impl EventType {
    pub const ALL: [EventType; 8] = [
        EventType::PostCreated,
        EventType::PostDeleted,
        EventType::UserFollowed,
        EventType::UserUnfollowed,
        EventType::PostLiked,
        EventType::UserRenamed,
        EventType::PostReposted,
        EventType::PostUnreposted,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            EventType::PostCreated => "post.created",
            EventType::PostDeleted => "post.deleted",
            EventType::UserFollowed => "user.followed",
            EventType::UserUnfollowed => "user.unfollowed",
            EventType::PostLiked => "post.liked",
            EventType::UserRenamed => "user.renamed",
            EventType::PostReposted => "post.reposted",
            EventType::PostUnreposted => "post.unreposted",
        }
    }

    pub fn parse(text: &str) -> Option<Self> {
        EventType::ALL.into_iter().find(|t| t.as_str() == text)
    }
}

impl Serialize for EventType {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for EventType {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        EventType::parse(&text)
            .ok_or_else(|| serde::de::Error::custom(format!("unknown event type {text:?}")))
    }
}

/// One entry of the event log.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Event {
    pub id: EventId,
    #[serde(rename = "type")]
    pub kind: EventType,
    /// When the change behind it was committed, in milliseconds since the Unix epoch.
    pub at_ms: i64,
    /// A small JSON object; its fields depend on the type (see docs/api-events.md).
    pub payload: serde_json::Value,
}

impl Event {
    /// A string field of the payload.
    pub fn field(&self, name: &str) -> Option<&str> {
        self.payload.get(name).and_then(|v| v.as_str())
    }

    /// `post.created` of a reply: the author of the post it answers (`in_reply_to`).
    pub fn reply_to_author(&self) -> Option<&str> {
        self.payload.get("in_reply_to")?.get("author")?.as_str()
    }

    /// `post.created` of a reply: the post it answers and that post's author.
    pub fn reply_to(&self) -> Option<super::threads::ReplyTo> {
        let parent = self.payload.get("in_reply_to")?;
        Some(super::threads::ReplyTo {
            post: parent.get("post")?.as_str()?.parse().ok()?,
            author: parent.get("author")?.as_str()?.to_owned(),
        })
    }

    /// The `tags` of a post event; `None` when unknown (a deletion whose creation had
    /// left the log).
    pub fn tags(&self) -> Option<Vec<String>> {
        let tags = self.payload.get("tags")?.as_array()?;
        Some(
            tags.iter()
                .filter_map(|t| t.as_str().map(str::to_owned))
                .collect(),
        )
    }
}
