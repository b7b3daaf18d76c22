//! The activity log on MongoDB, with the outlier pattern made race-free.
//!
//! - `user_activity` `{_id: user, limit, pageSize, count, overflowSeq, hasOverflow,
//!   overflowPages, activities: [{type, ts, ref}]}`: the primary document. An entry goes
//!   in with `findOneAndUpdate({_id, count: {$lt: limit}}, {$push, $inc: {count: 1}})`,
//!   so the count check and the push are one atomic step; the entry's sequence number is
//!   its array index (`count - 1` after the push).
//! - When that filter no longer matches, `$inc: {overflowSeq: 1}` hands out the overflow
//!   sequence atomically, and the page is `overflowSeq / pageSize`: no separate read picks
//!   the page, so concurrent writers cannot disagree on it or overfill it.
//! - `activity_pages` `{user, page, count, activities: [{seq, type, ts, ref}]}`, unique
//!   on `{user: 1, page: 1}`, written by an upsert with `$push`, `$inc` and
//!   `$setOnInsert`; then `hasOverflow` and `overflowPages` are kept with `$set`/`$max`.
//! - `likes` `{_id: {u: user, p: post}, createdAt}`, indexed `{_id.p: 1, createdAt: -1,
//!   _id.u: -1}` for a post's likers (`likers.rs`).

use async_trait::async_trait;
use futures::TryStreamExt;
use mongodb::Collection;
use mongodb::bson::{Document, doc, oid::ObjectId};
use mongodb::options::ReturnDocument;

mod apply;
mod likers;
mod rebuild;

use super::{IndexSpec, MongoStore, db_error, exists, index, insert_new, is_duplicate_key, oid};
use crate::domain::{
    Activity, ActivityLayout, ActivityLimits, ActivityPage, ActivityType, Fence, PostId, Slot,
    window,
};
use crate::store::{ActivityStore, Liker, StoreError, StoreResult};

pub(super) fn indexes() -> Vec<IndexSpec> {
    vec![
        ("activity_pages", index(doc! { "user": 1, "page": 1 }, true)),
        ("likes", index(likers::index(), false)),
    ]
}

/// A counter field as a count.
fn int(doc: &Document, key: &str) -> u64 {
    super::int(doc, key).max(0) as u64
}

fn entry(kind: ActivityType, ts_ms: i64, reference: &str) -> Document {
    doc! { "type": kind.as_str(), "ts": ts_ms, "ref": reference }
}

fn activity(seq: u64, doc: &Document) -> StoreResult<Activity> {
    let kind = doc.get_str("type").ok().and_then(ActivityType::parse);
    let kind =
        kind.ok_or_else(|| StoreError::Backend(anyhow::anyhow!("bad activity entry {doc}")))?;
    Ok(Activity {
        seq,
        kind,
        ts_ms: doc.get_i64("ts").unwrap_or_default(),
        reference: doc.get_str("ref").unwrap_or_default().to_owned(),
    })
}

impl MongoStore {
    fn primary(&self) -> Collection<Document> {
        self.db.collection("user_activity")
    }

    fn pages(&self) -> Collection<Document> {
        self.db.collection("activity_pages")
    }

    async fn user_exists(&self, user: &str) -> StoreResult<bool> {
        self.exists("users", doc! { "_id": user }).await
    }

    /// The primary document's counters and layout, creating the document on first use.
    async fn head(&self, user: &str, limits: ActivityLimits) -> StoreResult<Document> {
        let projection = doc! { "activities": 0 };
        if let Some(head) = self
            .primary()
            .find_one(doc! { "_id": user })
            .projection(projection.clone())
            .await
            .map_err(db_error)?
        {
            return Ok(head);
        }
        if !self.user_exists(user).await? {
            return Err(StoreError::NotFound(format!("user {user}")));
        }
        let created = self
            .primary()
            .find_one_and_update(
                doc! { "_id": user },
                doc! { "$setOnInsert": {
                    "limit": i64::from(limits.primary_limit),
                    "pageSize": i64::from(limits.page_size),
                    "count": 0_i64, "overflowSeq": 0_i64,
                    "hasOverflow": false, "overflowPages": 0_i64,
                    "activities": [],
                } },
            )
            .upsert(true)
            .return_document(ReturnDocument::After)
            .projection(projection)
            .await
            .map_err(db_error)?;
        created.ok_or_else(|| StoreError::NotFound(format!("activity log of {user}")))
    }
}

