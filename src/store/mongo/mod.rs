//! The MongoDB adapter: the design's document layouts and single-document atomic
//! commands. Collections and indexes are listed in the README.

pub mod activity;
mod changes;

use std::sync::Arc;

use anyhow::Context;
use async_trait::async_trait;
use std::future::IntoFuture;

use futures::TryStreamExt;
use mongodb::bson::{Bson, Document, doc, oid::ObjectId};
use mongodb::options::IndexOptions;
use mongodb::{Client, Collection, Database, IndexModel};

use super::{Store, StoreError, StoreResult};
use crate::domain::{
    AuthorView, Bucket, BucketKind, CacheState, Change, ChangePosition, NewUser, Post, PostId,
    PostIdGenerator, TimelineEntry, TimelineKind, User,
};

/// Fan-out writes in flight at once.
const FANOUT_CONCURRENCY: usize = 32;
/// Users per multi-document cache update.
const CACHE_BATCH: usize = 500;
/// Rollover attempts before a sized push gives up; each failed attempt means another
/// writer made progress, so this is only reached under pathological contention.
const MAX_ROLLOVER_ATTEMPTS: usize = 64;

pub struct MongoStore {
    db: Database,
    ids: PostIdGenerator,
}

/// Connects to the database named in the URI, or `socialite`, and creates indexes.
pub async fn connect(uri: &str) -> anyhow::Result<Arc<dyn Store>> {
    Ok(Arc::new(MongoStore::connect(uri).await?))
}

pub(crate) fn backend(error: mongodb::error::Error) -> StoreError {
    StoreError::Backend(anyhow::Error::new(error))
}

pub(crate) fn error_code(error: &mongodb::error::Error) -> Option<i32> {
    use mongodb::error::{ErrorKind, WriteFailure};
    match error.kind.as_ref() {
        ErrorKind::Write(WriteFailure::WriteError(e)) => Some(e.code),
        ErrorKind::Command(e) => Some(e.code),
        ErrorKind::InsertMany(e) => e
            .write_errors
            .as_ref()
            .and_then(|errors| errors.first().map(|e| e.code)),
        _ => None,
    }
}

pub(crate) fn is_duplicate_key(error: &mongodb::error::Error) -> bool {
    error_code(error) == Some(11000) || error.to_string().contains("E11000")
}

/// Every document a find returns.
async fn all(find: mongodb::action::Find<'_, Document>) -> StoreResult<Vec<Document>> {
    find.await
        .map_err(backend)?
        .try_collect()
        .await
        .map_err(backend)
}

/// Whether a document matches, fetching no more than its `_id`.
pub(crate) async fn exists(
    collection: &Collection<Document>,
    filter: Document,
) -> StoreResult<bool> {
    Ok(collection
        .find_one(filter)
        .projection(doc! { "_id": 1 })
        .await
        .map_err(backend)?
        .is_some())
}

pub(crate) fn oid(id: PostId) -> ObjectId {
    ObjectId::from_bytes(id.bytes())
}

fn post_id(value: Option<&Bson>) -> StoreResult<PostId> {
    match value {
        Some(Bson::ObjectId(id)) => Ok(PostId::from_bytes(id.bytes())),
        other => Err(StoreError::Backend(anyhow::anyhow!(
            "expected an ObjectId, found {other:?}"
        ))),
    }
}

pub(crate) fn int(doc: &Document, key: &str) -> i64 {
    match doc.get(key) {
        Some(Bson::Int32(v)) => i64::from(*v),
        Some(Bson::Int64(v)) => *v,
        Some(Bson::Double(v)) => *v as i64,
        _ => 0,
    }
}

pub(crate) fn user_from(doc: &Document) -> StoreResult<User> {
    Ok(User {
        id: doc
            .get_str("_id")
            .map_err(|e| StoreError::Backend(e.into()))?
            .to_owned(),
        display_name: doc.get_str("display_name").unwrap_or_default().to_owned(),
        followers_count: int(doc, "followers_count").max(0) as u64,
        following_count: int(doc, "following_count").max(0) as u64,
        posts_count: int(doc, "posts_count").max(0) as u64,
        created_at_ms: int(doc, "created_at"),
        version: int(doc, "version").max(0) as u64,
    })
}

