//! The activity worker's rebuild on MongoDB: every log recomputed from the posts, follows
//! and likes that exist, with the same entries, order and layout as the embedded rebuild.
//!
//! - Events are read in the embedded tables' orders (posts by id, follows by
//!   `(from, to)`, likes by `(user, post)`) and stably sorted by time, so ties fall the
//!   same way on both backends.
//! - `applied` becomes the newest oplog entry read (at majority) before the scan: the
//!   worker then applies only changes after it. A write that lands during the scan is in
//!   the scan and, past that mark, applied again; none is lost. (The embedded rebuild
//!   reads one snapshot and is exact.)
//! - Written user by user: the primary document replaced, then its pages, then pages
//!   past the new end and the logs of users with no events removed. A reader can see one
//!   user's log between two of those writes; there is no transaction to hide it.
//! - Fence: before each user's writes, the lease must still be held at the fence's
//!   version, so a holder that lost its lease stops at the next user.

use std::collections::BTreeMap;

use futures::TryStreamExt;
use mongodb::bson::{Bson, Document, doc};

use super::entry;
use crate::domain::{ActivityLimits, ActivityType, Fence, PostId, Slot};
use crate::store::mongo::bulk::{WRITE_BATCH, insert_unordered};
use crate::store::mongo::{MongoStore, db_error, int, leases::LEASES, post_id};
use crate::store::{StoreError, StoreResult};

/// (time, user, type, reference), as the embedded rebuild collects them.
type Event = (i64, String, ActivityType, String);

impl MongoStore {
    async fn scan(&self, collection: &str, sort: Document) -> StoreResult<Vec<Document>> {
        self.collection(collection)
            .find(doc! {})
            .sort(sort)
            .await
            .map_err(db_error)?
            .try_collect()
            .await
            .map_err(db_error)
    }

    async fn events(&self) -> StoreResult<Vec<Event>> {
        let mut events = Vec::new();
        for post in self.scan("content", doc! { "_id": 1 }).await? {
            let id = post_id(post.get("_id"))?;
            let author = post.get_str("author").unwrap_or_default().to_owned();
            events.push((
                id.timestamp_ms(),
                author,
                ActivityType::Post,
                id.to_string(),
            ));
        }
        let follows = super::super::graph::FOLLOWS;
        for edge in self.scan(follows, doc! { "from": 1, "to": 1 }).await? {
            let follower = edge.get_str("from").unwrap_or_default().to_owned();
            let followee = edge.get_str("to").unwrap_or_default().to_owned();
            events.push((
                int(&edge, "created_at"),
                follower,
                ActivityType::Follow,
                followee,
            ));
        }
        for like in self.scan("likes", doc! { "_id.u": 1, "_id.p": 1 }).await? {
            let id = like
                .get_document("_id")
                .map_err(|e| StoreError::Backend(e.into()))?;
            let user = id.get_str("u").unwrap_or_default().to_owned();
            let post: PostId = post_id(id.get("p"))?;
            events.push((
                int(&like, "createdAt"),
                user,
                ActivityType::Like,
                post.to_string(),
            ));
        }
        events.sort_by_key(|e| e.0);
        Ok(events)
    }

    async fn still_held(&self, fence: &Fence) -> StoreResult<()> {
        let held = self
            .collection(LEASES)
            .find_one(doc! {
                "_id": &fence.lease, "holder": &fence.holder, "version": fence.version as i64,
            })
            .projection(doc! { "_id": 1 })
            .await
            .map_err(db_error)?;
        match held {
            Some(_) => Ok(()),
            None => Err(StoreError::Fenced(fence.lease.clone())),
        }
    }

    pub(super) async fn rebuild_logs(
        &self,
        fence: &Fence,
        limits: ActivityLimits,
    ) -> StoreResult<()> {
        let applied = crate::store::mongo::changes::majority_head(&self.db)
            .await?
            .map_or(-1, |time| {
                ((u64::from(time.time) << 32) | u64::from(time.increment)) as i64
            });
        let mut logs: BTreeMap<String, Vec<(i64, ActivityType, String)>> = BTreeMap::new();
        for (ts, user, kind, reference) in self.events().await? {
            logs.entry(user).or_default().push((ts, kind, reference));
        }
        for (user, entries) in &logs {
            self.still_held(fence).await?;
            self.write_log(user, entries, limits, applied).await?;
        }
        let users: Vec<&String> = logs.keys().collect();
        self.primary()
            .delete_many(doc! { "_id": { "$nin": &users } })
            .await
            .map_err(db_error)?;
        self.pages()
            .delete_many(doc! { "user": { "$nin": &users } })
            .await
            .map_err(db_error)?;
        Ok(())
    }