#[async_trait]
impl ActivityStore for MongoStore {
    async fn record_activity(
        &self,
        user: &str,
        kind: ActivityType,
        reference: &str,
        ts_ms: i64,
        limits: ActivityLimits,
    ) -> StoreResult<Activity> {
        let head = self.head(user, limits).await?;
        let fixed = ActivityLimits {
            primary_limit: int(&head, "limit") as u32,
            page_size: int(&head, "pageSize").max(1) as u32,
        };
        let item = entry(kind, ts_ms, reference);
        // The head just read says whether the primary can still take entries; when it
        // is full, skip the conditional push that would only miss.
        if int(&head, "count") < u64::from(fixed.primary_limit) {
            let pushed = self
                .primary()
                .find_one_and_update(
                    doc! { "_id": user, "count": { "$lt": i64::from(fixed.primary_limit) } },
                    doc! { "$push": { "activities": item.clone() }, "$inc": { "count": 1_i64 } },
                )
                .return_document(ReturnDocument::After)
                .projection(doc! { "count": 1 })
                .await
                .map_err(db_error)?;
            if let Some(after) = pushed {
                let seq = int(&after, "count") - 1;
                return Ok(Activity {
                    seq,
                    kind,
                    ts_ms,
                    reference: reference.to_owned(),
                });
            }
        }

        let counter = self
            .primary()
            .find_one_and_update(
                doc! { "_id": user },
                doc! { "$inc": { "overflowSeq": 1_i64 }, "$set": { "hasOverflow": true } },
            )
            .return_document(ReturnDocument::After)
            .projection(doc! { "overflowSeq": 1 })
            .await
            .map_err(db_error)?
            .ok_or_else(|| StoreError::NotFound(format!("activity log of {user}")))?;
        let seq = u64::from(fixed.primary_limit) + int(&counter, "overflowSeq") - 1;
        let Slot::Page(page) = fixed.slot(seq) else {
            return Err(StoreError::Backend(anyhow::anyhow!(
                "overflow sequence {seq} maps to the primary"
            )));
        };
        let mut item = item;
        item.insert("seq", seq as i64);
        let filter = doc! { "user": user, "page": page as i64 };
        let update = doc! {
            "$push": { "activities": item },
            "$inc": { "count": 1_i64 },
            "$setOnInsert": { "createdAt": ts_ms },
        };
        // Two first writers of a page can both try the insert; the unique index lets one
        // win and the other's retry becomes a plain update.
        let mut attempts = 0;
        loop {
            match self
                .pages()
                .update_one(filter.clone(), update.clone())
                .upsert(true)
                .await
            {
                Ok(_) => break,
                Err(error) if is_duplicate_key(&error) && attempts < 8 => attempts += 1,
                Err(error) => return Err(db_error(error)),
            }
        }
        self.primary()
            .update_one(
                doc! { "_id": user },
                doc! { "$max": { "overflowPages": page as i64 + 1 } },
            )
            .await
            .map_err(db_error)?;
        Ok(Activity {
            seq,
            kind,
            ts_ms,
            reference: reference.to_owned(),
        })
    }

    /// Fenced by the log's `applied` watermark (see `apply.rs`); the lease itself is not
    /// consulted per write on MongoDB.
    async fn apply_activity(
        &self,
        _fence: &Fence,
        seq: u64,
        user: &str,
        kind: ActivityType,
        reference: &str,
        ts_ms: i64,
        limits: ActivityLimits,
    ) -> StoreResult<Option<Activity>> {
        self.apply_activity_once(seq, user, kind, reference, ts_ms, limits)
            .await
    }

    /// See `rebuild.rs`.
    async fn rebuild_activity(&self, fence: &Fence, limits: ActivityLimits) -> StoreResult<()> {
        self.rebuild_logs(fence, limits).await
    }

