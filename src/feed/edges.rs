//! A follow's and an unfollow's timeline upkeep: a backfill while the edge stands, a
//! removal of the followee's entries while it does not, re-checked against the edge
//! after each upkeep so that the later of a racing follow and unfollow wins.

use super::Timelines;
use crate::store::{EdgeState, StoreError, StoreResult};

impl Timelines {
    /// Brings `follower`'s timeline in line with the edge `follower` → `followee` as it
    /// stands: a backfill while it exists, a removal of the followee's entries while it
    /// does not. Called after every follow and unfollow, by the request and again by the
    /// timelines worker. Returns when the edge the upkeep last ran on was created, `None`
    /// when it ran on no edge.
    ///
    /// The upkeep is not atomic with the edge change, so it may land after a newer
    /// change's own upkeep: an unfollow's removal after a racing follow's backfill (in
    /// another process, or after a pause) would leave the follow without its posts for
    /// good. So the edge is read again after each upkeep, and the upkeep repeated until
    /// that read agrees with the state it acted on: whichever upkeep lands last was
    /// checked against the edge after it landed, so the last change always wins.
    pub async fn sync_edge(&self, follower: &str, followee: &str) -> StoreResult<Option<i64>> {
        let created = |edge: Option<EdgeState>| edge.map(|e| e.created_ms);
        let mut edge = created(self.store.graph.edge(follower, followee).await?);
        if self.feed.kind().is_none() {
            return Ok(edge);
        }
        for _ in 0..MAX_SYNC_ROUNDS {
            // Between the read of the edge and the upkeep that rests on it.
            crate::faults::point("edge.read").await;
            match edge {
                Some(since_ms) => self.followed(follower, followee, since_ms).await?,
                None => self.feed.unfollowed(follower, followee).await?,
            }
            let now = created(self.store.graph.edge(follower, followee).await?);
            if now == edge {
                return Ok(edge);
            }
            edge = now;
        }
        // Giving up silently could leave the last upkeep wrong: fail, so that the
        // request answers 503 and the worker retries the change.
        Err(StoreError::Backend(anyhow::anyhow!(
            "the edge {follower} -> {followee} kept changing under its timeline upkeep"
        )))
    }

    /// Backfills `followee`'s posts into `follower`'s timeline, stamped with the name
    /// read before, and stamps them again if a rename landed meanwhile.
    async fn followed(&self, follower: &str, followee: &str, since_ms: i64) -> StoreResult<()> {
        if !self.settings.embed_content {
            return self.feed.followed(follower, followee, since_ms, None).await;
        }
        let Some(before) = self.store.users.user(followee).await? else {
            return Ok(());
        };
        let name = before.name_stamp();
        self.feed
            .followed(follower, followee, since_ms, Some(&name))
            .await?;
        match self.store.users.user(followee).await? {
            Some(now) if now.version > name.version => {
                let follower = [follower.to_owned()];
                self.stamp(followee, &now.name_stamp(), Some(&follower))
                    .await
            }
            _ => Ok(()),
        }
    }
}

/// Upkeep rounds of one edge before [`Timelines::sync_edge`] reports a failure; each
/// extra round needs another follow or unfollow of the same pair meanwhile.
const MAX_SYNC_ROUNDS: usize = 16;