pub(crate) fn post_from(doc: &Document) -> StoreResult<Post> {
    Ok(Post {
        id: post_id(doc.get("_id"))?,
        author: doc.get_str("author").unwrap_or_default().to_owned(),
        text: doc.get_str("text").unwrap_or_default().to_owned(),
    })
}

/// `{_id, a, m}` when embedding, `{_id, a}` when linking.
fn entry_doc(entry: &TimelineEntry) -> Document {
    let mut doc = doc! { "_id": oid(entry.id), "a": &entry.author };
    if let Some(text) = &entry.text {
        doc.insert("m", text);
    }
    doc
}

fn entries_from(doc: &Document) -> StoreResult<Vec<TimelineEntry>> {
    let mut entries = Vec::new();
    for item in doc.get_array("c").map(|a| a.as_slice()).unwrap_or_default() {
        let Some(item) = item.as_document() else {
            continue;
        };
        entries.push(TimelineEntry {
            id: post_id(item.get("_id"))?,
            author: item.get_str("a").unwrap_or_default().to_owned(),
            text: item.get_str("m").ok().map(str::to_owned),
        });
    }
    entries.sort_unstable_by_key(|e| std::cmp::Reverse(e.id));
    Ok(entries)
}

/// The newest `limit` distinct entries below `before` of entries sorted newest first.
fn newest_below(
    mut entries: Vec<TimelineEntry>,
    before: Option<PostId>,
    limit: usize,
) -> Vec<TimelineEntry> {
    entries.dedup_by_key(|e| e.id);
    if let Some(before) = before {
        entries.retain(|e| e.id < before);
    }
    entries.truncate(limit);
    entries
}

fn bounds(entries: &[TimelineEntry]) -> Option<(ObjectId, ObjectId)> {
    let min = entries.iter().map(|e| e.id).min()?;
    let max = entries.iter().map(|e| e.id).max()?;
    Some((oid(min), oid(max)))
}

pub(crate) fn index(keys: Document, unique: bool) -> IndexModel {
    IndexModel::builder()
        .keys(keys)
        .options(IndexOptions::builder().unique(unique).build())
        .build()
}

/// The database the URI names, or `socialite`.
pub(crate) async fn open_database(uri: &str) -> anyhow::Result<Database> {
    let client = Client::with_uri_str(uri)
        .await
        .context("connecting to MongoDB")?;
    Ok(client
        .default_database()
        .unwrap_or_else(|| client.database("socialite")))
}

impl MongoStore {
    pub async fn connect(uri: &str) -> anyhow::Result<MongoStore> {
        let db = open_database(uri).await?;
        let indexes = [
            ("following", index(doc! { "from": 1, "to": 1 }, true)),
            ("followers", index(doc! { "from": 1, "to": 1 }, true)),
            ("content", index(doc! { "author": 1, "_id": -1 }, false)),
            ("timed_buckets", index(doc! { "_id.u": 1, "mx": -1 }, false)),
            ("timed_buckets", index(doc! { "c._id": 1 }, false)),
            ("sized_buckets", index(doc! { "u": 1, "s": 1 }, true)),
            ("sized_buckets", index(doc! { "u": 1, "mx": -1 }, false)),
            ("sized_buckets", index(doc! { "c._id": 1 }, false)),
            ("timeline_cache", index(doc! { "c._id": 1 }, false)),
        ];
        for (collection, model) in indexes {
            db.collection::<Document>(collection)
                .create_index(model)
                .await
                .with_context(|| format!("creating an index on {collection}"))?;
        }
        let newest = db
            .collection::<Document>("content")
            .find_one(doc! {})
            .sort(doc! { "_id": -1 })
            .projection(doc! { "_id": 1 })
            .await
            .context("reading the newest post id")?;
        let last = match newest {
            Some(doc) => Some(post_id(doc.get("_id"))?),
            None => None,
        };
        let node = (std::process::id() as u16) ^ (crate::domain::now_ms() as u16);
        Ok(MongoStore {
            db,
            ids: PostIdGenerator::new(node, last),
        })
    }

