//! Author names in timeline entries. With content embedded, each entry carries a copy of
//! its author's display name and the user version it was read at ([`NameStamp`]). A
//! rename reaches the copies through the timelines worker, which stamps the author's
//! entries in the author's and every follower's timeline; a stamp only ever replaces an
//! older one, so renames applied out of order end with the newest name. Writers that
//! stamped entries with a name read before a rename check the version again once their
//! entries landed (see `Timelines::settle_delivery`), so no entry keeps an old name.

use std::collections::HashMap;

use super::Timelines;
use crate::domain::NameStamp;
use crate::store::StoreResult;
use crate::store::timelines::deliver_to_audience;

impl Timelines {
    /// Stamps `author`'s entries with `name` in `users`' timelines, or (`None`) in the
    /// author's and every follower's.
    pub(super) async fn stamp(
        &self,
        author: &str,
        name: &NameStamp,
        users: Option<&[String]>,
    ) -> StoreResult<()> {
        let Some(kind) = self.feed.kind() else {
            return Ok(());
        };
        if !self.settings.embed_content {
            return Ok(());
        }
        let timelines = &self.store.timelines;
        match users {
            Some(users) => timelines.rename_author(kind, users, author, name).await,
            None => {
                deliver_to_audience(self.store.graph.as_ref(), author, |batch| async move {
                    timelines.rename_author(kind, &batch, author, name).await?;
                    Ok(batch.len() as u64)
                })
                .await?;
                Ok(())
            }
        }
    }

    /// Propagates the names of the feed's user changes to every timeline: per author,
    /// the newest of `names`, unless a version at least as new already went out (the
    /// feed reports every profile write, counters included, on MongoDB). Records each
    /// propagation once done, so a replay costs one read. Returns how many authors were
    /// stamped.
    pub async fn renamed(&self, names: &[(String, NameStamp)]) -> StoreResult<usize> {
        if self.feed.kind().is_none() || !self.settings.embed_content {
            return Ok(0);
        }
        let mut newest: HashMap<&str, &NameStamp> = HashMap::new();
        for (author, name) in names.iter().filter(|(_, name)| name.version > 0) {
            let slot = newest.entry(author.as_str()).or_insert(name);
            if name.version > slot.version {
                *slot = name;
            }
        }
        if newest.is_empty() {
            return Ok(0);
        }
        let authors: Vec<String> = newest.keys().map(|a| (*a).to_owned()).collect();
        let done: HashMap<String, u64> = self
            .store
            .timelines
            .renamed(&authors)
            .await?
            .into_iter()
            .collect();
        let mut stamped = 0;
        for (author, name) in newest {
            if done.get(author).is_some_and(|v| *v >= name.version) {
                continue;
            }
            self.stamp(author, name, None).await?;
            self.store
                .timelines
                .mark_renamed(author, name.version)
                .await?;
            stamped += 1;
        }
        Ok(stamped)
    }
}
