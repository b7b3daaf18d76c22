//! Posts on MongoDB: `content` `{_id: ObjectId, author, text, reply_to?, replies_count?}`,
//! indexed `{author: 1, _id: -1}` (replies: see `threads.rs`).
//!
//! A post is inserted carrying a claim mark (`pending`, see `claims`) until its author's
//! `posts_count` has moved, like a follow edge. A writer that dies between the insert
//! and the `$inc` leaves the mark, so a later delete of that post knows the count may
//! never have counted it: it waits for the mark to go stale, deletes and recounts,
//! instead of moving the count down below the author's other posts. The insert is in
//! `content/insert.rs`, listings across authors in `listings.rs`, hashtags in `tags.rs`.

mod insert;
mod listings;
pub(super) mod tags;

use std::collections::HashMap;

use async_trait::async_trait;
use futures::{StreamExt, TryStreamExt};
use mongodb::bson::{Document, doc, oid::ObjectId};

use super::threads;
use super::{IndexSpec, MongoStore, Side, all, db_error, index, oid, post_from, post_id};
use crate::domain::{NameStamp, Post, PostId};
use crate::store::{
    ContentStore, Counter, Inserted, PostRange, RelationStore, StoreError, StoreResult,
};

/// Authors per fanout-on-read query. Past about 200 values in one `$in`, the planner
/// stops merging the `{author, _id}` index ranges in order and sorts instead.
const AUTHORS_PER_QUERY: usize = 100;
/// Fanout-on-read queries in flight at once for one read.
const HOME_QUERIES_IN_FLIGHT: usize = 8;

/// A deleted post, kept for a while so the change feed can carry it with its delete
/// event (see `changes::fill_deleted_posts`): `{_id: post id, author, text, reply_to?,
/// at: Date}`.
pub(super) const DELETED_POSTS: &str = "deleted_posts";

/// How long a tombstone outlives its post. A delete event is read from the oplog; once
/// it has rolled off, readers get `HistoryLost` and rebuild from the sources, which never
/// need tombstones. So a tombstone must outlive the oplog window, which MongoDB sizes by
/// bytes (or `oplogMinRetentionHours`), usually hours to a few days: 30 days, the
/// embedded feed's `change_feed.max_retention` default, covers it with a wide margin
/// while bounding the collection to a month of deletes.
const TOMBSTONE_TTL: std::time::Duration = std::time::Duration::from_secs(30 * 24 * 3600);

pub(super) fn indexes() -> Vec<IndexSpec> {
    let ttl = mongodb::IndexModel::builder()
        .keys(doc! { "at": 1 })
        .options(
            mongodb::options::IndexOptions::builder()
                .expire_after(TOMBSTONE_TTL)
                .build(),
        )
        .build();
    vec![
        ("content", index(doc! { "author": 1, "_id": -1 }, false)),
        tags::tag_index(),
        (DELETED_POSTS, ttl),
    ]
}

/// A filter for posts by id that also names their authors when known, so that a
/// cluster sharded on `{author: 1, _id: 1}` sends it only to those authors' shards.
fn by_ids(ids: &[PostId], authors: &[String]) -> Document {
    let ids: Vec<ObjectId> = ids.iter().map(|id| oid(*id)).collect();
    let mut filter = doc! { "_id": { "$in": ids } };
    if !authors.is_empty() {
        filter.insert("author", doc! { "$in": authors });
    }
    filter
}

impl MongoStore {
    async fn find_posts(&self, filter: Document, limit: usize) -> StoreResult<Vec<Post>> {
        let docs = all(self
            .content_coll()
            .find(filter)
            .sort(doc! { "_id": -1 })
            .limit(limit as i64))
        .await?;
        docs.iter().map(post_from).collect()
    }
}

