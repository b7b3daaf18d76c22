//! The counters worker: keeps `followers_count`, `following_count` and `posts_count`
//! exact by recounting, from the sources, every user a batch of changes touched.
//!
//! The write path still moves the counters itself, so a profile shows a new count at
//! once: embedded in the write's own transaction (exact), on MongoDB as a separate `$inc`
//! after an insert and before a delete (so that no recount can land between a delete
//! and its decrement and leave a count below the truth), which a crash can cut off and
//! which can also land after a recount that already counted its write. The worker
//! repairs both: for each batch, a post's author, both ends of a follow, and any user
//! whose document changed (a counter `$inc` reaches the MongoDB feed as a user update)
//! are recounted at the highest `seq` of the changes that touched them. Each change's
//! document is read once, into what it asks of the worker (`Asks`).
//!
//! Fences, per side effect: the one effect is the write of a recount, conditional per
//! user on the version of its counters, which every counter write moves (a request's
//! increment, a recount). A recount reads the version, then counts the sources, then
//! writes only where the version is still the one it read (`UserStore::write_counts`):
//! a follow whose `$inc` lands between the count and the write is never overwritten by
//! a count that missed it, so a profile never shows less than an acknowledged write
//! made it. A refused user is read again, a few times, and otherwise left to the
//! change that moved its counter, which recounts it. Which recounts need a write at all
//! is decided at the read: `counted_seq` below the recount's seq (a paused holder that
//! lost its lease, or a replay, recounts for older changes than were already counted,
//! and writes nothing; one that read first is refused by the version its successor
//! moved), and, for a user-document change, a count that differs, so the worker's own
//! writes (user updates on MongoDB) settle after one more round.
//! The rebuild recounts every user; its fence is described at `UserStore::recount_all`.
//!
//! The display-name word index (`UserStore::sync_name_words`) is mended here too: for
//! every user a batch created or updated, the user's words are synced with the profile
//! as it stands (MongoDB writes them after the name, so a request that died in between
//! left them behind; embedded, where they are written in the name's transaction, the
//! sync finds nothing to do). The rebuild writes every user's words again.
//!
//! A reply moves its parent's `replies_count`, and a repost its original's
//! `reposts_count`, the same way (embedded: in the write's transaction; MongoDB: an
//! `$inc` under a claim mark on the reply or repost). For every reply or repost insert
//! in a batch, the worker asks the store to settle what a writer killed between its
//! insert and its `$inc` left behind (`ClaimStore::settle_claims`: a stale mark taken
//! over and the count recounted from the sources), so such a count is exact once the
//! worker has applied the insert, where nothing else would ever have recounted it. A
//! removal (a reply's delete, an unrepost) marks its source the same way before it moves
//! the count down and deletes; the mark is an update of the source, so for every update
//! of a reply or a repost the worker asks the same, and a removal killed between its
//! move and its delete is finished (one of its allowed outcomes: it was never answered)
//! instead of leaving the count one below the sources for good. For
//! every post insert, it asks the store to delete again a post that a delete's
//! tombstone names (`ClaimStore::settle_deleted_posts`: a keyed insert that landed
//! after the post's delete, from a request killed before it looked again), so an
//! acknowledged delete stands once the worker has applied the insert.

use std::collections::BTreeMap;
use std::sync::Arc;

use async_trait::async_trait;
use serde::Deserialize;
use serde::de::IgnoredAny;

use super::runtime::Worker;
use crate::domain::{COUNTER_UPDATES, Change, ChangeOp, Fence, PostId, REPOSTS, Repost};
use crate::store::{ClaimStore, Claimed, Counter, Recount, StoreError, StoreResult, UserStore};

pub const NAME: &str = "counters";

/// Reads and writes of one batch's recounts before users whose counters keep moving
/// are left to the changes that moved them.
const RECOUNT_ATTEMPTS: usize = 3;

pub struct CountersWorker {
    users: Arc<dyn UserStore>,
    claims: Arc<dyn ClaimStore>,
}

impl CountersWorker {
    pub fn new(users: Arc<dyn UserStore>, claims: Arc<dyn ClaimStore>) -> Self {
        CountersWorker { users, claims }
    }
}

/// What one change asks of the worker, read from its document once.
#[derive(Default)]
struct Asks {
    /// The users whose counts it may have moved, and whether it was a change to a source
    /// of the counts (`true`) or only to the user document (`false`).
    users: Vec<(String, bool)>,
    /// The reply or repost it inserted, whose count's move a dead writer may have left
    /// undone.
    claimed: Option<Claimed>,
    /// The post it inserted, which a delete may have preceded.
    inserted_post: Option<PostId>,
}

/// The fields of a post change that the worker reads (its text is never copied).
#[derive(Deserialize)]
struct PostHead {
    id: PostId,
    author: String,
    #[serde(default)]
    reply_to: Option<IgnoredAny>,
}

#[derive(Deserialize)]
struct FollowDoc {
    follower: String,
    followee: String,
}

/// The error for a change whose document does not parse.
fn malformed(change: &Change) -> impl Fn(serde_json::Error) -> StoreError + '_ {
    move |e| {
        StoreError::Poison(format!(
            "change {} on {} is malformed: {e}",
            change.position.0, change.collection
        ))
    }
}

