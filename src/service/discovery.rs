//! What the Mastodon view's discovery endpoints read: the trending hashtags with their
//! last week of counts, search of accounts by id prefix (one range of the id index,
//! `UserStore::accounts_by_prefix`) and by the words of their display names (ranges of
//! the name word index, `UserStore::name_word_entries`, then the candidates' accounts,
//! `UserStore::accounts`), each account read once with its last status, and of a hashtag
//! by its name.

use futures::future::try_join_all;

use super::Social;
use crate::domain::{AccountView, is_tag, name_matches, name_words};
use crate::store::trends::{HOUR_MS, HOURS_KEPT, TagCounts};
use crate::store::{NameWord, StoreResult};

/// Trends count posts over the last day (whole hours, as `/v1/trends?window=24h`).
const TREND_HOURS: i64 = 24;

/// Pages of the name word index one search reads at most: a page past the first is
/// read only when hits of a multi-word query failed its other words, or when a name
/// matched several times or was found by its id already.
const NAME_PAGES: usize = 3;

/// What a search found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Found {
    pub accounts: Vec<AccountView>,
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
    /// first, then those whose display name has a word starting with each word of
    /// `query` (`domain::name_words`), by (word, id) of the query's longest word; and the
    /// hashtag `query` (without `#`, any case) when it has live posts.
    pub async fn search(&self, query: &str, what: SearchFor, limit: usize) -> StoreResult<Found> {
        let mut found = Found::default();
        let id = query.trim_start_matches('@');
        if what.accounts && crate::domain::validate_user_id(id).is_ok() {
            found.accounts = self.store.users.accounts_by_prefix(id, limit).await?;
        }
        if what.accounts && found.accounts.len() < limit {
            self.search_names(query, limit, &mut found.accounts).await?;
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

    /// Adds to `accounts`, up to `limit`, the users whose name has a word starting with
    /// each word of `query`: pages of the index under the query's longest word, each at
    /// most the accounts still wanted plus one entry, after the last entry read (a
    /// keyset), [`NAME_PAGES`] at most, each page's new candidates read as accounts
    /// (`UserStore::accounts`, one read). Each hit is checked against the profile as it
    /// stands (on MongoDB an entry may briefly outlive a rename).
    async fn search_names(
        &self,
        query: &str,
        limit: usize,
        accounts: &mut Vec<AccountView>,
    ) -> StoreResult<()> {
        let terms = name_words(query);
        let Some(longest) = terms.iter().max_by_key(|t| t.len()) else {
            return Ok(());
        };
        let users = &self.store.users;
        let mut after: Option<NameWord> = None;
        for _ in 0..NAME_PAGES {
            let wanted = limit - accounts.len();
            let page = users
                .name_word_entries(longest, after.as_ref(), wanted + 1)
                .await?;
            let mut ids: Vec<String> = Vec::with_capacity(page.len());
            for entry in &page {
                let known = accounts.iter().any(|a| a.user.id == entry.user);
                if !known && !ids.contains(&entry.user) {
                    ids.push(entry.user.clone());
                }
            }
            let mut candidates = users.accounts(&ids).await?;
            for id in &ids {
                let Some(at) = candidates.iter().position(|a| &a.user.id == id) else {
                    continue;
                };
                let account = candidates.swap_remove(at);
                if name_matches(&account.user.display_name, &terms) {
                    accounts.push(account);
                    if accounts.len() == limit {
                        return Ok(());
                    }
                }
            }
            if page.len() <= wanted {
                return Ok(());
            }
            after = page.last().cloned();
        }
        Ok(())
    }
}