#[async_trait]
impl ContentStore for MongoStore {
    async fn insert_post(
        &self,
        author: &str,
        text: &str,
        in_reply_to: Option<PostId>,
        now_ms: i64,
    ) -> StoreResult<Inserted> {
        let prepared = self.prepare_post(author, in_reply_to).await?;
        // Another process may hand out the same id; the unique `_id` sends us round again.
        for _ in 0..16 {
            let id = self.ids.next(now_ms);
            if let Some(inserted) = self.insert_post_as(id, author, text, &prepared).await? {
                return Ok(inserted);
            }
        }
        Err(StoreError::Backend(anyhow::anyhow!(
            "could not find a free post id"
        )))
    }

    async fn post(&self, id: PostId) -> StoreResult<Option<Post>> {
        let found = self
            .content_coll()
            .find_one(doc! { "_id": oid(id) })
            .await
            .map_err(db_error)?;
        found.as_ref().map(post_from).transpose()
    }

    /// A read, then `delete_one`: only the caller whose delete removed the document
    /// reports the post. (`findOneAndDelete` would be one round trip, but the test
    /// stand-in leaves it out of the oplog, and so out of the change feed.)
    /// The tombstone is written first, so the delete event never reaches a reader before
    /// it: a crash in between leaves a tombstone of a live post, which nothing reads.
    /// The call that claims the post removes it (see `claims`): it moves the counter
    /// down before the delete, as an unfollow moves its counters (see `unfollow`), so a
    /// recount can never land between the delete and the decrement; a second delete of
    /// the same post waits for the claim rather than moving the counter again.
    async fn delete_post(&self, id: PostId) -> StoreResult<Option<Post>> {
        let Some(post) = self.post(id).await? else {
            return Ok(None);
        };
        let filter = doc! { "_id": oid(id), "author": &post.author };
        let counters = [(post.author.as_str(), "posts_count")];
        let tombstone = || self.tombstone(&post);
        let removed = self
            .remove_claimed(
                &self.content_coll(),
                &filter,
                &counters,
                post.reply_to.as_ref().map(|r| (Counter::Replies, r)),
                tombstone,
            )
            .await?;
        Ok(removed.then_some(post))
    }

    async fn posts_by_author(
        &self,
        author: &str,
        before: Option<PostId>,
        limit: usize,
    ) -> StoreResult<Vec<Post>> {
        let mut filter = doc! { "author": author };
        if let Some(before) = before {
            filter.insert("_id", doc! { "$lt": oid(before) });
        }
        self.find_posts(filter, limit).await
    }

    async fn posts_by_ids(&self, ids: &[PostId], authors: &[String]) -> StoreResult<Vec<Post>> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let docs = all(self.content_coll().find(by_ids(ids, authors))).await?;
        docs.iter().map(post_from).collect()
    }

    async fn existing_posts(&self, ids: &[PostId], authors: &[String]) -> StoreResult<Vec<PostId>> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        // Projected to `_id`, the query is covered by an index (`_id`, or
        // `{author, _id}` with the authors).
        let docs = all(self
            .content_coll()
            .find(by_ids(ids, authors))
            .projection(doc! { "_id": 1 }))
        .await?;
        docs.iter().map(|d| post_id(d.get("_id"))).collect()
    }

    /// The followees and the user (see [`MongoStore::posts_of_authors`]).
    async fn home_posts(
        &self,
        user: &str,
        before: Option<PostId>,
        limit: usize,
    ) -> StoreResult<Vec<Post>> {
        let mut authors = self
            .neighbours(Side::Followees, user, None, false, usize::MAX >> 2)
            .await?;
        authors.push(user.to_owned());
        self.posts_of_authors(&authors, before, limit).await
    }

    /// The followees and the reader's hidden set read at once, the hidden followees
    /// left out before any post is read.
    async fn shown_home_posts(
        &self,
        user: &str,
        before: Option<PostId>,
        limit: usize,
        now_ms: i64,
    ) -> StoreResult<Vec<(Post, NameStamp)>> {
        let (mut authors, hidden) = tokio::try_join!(
            self.neighbours(Side::Followees, user, None, false, usize::MAX >> 2),
            RelationStore::hidden(self, user, now_ms)
        )?;
        authors.retain(|a| !hidden.hides(a));
        authors.push(user.to_owned());
        let posts = self.posts_of_authors(&authors, before, limit).await?;
        // The names of the page's authors alone, read after their posts, so each is at
        // least as new as the read.
        let mut shown: Vec<String> = posts.iter().map(|p| p.author.clone()).collect();
        shown.sort_unstable();
        shown.dedup();
        let names = match shown.is_empty() {
            true => HashMap::new(),
            false => self.name_stamps(&shown).await?,
        };
        Ok(named(posts, &names))
    }

    /// Two queries: the flagged followees (`{from, merged}` index), then their posts
    /// (`{author, _id}` index).
    async fn merged_posts(
        &self,
        user: &str,
        before: Option<PostId>,
        above: Option<PostId>,
        limit: usize,
    ) -> StoreResult<Vec<(Post, NameStamp)>> {
        let authors = self.merged_followees(user).await?;
        if authors.is_empty() {
            return Ok(Vec::new());
        }
        let mut filter = doc! { "author": { "$in": &authors } };
        super::within_ids(&mut filter, before, above);
        // The names are read beside the posts, never before them, so each is at least as
        // new as the read: a rename finished before the page began is served.
        let (posts, names) =
            tokio::try_join!(self.find_posts(filter, limit), self.name_stamps(&authors))?;
        Ok(named(posts, &names))
    }

    async fn public_posts(&self, range: PostRange, limit: usize) -> StoreResult<Vec<Post>> {
        self.listed_posts(range, limit).await
    }

    async fn tagged_posts(
        &self,
        tag: &str,
        range: PostRange,
        limit: usize,
    ) -> StoreResult<Vec<Post>> {
        self.tag_listing(tag, range, limit).await
    }
}