    /// One user's log, laid out as the appends would have: see [`log_documents`].
    async fn write_log(
        &self,
        user: &str,
        entries: &[(i64, ActivityType, String)],
        limits: ActivityLimits,
        applied: i64,
    ) -> StoreResult<()> {
        let (head, pages) = log_documents(user, entries, limits, applied);
        self.primary()
            .replace_one(doc! { "_id": user }, head)
            .upsert(true)
            .await
            .map_err(db_error)?;
        for document in pages {
            let filter = doc! { "user": user, "page": document.get_i64("page").unwrap_or(0) };
            self.pages()
                .replace_one(filter, document)
                .upsert(true)
                .await
                .map_err(db_error)?;
        }
        let written = (entries.len() as u64).saturating_sub(u64::from(limits.primary_limit));
        let pages = written.div_ceil(u64::from(limits.page_size.max(1)));
        self.pages()
            .delete_many(doc! { "user": user, "page": { "$gte": pages as i64 } })
            .await
            .map_err(db_error)?;
        Ok(())
    }

    /// Every log built from the sources, set-based, for a bulk load (the service is
    /// stopped, so nothing fences it): the old logs dropped, the new documents written
    /// with unordered `insert_many`s. Returns the entries written.
    pub(in crate::store::mongo) async fn build_all_logs(
        &self,
        limits: ActivityLimits,
        applied: i64,
    ) -> StoreResult<u64> {
        let mut logs: BTreeMap<String, Vec<(i64, ActivityType, String)>> = BTreeMap::new();
        let mut entries = 0;
        for (ts, user, kind, reference) in self.events().await? {
            logs.entry(user).or_default().push((ts, kind, reference));
            entries += 1;
        }
        for coll in [self.primary(), self.pages()] {
            coll.delete_many(doc! {}).await.map_err(db_error)?;
        }
        let (mut heads, mut pages) = (Vec::new(), Vec::new());
        for (user, entries) in &logs {
            let (head, more) = log_documents(user, entries, limits, applied);
            heads.push(head);
            pages.extend(more);
            if heads.len() >= WRITE_BATCH {
                insert_unordered(&self.primary(), std::mem::take(&mut heads)).await?;
            }
            if pages.len() >= WRITE_BATCH {
                insert_unordered(&self.pages(), std::mem::take(&mut pages)).await?;
            }
        }
        insert_unordered(&self.primary(), heads).await?;
        insert_unordered(&self.pages(), pages).await?;
        Ok(entries)
    }
}

/// One user's log documents, laid out as the appends would have: the primary document
/// holds the first `primary_limit` entries, pages the rest.
fn log_documents(
    user: &str,
    entries: &[(i64, ActivityType, String)],
    limits: ActivityLimits,
    applied: i64,
) -> (Document, Vec<Document>) {
    let mut primary: Vec<Bson> = Vec::new();
    let mut pages: BTreeMap<u64, Vec<Bson>> = BTreeMap::new();
    for (seq, (ts, kind, reference)) in entries.iter().enumerate() {
        let mut item = entry(*kind, *ts, reference);
        match limits.slot(seq as u64) {
            Slot::Primary => primary.push(Bson::Document(item)),
            Slot::Page(page) => {
                item.insert("seq", seq as i64);
                pages.entry(page).or_default().push(Bson::Document(item));
            }
        }
    }
    let overflow = entries.len() - primary.len();
    let last_ts = entries.iter().map(|e| e.0).max().unwrap_or(0);
    let head = doc! {
        "_id": user,
        "limit": i64::from(limits.primary_limit),
        "pageSize": i64::from(limits.page_size),
        "count": primary.len() as i64,
        "overflowSeq": overflow as i64,
        "hasOverflow": overflow > 0,
        "overflowPages": pages.len() as i64,
        "applied": applied,
        "last_ts": last_ts,
        "activities": primary,
    };
    let pages = pages
        .into_iter()
        .map(|(page, items)| {
            let created = items
                .first()
                .and_then(Bson::as_document)
                .and_then(|d| d.get_i64("ts").ok())
                .unwrap_or_default();
            doc! {
                "user": user,
                "page": page as i64,
                "count": items.len() as i64,
                "activities": items,
                "createdAt": created,
            }
        })
        .collect();
    (head, pages)
}