    fn collection(&self, name: &str) -> Collection<Document> {
        self.db.collection(name)
    }

    fn users_coll(&self) -> Collection<Document> {
        self.collection("users")
    }

    fn content(&self) -> Collection<Document> {
        self.collection("content")
    }

    fn cache_coll(&self) -> Collection<Document> {
        self.collection("timeline_cache")
    }

    fn bucket_coll(&self, kind: BucketKind) -> Collection<Document> {
        self.collection(match kind {
            BucketKind::Timed => "timed_buckets",
            BucketKind::Sized => "sized_buckets",
        })
    }

    /// The users that exist among `ids`, in no particular order.
    async fn users(&self, ids: &[String]) -> StoreResult<Vec<User>> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let docs = all(self.users_coll().find(doc! { "_id": { "$in": ids } })).await?;
        docs.iter().map(user_from).collect()
    }

    /// The subset of `candidates` that `user` follows.
    async fn followed_among(&self, user: &str, candidates: &[String]) -> StoreResult<Vec<String>> {
        if candidates.is_empty() {
            return Ok(Vec::new());
        }
        let docs = all(self
            .collection("following")
            .find(doc! { "from": user, "to": { "$in": candidates } })
            .projection(doc! { "to": 1, "_id": 0 }))
        .await?;
        Ok(docs
            .iter()
            .filter_map(|d| d.get_str("to").ok().map(str::to_owned))
            .collect())
    }

    async fn exists(&self, collection: &str, filter: Document) -> StoreResult<bool> {
        exists(&self.collection(collection), filter).await
    }

    async fn inc_user(&self, id: &str, field: &str, delta: i64) -> StoreResult<()> {
        self.users_coll()
            .update_one(doc! { "_id": id }, doc! { "$inc": { field: delta } })
            .await
            .map_err(backend)?;
        Ok(())
    }

    async fn ids_from(
        &self,
        collection: &str,
        from: &str,
        after: Option<&str>,
        limit: usize,
    ) -> StoreResult<Vec<String>> {
        let mut filter = doc! { "from": from };
        if let Some(after) = after {
            filter.insert("to", doc! { "$gt": after });
        }
        let docs = all(self
            .collection(collection)
            .find(filter)
            .sort(doc! { "to": 1 })
            .limit(limit as i64)
            .projection(doc! { "to": 1, "_id": 0 }))
        .await?;
        Ok(docs
            .iter()
            .filter_map(|d| d.get_str("to").ok().map(str::to_owned))
            .collect())
    }

    async fn find_posts(&self, filter: Document, limit: usize) -> StoreResult<Vec<Post>> {
        let docs = all(self
            .content()
            .find(filter)
            .sort(doc! { "_id": -1 })
            .limit(limit as i64))
        .await?;
        docs.iter().map(post_from).collect()
    }

    /// One entry into one user's sized buckets. Race-free because every step is a single
    /// atomic document operation: the push only matches a bucket with room (`n <
    /// size`), so no bucket ever passes its size; a new bucket is an insert guarded by the
    /// unique `{u, s}` index, so two writers that both saw a full bucket cannot both
    /// create bucket `s + 1` — the loser gets 11000 and retries the push, which now finds
    /// the winner's bucket. A new bucket is only opened after the newest one was seen
    /// full, so buckets fill in order. Each entry is written by exactly one successful
    /// operation, so nothing is lost or duplicated.
    async fn sized_push_one(
        &self,
        user: &str,
        entry: &TimelineEntry,
        size: u32,
    ) -> StoreResult<()> {
        let coll = self.bucket_coll(BucketKind::Sized);
        let id = oid(entry.id);
        for _ in 0..MAX_ROLLOVER_ATTEMPTS {
            let pushed = coll
                .find_one_and_update(
                    doc! { "u": user, "n": { "$lt": i64::from(size) } },
                    doc! {
                        "$push": { "c": entry_doc(entry) },
                        "$inc": { "n": 1_i64 },
                        "$min": { "mn": id },
                        "$max": { "mx": id },
                    },
                )
                .sort(doc! { "s": -1 })
                .projection(doc! { "_id": 1 })
                .await
                .map_err(backend)?;
            if pushed.is_some() {
                return Ok(());
            }
            let newest = coll
                .find_one(doc! { "u": user })
                .sort(doc! { "s": -1 })
                .projection(doc! { "s": 1, "n": 1 })
                .await
                .map_err(backend)?;
            // A writer that created the newest bucket after our push missed it has left
            // room: push again rather than open a bucket past a non-full one.
            if newest
                .as_ref()
                .is_some_and(|d| int(d, "n") < i64::from(size))
            {
                continue;
            }
            let next = newest.map(|d| int(&d, "s") + 1).unwrap_or(0);
            let bucket = doc! {
                "_id": ObjectId::new(), "u": user, "s": next, "n": 1_i64,
                "mn": id, "mx": id, "c": [entry_doc(entry)],
            };
            match coll.insert_one(bucket).await {
                Ok(_) => return Ok(()),
                Err(error) if is_duplicate_key(&error) => continue,
                Err(error) => return Err(backend(error)),
            }
        }
        Err(StoreError::Backend(anyhow::anyhow!(
            "sized bucket rollover for {user} did not settle after {MAX_ROLLOVER_ATTEMPTS} attempts"
        )))
    }
}

