//! Reading positions (Mastodon's markers): per user and timeline, the last item the
//! user read, as the opaque id their client sent, with a version that every write moves
//! by one. A user's own writes, so a source, carried by backups.

use std::fmt;

/// The most characters a marker's `last_read_id` may hold.
pub const MAX_LAST_READ_ID: usize = 64;

/// The timelines that have a marker.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum MarkerTimeline {
    Home,
    Notifications,
}

impl MarkerTimeline {
    pub const ALL: [MarkerTimeline; 2] = [MarkerTimeline::Home, MarkerTimeline::Notifications];

    /// The name clients and stores use.
    pub fn as_str(self) -> &'static str {
        match self {
            MarkerTimeline::Home => "home",
            MarkerTimeline::Notifications => "notifications",
        }
    }

    /// The timeline of a name; `None` for any other name (which Mastodon ignores).
    pub fn parse(name: &str) -> Option<MarkerTimeline> {
        MarkerTimeline::ALL.into_iter().find(|t| t.as_str() == name)
    }
}

impl fmt::Display for MarkerTimeline {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A stored marker.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Marker {
    pub timeline: MarkerTimeline,
    /// As the client sent it: never parsed as a post or notification id.
    pub last_read_id: String,
    /// 1 at the first write, one more at each.
    pub version: u64,
    pub updated_at_ms: i64,
}

/// Checks a `last_read_id`: 1 to [`MAX_LAST_READ_ID`] printable ASCII characters, no
/// space. Says why when it is not.
pub fn validate_last_read_id(id: &str) -> Result<(), String> {
    if id.is_empty() {
        return Err("last_read_id is empty".into());
    }
    if id.len() > MAX_LAST_READ_ID {
        return Err(format!(
            "last_read_id holds {} characters, at most {MAX_LAST_READ_ID} are kept",
            id.len()
        ));
    }
    if !id.bytes().all(|b| b.is_ascii_graphic()) {
        return Err("last_read_id must be printable ASCII without spaces".into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timelines_round_trip_and_others_are_none() {
        for timeline in MarkerTimeline::ALL {
            assert_eq!(MarkerTimeline::parse(timeline.as_str()), Some(timeline));
        }
        assert_eq!(MarkerTimeline::parse("public"), None);
        assert_eq!(MarkerTimeline::parse("Home"), None);
    }

    #[test]
    fn last_read_ids_are_bounded_printable_ascii() {
        assert!(validate_last_read_id("109876543210").is_ok());
        assert!(validate_last_read_id("0190a3f1c2d4e5f6a7b8c9d0").is_ok());
        assert!(validate_last_read_id(&"9".repeat(64)).is_ok());
        assert!(validate_last_read_id(&"9".repeat(65)).is_err());
        assert!(validate_last_read_id("").is_err());
        assert!(validate_last_read_id("12 34").is_err());
        assert!(validate_last_read_id("12\n").is_err());
        assert!(validate_last_read_id("é").is_err());
    }
}