    async fn activities(&self, user: &str, skip: u64, limit: u64) -> StoreResult<ActivityPage> {
        // One read serves a window inside the primary document.
        let Some(head) = self
            .primary()
            .find_one(doc! { "_id": user })
            .await
            .map_err(db_error)?
        else {
            if self.user_exists(user).await? {
                return Ok(ActivityPage {
                    items: Vec::new(),
                    total: 0,
                });
            }
            return Err(StoreError::NotFound(format!("user {user}")));
        };
        let fixed = ActivityLimits {
            primary_limit: int(&head, "limit") as u32,
            page_size: int(&head, "pageSize").max(1) as u32,
        };
        let total = int(&head, "count") + int(&head, "overflowSeq");
        let Some(range) = window(total, skip, limit) else {
            return Ok(ActivityPage {
                items: Vec::new(),
                total,
            });
        };
        let mut items = Vec::new();
        // The pages holding the window's overflow part, and only those.
        let first_overflow = (*range.start()).max(u64::from(fixed.primary_limit));
        if first_overflow <= *range.end() {
            let (Slot::Page(first), Slot::Page(last)) =
                (fixed.slot(first_overflow), fixed.slot(*range.end()))
            else {
                unreachable!("sequence numbers past the primary limit live in pages");
            };
            let pages: Vec<i64> = (first..=last).map(|p| p as i64).collect();
            let mut cursor = self
                .pages()
                .find(doc! { "user": user, "page": { "$in": pages } })
                .await
                .map_err(db_error)?;
            while let Some(page) = cursor.try_next().await.map_err(db_error)? {
                for item in page
                    .get_array("activities")
                    .map(|a| a.as_slice())
                    .unwrap_or_default()
                {
                    if let Some(item) = item.as_document() {
                        let seq = int(item, "seq");
                        if range.contains(&seq) {
                            items.push(activity(seq, item)?);
                        }
                    }
                }
            }
        }
        if *range.start() < u64::from(fixed.primary_limit) {
            let primary = head
                .get_array("activities")
                .map(|a| a.as_slice())
                .unwrap_or_default();
            for (seq, item) in primary.iter().enumerate() {
                let seq = seq as u64;
                if let (true, Some(item)) = (range.contains(&seq), item.as_document()) {
                    items.push(activity(seq, item)?);
                }
            }
        }
        items.sort_unstable_by_key(|a| std::cmp::Reverse(a.seq));
        Ok(ActivityPage { items, total })
    }

    async fn activity_layout(&self, user: &str) -> StoreResult<ActivityLayout> {
        let mut layout = ActivityLayout::default();
        if let Some(head) = self
            .primary()
            .find_one(doc! { "_id": user })
            .await
            .map_err(db_error)?
        {
            layout.primary = head
                .get_array("activities")
                .map(|a| a.len() as u64)
                .unwrap_or_default();
        }
        let mut cursor = self
            .pages()
            .find(doc! { "user": user })
            .sort(doc! { "page": 1 })
            .await
            .map_err(db_error)?;
        while let Some(page) = cursor.try_next().await.map_err(db_error)? {
            let entries = page
                .get_array("activities")
                .map(|a| a.len() as u64)
                .unwrap_or_default();
            layout.pages.push((int(&page, "page"), entries));
        }
        Ok(layout)
    }

    async fn like(&self, user: &str, post: PostId, now_ms: i64) -> StoreResult<bool> {
        if !self.user_exists(user).await? {
            return Err(StoreError::NotFound(format!("user {user}")));
        }
        let oid = oid(post);
        if !exists(&self.db.collection("content"), doc! { "_id": oid }).await? {
            return Err(StoreError::NotFound(format!("post {post}")));
        }
        let like = doc! { "_id": { "u": user, "p": oid }, "createdAt": now_ms };
        insert_new(&self.db.collection::<Document>("likes"), like, &[]).await
    }

    async fn unlike(&self, user: &str, post: PostId) -> StoreResult<bool> {
        let oid = ObjectId::from_bytes(post.bytes());
        let result = self
            .db
            .collection::<Document>("likes")
            .delete_one(doc! { "_id": { "u": user, "p": oid } })
            .await
            .map_err(db_error)?;
        Ok(result.deleted_count > 0)
    }

    async fn likes_standing(
        &self,
        likes: &[(String, PostId)],
    ) -> StoreResult<Vec<(String, PostId)>> {
        self.likes_standing_of(likes).await
    }

    async fn likers(
        &self,
        post: PostId,
        before: Option<&Liker>,
        limit: usize,
    ) -> StoreResult<Vec<Liker>> {
        self.likers_of(post, before, limit).await
    }

    async fn likers_newer(
        &self,
        post: PostId,
        after: &Liker,
        limit: usize,
    ) -> StoreResult<Vec<Liker>> {
        self.likers_from(post, Some(after), "$gt", 1, limit).await
    }

    async fn like_counts(&self, posts: &[PostId]) -> StoreResult<Vec<(PostId, u64)>> {
        self.like_counts_of(posts).await
    }
}
