//! What the Mastodon view's discovery endpoints read: the trending hashtags with their
//! last week of counts, and search of accounts by id prefix (one range of the id index;
//! display names are not indexed, so not searched) and of a hashtag by its name.

use futures::future::try_join_all;

use super::Social;
use crate::domain::{User, is_tag};
use crate::store::StoreResult;
use crate::store::trends::{HOUR_MS, HOURS_KEPT, TagCounts};

/// Trends count posts over the last day (whole hours, as `/v1/trends?window=24h`).
const TREND_HOURS: i64 = 24;

/// What a search found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Found {
    pub accounts: Vec<User>,
    /// Hashtags with at least one live post, with their counts.
    pub tags: Vec<TagCounts>,
}

/// What a search looks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SearchFor {
    pub accounts: bool,
    pub hashtags: bool,
}

impl Social {
    /// The first hour of the last week, by this service's clock.
    fn week_start_hour(&self) -> i64 {
        self.timelines.now_ms().div_euclid(HOUR_MS) - (HOURS_KEPT - 1)
    }

    /// The `limit` tags with most posts created in the last 24 hours, most first, each
    /// with its posts per hour over the last week: one read of the top tags, then one
    /// of each tag's counts, run together.
    pub async fn trending_tags(&self, limit: usize) -> StoreResult<Vec<TagCounts>> {
        let now_hour = self.timelines.now_ms().div_euclid(HOUR_MS);
        let trends = &self.store.trends;
        let top = trends.top_tags(now_hour - (TREND_HOURS - 1), limit).await?;
        let from_hour = self.week_start_hour();
        try_join_all(top.iter().map(|(tag, _)| trends.tag_counts(tag, from_hour))).await
    }

    /// The first `limit` accounts whose id starts with `query` (a leading `@` and a
    /// trailing `@domain` are the caller's to strip), by id, so an exact match comes
    /// first; and the hashtag `query` (without `#`, any case) when it has live posts.
    pub async fn search(&self, query: &str, what: SearchFor, limit: usize) -> StoreResult<Found> {
        let mut found = Found::default();
        let id = query.trim_start_matches('@');
        if what.accounts && crate::domain::validate_user_id(id).is_ok() {
            found.accounts = self.store.users.users_by_prefix(id, limit).await?;
        }
        let tag = query.trim_start_matches('#').to_lowercase();
        if what.hashtags && is_tag(&tag) {
            let counts = self
                .store
                .trends
                .tag_counts(&tag, self.week_start_hour())
                .await?;
            if counts.total > 0 {
                found.tags.push(counts);
            }
        }
        Ok(found)
    }
}