impl MongoStore {
    /// Records the deleted post for the change feed, which fills post deletes from
    /// tombstones; before the post goes, so no delete reaches the feed without one.
    async fn tombstone(&self, post: &Post) -> StoreResult<()> {
        let mut fields = doc! {
            "author": &post.author, "text": &post.text,
            "at": mongodb::bson::DateTime::now(),
        };
        if let Some(parent) = &post.reply_to {
            fields.insert(threads::REPLY_TO, threads::reply_doc(parent));
        }
        self.collection(DELETED_POSTS)
            .update_one(doc! { "_id": oid(post.id) }, doc! { "$set": fields })
            .upsert(true)
            .await
            .map_err(db_error)?;
        Ok(())
    }
}

impl MongoStore {
    /// The newest `limit` posts by `authors` below `before`, newest first: the list in
    /// batches of [`AUTHORS_PER_QUERY`], each batch one query that the `{author, _id}`
    /// index answers in order, a few at once; the newest `limit` of their union is the
    /// answer, since each batch returns its own newest `limit`.
    async fn posts_of_authors(
        &self,
        authors: &[String],
        before: Option<PostId>,
        limit: usize,
    ) -> StoreResult<Vec<Post>> {
        let queries: Vec<_> = authors
            .chunks(AUTHORS_PER_QUERY)
            .map(|batch| {
                let mut filter = doc! { "author": { "$in": batch } };
                if let Some(before) = before {
                    filter.insert("_id", doc! { "$lt": oid(before) });
                }
                self.find_posts(filter, limit)
            })
            .collect();
        let batches: Vec<Vec<Post>> = futures::stream::iter(queries)
            .buffer_unordered(HOME_QUERIES_IN_FLIGHT)
            .try_collect()
            .await?;
        let mut posts: Vec<Post> = batches.into_iter().flatten().collect();
        posts.sort_unstable_by_key(|p| std::cmp::Reverse(p.id));
        posts.dedup_by_key(|p| p.id);
        posts.truncate(limit);
        Ok(posts)
    }
}

/// Each post with its author's name from `names`; an author without a profile is named
/// by their id, as a page names them.
fn named(posts: Vec<Post>, names: &HashMap<String, NameStamp>) -> Vec<(Post, NameStamp)> {
    posts
        .into_iter()
        .map(|post| {
            let name = names
                .get(&post.author)
                .cloned()
                .unwrap_or_else(|| NameStamp {
                    display_name: post.author.clone(),
                    version: 0,
                });
            (post, name)
        })
        .collect()
}