fn read(change: &Change) -> StoreResult<Asks> {
    let mut asks = Asks::default();
    match (change.collection.as_str(), change.op) {
        ("posts", ChangeOp::Insert | ChangeOp::Delete) => match &change.document {
            Some(document) => {
                let post = PostHead::deserialize(document).map_err(malformed(change))?;
                if change.op == ChangeOp::Insert {
                    asks.inserted_post = Some(post.id);
                    if post.reply_to.is_some() {
                        asks.claimed = Some(Claimed {
                            counter: Counter::Replies,
                            id: post.id,
                            owner: post.author.clone(),
                        });
                    }
                }
                asks.users.push((post.author, true));
            }
            // A MongoDB delete whose tombstone has expired (see `content.rs`): the author
            // is not known, and is recounted at their next change or the next rebuild.
            None => {
                tracing::warn!(change = %change.position.0, "a post change without its post; its author is not recounted");
            }
        },
        // A reply's update may be a removal's claim mark (a delete killed after moving
        // its parent's count down, before its delete): settled like an insert's mark.
        ("posts", ChangeOp::Update) => {
            if let Some(document) = &change.document {
                let post = PostHead::deserialize(document).map_err(malformed(change))?;
                if post.reply_to.is_some() {
                    asks.claimed = Some(Claimed {
                        counter: Counter::Replies,
                        id: post.id,
                        owner: post.author,
                    });
                }
            }
        }
        // A repost is updated only by its claim marks: an insert's, or an unrepost's.
        (REPOSTS, ChangeOp::Insert | ChangeOp::Update) => {
            if let Some(document) = &change.document {
                let repost = Repost::deserialize(document).map_err(malformed(change))?;
                asks.claimed = Some(Claimed {
                    counter: Counter::Reposts,
                    id: repost.id,
                    owner: repost.user,
                });
            }
        }
        ("follows", ChangeOp::Insert) => {
            if let Some(document) = &change.document {
                let edge = FollowDoc::deserialize(document).map_err(malformed(change))?;
                asks.users = vec![(edge.follower, true), (edge.followee, true)];
            }
        }
        ("follows", ChangeOp::Delete) => match change.key.split_once('/') {
            Some((follower, followee)) => {
                asks.users = vec![(follower.to_owned(), true), (followee.to_owned(), true)];
            }
            None => {
                return Err(StoreError::Poison(format!(
                    "follow change {} with key {:?}",
                    change.position.0, change.key
                )));
            }
        },
        // A counter update may have landed after the last recount (MongoDB), so it asks
        // for a correction. Real MongoDB files those under `COUNTER_UPDATES`; a server
        // that reports no update description (the test stand-in) leaves them under
        // `users`, so a user update asks for one too (a rename's costs a read).
        ("users" | COUNTER_UPDATES, ChangeOp::Update) => {
            asks.users = vec![(change.key.clone(), false)];
        }
        _ => {}
    }
    Ok(asks)
}

#[async_trait]
impl Worker for CountersWorker {
    fn name(&self) -> &'static str {
        NAME
    }

    async fn apply(&self, changes: &[Change], _fence: &Fence) -> StoreResult<()> {
        let mut users: BTreeMap<String, (u64, bool)> = BTreeMap::new();
        let mut sources = Vec::new();
        let mut inserted = Vec::new();
        let mut profiles: Vec<String> = Vec::new();
        for change in changes {
            if change.collection == "users" && change.op != ChangeOp::Delete {
                profiles.push(change.key.clone());
            }
            let asks = read(change)?;
            sources.extend(asks.claimed);
            inserted.extend(asks.inserted_post);
            for (user, source) in asks.users {
                let entry = users.entry(user).or_insert((change.seq, source));
                entry.0 = entry.0.max(change.seq);
                entry.1 |= source;
            }
        }
        if !profiles.is_empty() {
            profiles.sort_unstable();
            profiles.dedup();
            self.users.sync_name_words(&profiles).await?;
        }
        if !inserted.is_empty() {
            let deleted = self.claims.settle_deleted_posts(&inserted).await?;
            if deleted > 0 {
                metrics::counter!("socialite_deleted_posts_settled_total").increment(deleted);
            }
        }
        if !sources.is_empty() {
            let taken = self.claims.settle_claims(&sources).await?;
            if taken > 0 {
                metrics::counter!("socialite_claims_taken_over_total").increment(taken);
            }
        }
        if users.is_empty() {
            return Ok(());
        }
        let mut recounts: Vec<Recount> = users
            .into_iter()
            .map(|(user, (seq, always))| Recount { user, seq, always })
            .collect();
        for _ in 0..RECOUNT_ATTEMPTS {
            let counted = self.users.count_sources(&recounts).await?;
            if counted.is_empty() {
                return Ok(());
            }
            crate::faults::point("counters.counted").await;
            let refused = self.users.write_counts(&counted).await?;
            if refused.is_empty() {
                return Ok(());
            }
            // Refusals are few: counters that moved between one read and its write.
            recounts.retain(|r| refused.contains(&r.user));
        }
        tracing::debug!(
            worker = NAME,
            users = recounts.len(),
            "counters kept moving during their recount; their own changes recount them"
        );
        Ok(())
    }

    /// Every user recounted from the sources, and every user's name words written again.
    async fn rebuild(&self, fence: &Fence) -> StoreResult<()> {
        let written = self.users.recount_all(fence).await?;
        tracing::info!(worker = NAME, written, "recounted every user");
        let words = self.users.rebuild_name_words().await?;
        tracing::info!(worker = NAME, words, "wrote every user's name words again");
        Ok(())
    }
}
