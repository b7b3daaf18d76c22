//! Every notification rebuilt from the sources on MongoDB, in bounded memory: the
//! notifications worker's rebuild (fenced) and a bulk load's notifications pass.
//!
//! One pass over each source collection streams the causes (follows, posts for replies
//! and mentions, likes and reposts with their posts' authors read `$in` a batch at a
//! time) and every user's creation time into an external sort by recipient
//! (`spill.rs`); the merge then yields one recipient at a time, whose mentions count only
//! when the recipient existed at the post, ranked into rebuilt ids
//! (`store::bulk::rebuilt_for_user`): exactly `derived::notifications::rebuilt`. They are
//! written a range of recipients at a time, each range's old notifications and groups
//! deleted and its new ones inserted just after (the fence, when given, checked first):
//! a reader sees a recipient's notifications missing only between those two steps.
//!
//! Memory, as `RebuildBounds` says: a run of the sort (`causes_in_memory` causes), a
//! batch of likes or reposts with their posts' authors, and a range of recipients'
//! notifications (`per_write`, of whole recipients, so a range may run over).

use std::collections::HashMap;

use futures::TryStreamExt;
use mongodb::bson::{Bson, Document, doc};

use super::spill::{EXISTS, Record, Spill};
use crate::domain::{
    Dismissals, Fence, Notification, NotificationType, PostId, mention_counts, notifies,
    post_notifies,
};
use crate::store::bulk::{Cause, rebuilt_for_user};
use crate::store::mongo::graph::FOLLOWS;
use crate::store::mongo::threads::reply_from;
use crate::store::mongo::{MongoStore, db_error, int, oid, post_id};
use crate::store::{RebuildBounds, StoreResult};

/// Likes or reposts whose posts' authors are read together.
const LOOKUP_BATCH: usize = 1_000;
/// Post ids per `$in`.
const PER_IN: usize = 500;

fn code(kind: NotificationType) -> u8 {
    NotificationType::ALL
        .iter()
        .position(|k| *k == kind)
        .unwrap_or_default() as u8
}

fn kind_of(code: u8) -> Option<NotificationType> {
    NotificationType::ALL.get(code as usize).copied()
}

fn record(
    user: &str,
    kind: NotificationType,
    actor: &str,
    post: Option<PostId>,
    at: i64,
) -> Record {
    Record {
        user: user.to_owned(),
        kind: code(kind),
        actor: actor.to_owned(),
        post,
        at,
    }
}

/// One recipient's notifications from their records.
fn notifications_of(
    user: &str,
    records: Vec<Record>,
    dismissals: &Dismissals,
) -> Vec<Notification> {
    let created = records.iter().find(|r| r.kind == EXISTS).map(|r| r.at);
    let causes = records
        .into_iter()
        .filter_map(|r| {
            let kind = kind_of(r.kind)?;
            let counts = kind != NotificationType::Mention
                || created.is_some_and(|c| mention_counts(c, r.at));
            counts.then_some(Cause {
                at_ms: r.at,
                kind,
                actor: r.actor,
                post: r.post,
            })
        })
        .collect();
    rebuilt_for_user(user, causes, dismissals)
}

impl MongoStore {
    /// The authors of the stored posts among `posts`.
    pub(in crate::store::mongo) async fn authors_of(
        &self,
        posts: &[PostId],
    ) -> StoreResult<HashMap<PostId, String>> {
        let mut authors = HashMap::with_capacity(posts.len());
        for chunk in posts.chunks(PER_IN) {
            let ids: Vec<Bson> = chunk.iter().map(|p| Bson::ObjectId(oid(*p))).collect();
            let mut found = self
                .content_coll()
                .find(doc! { "_id": { "$in": ids } })
                .projection(doc! { "_id": 1, "author": 1 })
                .await
                .map_err(db_error)?;
            while let Some(post) = found.try_next().await.map_err(db_error)? {
                let author = post.get_str("author").unwrap_or_default().to_owned();
                authors.insert(post_id(post.get("_id"))?, author);
            }
        }
        Ok(authors)
    }

    /// Every document of `collection` (with `projection`), handed to `f`.
    async fn each(
        &self,
        collection: &str,
        filter: Document,
        projection: Document,
        mut f: impl FnMut(Document) -> StoreResult<()>,
    ) -> StoreResult<()> {
        let mut cursor = self
            .collection(collection)
            .find(filter)
            .projection(projection)
            .await
            .map_err(db_error)?;
        while let Some(found) = cursor.try_next().await.map_err(db_error)? {
            f(found)?;
        }
        Ok(())
    }