#[async_trait]
impl Store for MongoStore {
    fn backend(&self) -> &'static str {
        "mongodb"
    }

    async fn ping(&self) -> StoreResult<()> {
        self.db
            .run_command(doc! { "ping": 1 })
            .await
            .map_err(backend)?;
        Ok(())
    }

    async fn create_user(&self, user: &NewUser) -> StoreResult<User> {
        let doc = doc! {
            "_id": &user.id, "display_name": &user.display_name,
            "followers_count": 0_i64, "following_count": 0_i64, "posts_count": 0_i64,
            "created_at": user.created_at_ms, "version": 0_i64,
        };
        match self.users_coll().insert_one(doc.clone()).await {
            Ok(_) => user_from(&doc),
            Err(error) if is_duplicate_key(&error) => {
                Err(StoreError::Conflict(format!("user {}", user.id)))
            }
            Err(error) => Err(backend(error)),
        }
    }

    async fn user(&self, id: &str) -> StoreResult<Option<User>> {
        let found = self
            .users_coll()
            .find_one(doc! { "_id": id })
            .await
            .map_err(backend)?;
        found.as_ref().map(user_from).transpose()
    }

    /// A read and a guarded `replace_one`, retried when a counter moved in between:
    /// replace events carry the whole document on every server, which keeps the change
    /// feed's user documents complete.
    async fn rename_user(&self, id: &str, display_name: &str) -> StoreResult<Option<User>> {
        for _ in 0..16 {
            let Some(current) = self
                .users_coll()
                .find_one(doc! { "_id": id })
                .await
                .map_err(backend)?
            else {
                return Ok(None);
            };
            let mut next = current.clone();
            next.insert("display_name", display_name);
            next.insert("version", int(&current, "version") + 1);
            let replaced = self
                .users_coll()
                .replace_one(current, next.clone())
                .await
                .map_err(backend)?;
            if replaced.matched_count == 1 {
                return user_from(&next).map(Some);
            }
        }
        Err(StoreError::Backend(anyhow::anyhow!(
            "renaming {id} kept racing with counter updates"
        )))
    }

    async fn follow(&self, follower: &str, followee: &str, now_ms: i64) -> StoreResult<bool> {
        for id in [follower, followee] {
            if !self.exists("users", doc! { "_id": id }).await? {
                return Err(StoreError::NotFound(format!("user {id}")));
            }
        }
        // The reverse edge first (an idempotent upsert), then the forward edge, whose
        // insert decides whether this call added the follow and so moves the counters.
        // A crash between the insert and the counters leaves them one short; the change
        // feed carries the edge, so a repair job can recount.
        let key = format!("{follower}/{followee}");
        self.collection("followers")
            .update_one(
                doc! { "_id": &key },
                doc! { "$setOnInsert": { "from": followee, "to": follower, "created_at": now_ms } },
            )
            .upsert(true)
            .await
            .map_err(backend)?;
        let edge = doc! { "_id": &key, "from": follower, "to": followee, "created_at": now_ms };
        match self.collection("following").insert_one(edge).await {
            Ok(_) => {}
            Err(error) if is_duplicate_key(&error) => return Ok(false),
            Err(error) => return Err(backend(error)),
        }
        self.inc_user(follower, "following_count", 1).await?;
        self.inc_user(followee, "followers_count", 1).await?;
        Ok(true)
    }

    async fn unfollow(&self, follower: &str, followee: &str) -> StoreResult<bool> {
        let key = format!("{follower}/{followee}");
        let removed = self
            .collection("following")
            .delete_one(doc! { "_id": &key })
            .await
            .map_err(backend)?;
        self.collection("followers")
            .delete_one(doc! { "_id": &key })
            .await
            .map_err(backend)?;
        if removed.deleted_count == 0 {
            return Ok(false);
        }
        self.inc_user(follower, "following_count", -1).await?;
        self.inc_user(followee, "followers_count", -1).await?;
        Ok(true)
    }

    async fn following(
        &self,
        user: &str,
        after: Option<&str>,
        limit: usize,
    ) -> StoreResult<Vec<String>> {
        self.ids_from("following", user, after, limit).await
    }

    async fn followers(
        &self,
        user: &str,
        after: Option<&str>,
        limit: usize,
    ) -> StoreResult<Vec<String>> {
        self.ids_from("followers", user, after, limit).await
    }

    /// Two queries, run at once.
    async fn authors(&self, reader: &str, authors: &[String]) -> StoreResult<Vec<AuthorView>> {
        let (users, followed) =
            futures::try_join!(self.users(authors), self.followed_among(reader, authors))?;
        let followed: std::collections::HashSet<String> = followed.into_iter().collect();
        Ok(users
            .into_iter()
            .map(|user| AuthorView {
                followed: followed.contains(&user.id),
                id: user.id,
                display_name: user.display_name,
            })
            .collect())
    }

    async fn insert_post(&self, author: &str, text: &str, now_ms: i64) -> StoreResult<Post> {
        if !self.exists("users", doc! { "_id": author }).await? {
            return Err(StoreError::NotFound(format!("user {author}")));
        }
        // Another process may hand out the same id; the unique `_id` sends us round again.
        for _ in 0..16 {
            let id = self.ids.next(now_ms);
            let post = Post {
                id,
                author: author.to_owned(),
                text: text.to_owned(),
            };
            let doc = doc! { "_id": oid(id), "author": author, "text": text };
            match self.content().insert_one(doc).await {
                Ok(_) => {
                    self.inc_user(author, "posts_count", 1).await?;
                    return Ok(post);
                }
                Err(error) if is_duplicate_key(&error) => continue,
                Err(error) => return Err(backend(error)),
            }
        }
        Err(StoreError::Backend(anyhow::anyhow!(
            "could not find a free post id"
        )))
    }

    async fn post(&self, id: PostId) -> StoreResult<Option<Post>> {
        let found = self
            .content()
            .find_one(doc! { "_id": oid(id) })
            .await
            .map_err(backend)?;
        found.as_ref().map(post_from).transpose()
    }

    /// A read, then `delete_one`: only the caller whose delete removed the document
    /// reports the post. (`findOneAndDelete` would be one round trip, but the test
    /// stand-in leaves it out of the oplog, and so out of the change feed.)
    async fn delete_post(&self, id: PostId) -> StoreResult<Option<Post>> {
        let Some(post) = self.post(id).await? else {
            return Ok(None);
        };
        let deleted = self
            .content()
            .delete_one(doc! { "_id": oid(id) })
            .await
            .map_err(backend)?;
        if deleted.deleted_count == 0 {
            return Ok(None);
        }
        self.inc_user(&post.author, "posts_count", -1).await?;
        Ok(Some(post))
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

    async fn posts_by_ids(&self, ids: &[PostId]) -> StoreResult<Vec<Post>> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let ids: Vec<ObjectId> = ids.iter().map(|id| oid(*id)).collect();
        let docs = all(self.content().find(doc! { "_id": { "$in": ids } })).await?;
        docs.iter().map(post_from).collect()
    }

    async fn home_posts(
        &self,
        user: &str,
        before: Option<PostId>,
        limit: usize,
    ) -> StoreResult<Vec<Post>> {
        let mut authors = self
            .ids_from("following", user, None, usize::MAX >> 2)
            .await?;
        authors.push(user.to_owned());
        let mut filter = doc! { "author": { "$in": authors } };
        if let Some(before) = before {
            filter.insert("_id", doc! { "$lt": oid(before) });
        }
        self.find_posts(filter, limit).await
    }

    async fn timed_push(
        &self,
        users: &[String],
        key: i64,
        entries: &[TimelineEntry],
    ) -> StoreResult<()> {
        let Some((min, max)) = bounds(entries) else {
            return Ok(());
        };
        let coll = self.bucket_coll(BucketKind::Timed);
        let each: Vec<Document> = entries.iter().map(entry_doc).collect();
        let update = doc! {
            "$push": { "c": { "$each": each } },
            "$inc": { "n": entries.len() as i64 },
            "$min": { "mn": min },
            "$max": { "mx": max },
        };
        for batch in users.chunks(FANOUT_CONCURRENCY) {
            futures::future::try_join_all(batch.iter().map(|user| {
                coll.update_one(doc! { "_id": { "u": user, "t": key } }, update.clone())
                    .upsert(true)
                    .into_future()
            }))
            .await
            .map_err(backend)?;
        }
        Ok(())
    }

    async fn sized_push(
        &self,
        users: &[String],
        entries: &[TimelineEntry],
        bucket_size: u32,
    ) -> StoreResult<()> {
        for batch in users.chunks(FANOUT_CONCURRENCY) {
            futures::future::try_join_all(batch.iter().map(|user| async move {
                for entry in entries {
                    self.sized_push_one(user, entry, bucket_size).await?;
                }
                StoreResult::Ok(())
            }))
            .await?;
        }
        Ok(())
    }

    async fn buckets(
        &self,
        kind: BucketKind,
        user: &str,
        before: Option<PostId>,
        skip: usize,
        limit: usize,
        per_bucket: usize,
    ) -> StoreResult<Vec<Bucket>> {
        let (mut filter, sort) = match kind {
            BucketKind::Timed => (doc! { "_id.u": user }, doc! { "mx": -1, "_id.t": -1 }),
            BucketKind::Sized => (doc! { "u": user }, doc! { "mx": -1, "s": -1 }),
        };
        if let Some(before) = before {
            filter.insert("mn", doc! { "$lt": oid(before) });
        }
        let docs = all(self
            .bucket_coll(kind)
            .find(filter)
            .sort(sort)
            .skip(skip as u64)
            .limit(limit as i64))
        .await?;
        docs.iter()
            .map(|doc| {
                let key = match kind {
                    BucketKind::Timed => doc
                        .get_document("_id")
                        .map(|id| int(id, "t"))
                        .unwrap_or_default(),
                    BucketKind::Sized => int(doc, "s"),
                };
                Ok(Bucket {
                    key,
                    pushes: int(doc, "n").max(0) as u64,
                    newest: post_id(doc.get("mx"))?,
                    entries: newest_below(entries_from(doc)?, before, per_bucket),
                })
            })
            .collect()
    }

    async fn cache_push(
        &self,
        users: &[String],
        entries: &[TimelineEntry],
        cache_size: u32,
    ) -> StoreResult<u64> {
        if entries.is_empty() {
            return Ok(0);
        }
        let each: Vec<Document> = entries.iter().map(entry_doc).collect();
        let update = doc! { "$push": { "c": {
            "$each": each, "$sort": { "_id": 1 }, "$slice": -i64::from(cache_size),
        } } };
        let mut written = 0;
        // `upsert: false`: only users who already have a cache get the entry.
        for batch in users.chunks(CACHE_BATCH) {
            let result = self
                .cache_coll()
                .update_many(doc! { "_id": { "$in": batch } }, update.clone())
                .await
                .map_err(backend)?;
            written += result.matched_count;
        }
        Ok(written)
    }

    /// The author, then the followers in batches, each one `updateMany` that matches
    /// only existing caches.
    async fn cache_push_to_audience(
        &self,
        author: &str,
        entries: &[TimelineEntry],
        cache_size: u32,
    ) -> StoreResult<u64> {
        crate::feed::in_follower_batches(self, author, |batch| async move {
            self.cache_push(&batch, entries, cache_size).await
        })
        .await
    }

    async fn cache(&self, user: &str) -> StoreResult<Option<CacheState>> {
        let found = self
            .cache_coll()
            .find_one(doc! { "_id": user })
            .await
            .map_err(backend)?;
        let Some(doc) = found else {
            return Ok(None);
        };
        Ok(Some(CacheState {
            ready: doc.get_bool("ready").unwrap_or(false),
            started_at_ms: int(&doc, "started"),
            entries: entries_from(&doc)?,
        }))
    }

    async fn cache_start(&self, user: &str, now_ms: i64) -> StoreResult<bool> {
        let result = self
            .cache_coll()
            .update_one(
                doc! { "_id": user },
                doc! { "$setOnInsert": { "ready": false, "started": now_ms, "c": [] } },
            )
            .upsert(true)
            .await
            .map_err(backend)?;
        Ok(result.upserted_id.is_some())
    }

    async fn cache_fill(
        &self,
        user: &str,
        entries: &[TimelineEntry],
        cache_size: u32,
    ) -> StoreResult<()> {
        let each: Vec<Document> = entries.iter().map(entry_doc).collect();
        self.cache_coll()
            .update_one(
                doc! { "_id": user },
                doc! {
                    "$push": { "c": {
                        "$each": each, "$sort": { "_id": 1 }, "$slice": -i64::from(cache_size),
                    } },
                    "$set": { "ready": true },
                },
            )
            .await
            .map_err(backend)?;
        Ok(())
    }

    async fn remove_author_entries(
        &self,
        kind: TimelineKind,
        user: &str,
        author: &str,
    ) -> StoreResult<()> {
        let pull = doc! { "$pull": { "c": { "a": author } } };
        let (coll, filter) = match kind {
            TimelineKind::Buckets(BucketKind::Timed) => (
                self.bucket_coll(BucketKind::Timed),
                doc! { "_id.u": user, "c.a": author },
            ),
            TimelineKind::Buckets(BucketKind::Sized) => (
                self.bucket_coll(BucketKind::Sized),
                doc! { "u": user, "c.a": author },
            ),
            TimelineKind::Cache => (self.cache_coll(), doc! { "_id": user }),
        };
        coll.update_many(filter, pull).await.map_err(backend)?;
        Ok(())
    }

    async fn remove_post_entries(&self, kind: TimelineKind, post: PostId) -> StoreResult<()> {
        let coll = match kind {
            TimelineKind::Buckets(kind) => self.bucket_coll(kind),
            TimelineKind::Cache => self.cache_coll(),
        };
        let id = oid(post);
        coll.update_many(
            doc! { "c._id": id },
            doc! { "$pull": { "c": { "_id": id } } },
        )
        .await
        .map_err(backend)?;
        Ok(())
    }

    async fn changes(
        &self,
        after: Option<&ChangePosition>,
        limit: usize,
    ) -> StoreResult<Vec<Change>> {
        changes::read(&self.db, after, limit).await
    }

    /// The oplog's size is MongoDB's retention; nothing to trim here.
    async fn trim_changes(&self, _older_than_ms: i64) -> StoreResult<u64> {
        Ok(0)
    }
}
