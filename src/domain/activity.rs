//! Activity log types and slot math. The log is kept with the outlier pattern: the first
//! `primary_limit` entries live in the user's primary activity document, later ones in overflow
//! pages of `page_size` entries.
//!
//! Every entry gets its sequence number atomically, and the number alone decides where
//! the entry goes. Two writers can therefore never pick the same slot, the primary
//! document never passes its limit, and no page ever passes its size: the two races of
//! the published pattern (check-then-act on the count, and choosing the page from a
//! separate read) cannot happen.

use std::ops::RangeInclusive;

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ActivityType {
    Post,
    Like,
    Follow,
}

impl ActivityType {
    pub fn as_str(self) -> &'static str {
        match self {
            ActivityType::Post => "post",
            ActivityType::Like => "like",
            ActivityType::Follow => "follow",
        }
    }

    pub fn parse(text: &str) -> Option<Self> {
        [ActivityType::Post, ActivityType::Like, ActivityType::Follow]
            .into_iter()
            .find(|t| t.as_str() == text)
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Activity {
    pub seq: u64,
    pub kind: ActivityType,
    pub ts_ms: i64,
    /// The post id for posts and likes, the followee for follows.
    pub reference: String,
}

/// The layout of one user's log, fixed when the log is created so that later
/// configuration changes never move existing entries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ActivityLimits {
    pub primary_limit: u32,
    pub page_size: u32,
}

impl Default for ActivityLimits {
    fn default() -> Self {
        ActivityLimits {
            primary_limit: 1000,
            page_size: 1000,
        }
    }
}

/// Where an entry lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Slot {
    Primary,
    Page(u64),
}

impl ActivityLimits {
    pub fn slot(&self, seq: u64) -> Slot {
        let limit = u64::from(self.primary_limit);
        if seq < limit {
            Slot::Primary
        } else {
            Slot::Page((seq - limit) / u64::from(self.page_size))
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ActivityPage {
    /// Newest first.
    pub items: Vec<Activity>,
    pub total: u64,
}

/// How many entries each document holds, for checks and diagnostics.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ActivityLayout {
    pub primary: u64,
    /// `(page, entries)` in page order.
    pub pages: Vec<(u64, u64)>,
}

/// The sequence numbers of the entries `skip..skip+limit` counted from the newest, or
/// `None` when the window lies past the oldest entry.
pub fn window(total: u64, skip: u64, limit: u64) -> Option<RangeInclusive<u64>> {
    if skip >= total || limit == 0 {
        return None;
    }
    let newest = total - 1 - skip;
    let oldest = newest.saturating_sub(limit - 1);
    Some(oldest..=newest)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sequence_number_decides_the_slot() {
        let limits = ActivityLimits {
            primary_limit: 1000,
            page_size: 250,
        };
        assert_eq!(limits.slot(0), Slot::Primary);
        assert_eq!(limits.slot(999), Slot::Primary);
        assert_eq!(limits.slot(1000), Slot::Page(0));
        assert_eq!(limits.slot(1249), Slot::Page(0));
        assert_eq!(limits.slot(1250), Slot::Page(1));
        assert_eq!(limits.slot(3489), Slot::Page(9));
    }

    #[test]
    fn windows_count_from_the_newest() {
        assert_eq!(window(10, 0, 3), Some(7..=9));
        assert_eq!(window(10, 8, 5), Some(0..=1));
        assert_eq!(window(10, 10, 5), None);
        assert_eq!(window(0, 0, 5), None);
    }
}