    /// Likes (`reposts: false`) or reposts of someone else's live post, into `spill`, a
    /// batch at a time with their posts' authors.
    async fn spill_acts(&self, spill: &mut Spill, reposts: bool) -> StoreResult<()> {
        let (collection, projection) = match reposts {
            false => ("likes", doc! { "_id": 1, "createdAt": 1 }),
            true => (
                crate::domain::REPOSTS,
                doc! { "_id": 1, "user": 1, "post": 1 },
            ),
        };
        let mut cursor = self
            .collection(collection)
            .find(doc! {})
            .projection(projection)
            .await
            .map_err(db_error)?;
        let mut batch: Vec<(String, PostId, i64)> = Vec::with_capacity(LOOKUP_BATCH);
        loop {
            let next = cursor.try_next().await.map_err(db_error)?;
            let done = next.is_none();
            if let Some(act) = next {
                batch.push(match reposts {
                    false => {
                        let key = act
                            .get_document("_id")
                            .map_err(|e| super::backend(format!("a like without its key: {e}")))?;
                        let user = key.get_str("u").unwrap_or_default().to_owned();
                        (user, post_id(key.get("p"))?, int(&act, "createdAt"))
                    }
                    true => {
                        let user = act.get_str("user").unwrap_or_default().to_owned();
                        let at = post_id(act.get("_id"))?.timestamp_ms();
                        (user, post_id(act.get("post"))?, at)
                    }
                });
            }
            if batch.len() >= LOOKUP_BATCH || (done && !batch.is_empty()) {
                let mut posts: Vec<PostId> = batch.iter().map(|(_, p, _)| *p).collect();
                posts.sort_unstable();
                posts.dedup();
                let authors = self.authors_of(&posts).await?;
                let kind = match reposts {
                    false => NotificationType::Like,
                    true => NotificationType::Repost,
                };
                for (user, post, at) in batch.drain(..) {
                    if let Some(author) = authors.get(&post)
                        && notifies(author, &user)
                    {
                        spill.push(record(author, kind, &user, Some(post), at))?;
                    }
                }
            }
            if done {
                return Ok(());
            }
        }
    }

    /// Every cause, and every user's creation time, sorted by recipient.
    async fn spill_causes(&self, run: usize) -> StoreResult<Spill> {
        let mut spill = Spill::new(run)?;
        self.each("users", doc! {}, doc! { "created_at": 1 }, |user| {
            if let Ok(id) = user.get_str("_id") {
                let at = int(&user, "created_at");
                spill.push(Record {
                    user: id.to_owned(),
                    kind: EXISTS,
                    actor: String::new(),
                    post: None,
                    at,
                })?;
            }
            Ok(())
        })
        .await?;
        let projection = doc! { "from": 1, "to": 1, "created_at": 1 };
        self.each(FOLLOWS, doc! {}, projection, |edge| {
            if let (Ok(from), Ok(to)) = (edge.get_str("from"), edge.get_str("to"))
                && notifies(to, from)
            {
                let at = int(&edge, "created_at");
                spill.push(record(to, NotificationType::Follow, from, None, at))?;
            }
            Ok(())
        })
        .await?;
        let filter = doc! { "author": { "$exists": true } };
        let projection = doc! { "author": 1, "text": 1, "reply_to": 1 };
        self.each("content", filter, projection, |post| {
            let id = post_id(post.get("_id"))?;
            let author = post.get_str("author").unwrap_or_default();
            let text = post.get_str("text").unwrap_or_default();
            let reply_to = reply_from(&post)?.filter(|r| !r.author.is_empty());
            for (user, kind) in post_notifies(author, text, reply_to.as_ref()) {
                spill.push(record(&user, kind, author, Some(id), id.timestamp_ms()))?;
            }
            Ok(())
        })
        .await?;
        self.spill_acts(&mut spill, false).await?;
        self.spill_acts(&mut spill, true).await?;
        Ok(spill)
    }

    /// Replaces the notifications and groups of the recipients in `(after, through]`
    /// (`through: None`: to the last) with `notifications`; `fence` checked first.
    async fn replace_range(
        &self,
        fence: Option<&Fence>,
        after: &str,
        through: Option<&str>,
        notifications: &[Notification],
    ) -> StoreResult<()> {
        if let Some(fence) = fence {
            self.check_notification_fence(fence).await?;
        }
        let mut range = doc! { "$gt": after };
        if let Some(through) = through {
            range.insert("$lte", through);
        }
        for coll in [self.notifications_coll(), self.groups_coll()] {
            coll.delete_many(doc! { "user": range.clone() })
                .await
                .map_err(db_error)?;
        }
        if notifications.is_empty() {
            return Ok(());
        }
        self.insert_rebuilt(notifications).await
    }

    /// Replaces every notification and group with those the sources imply, a range of
    /// recipients at a time (see the module's comment); `fence`, when given, is checked
    /// before each range is written. Returns how many notifications were written.
    pub(in crate::store::mongo) async fn rebuild_all_notifications(
        &self,
        fence: Option<&Fence>,
        bounds: RebuildBounds,
    ) -> StoreResult<u64> {
        let mut merged = self.spill_causes(bounds.causes_in_memory).await?.merged()?;
        let (mut after, mut written) = (String::new(), 0);
        let mut batch: Vec<Notification> = Vec::new();
        while let Some((user, records)) = merged.next_user()? {
            // The recipient's dismissals: two reads per recipient, memory per recipient.
            let dismissals = self.dismissals_of(&user).await?;
            batch.extend(notifications_of(&user, records, &dismissals));
            if batch.len() >= bounds.per_write.max(1) {
                self.replace_range(fence, &after, Some(&user), &batch)
                    .await?;
                written += batch.len() as u64;
                batch.clear();
                after = user;
            }
        }
        self.replace_range(fence, &after, None, &batch).await?;
        Ok(written + batch.len() as u64)
    }
}
