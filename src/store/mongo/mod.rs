//! The MongoDB adapter: the design's document layouts and single-document atomic
//! commands. Collections and indexes are listed in docs/mongodb.md.

//!
//! One file per port (`users.rs`, `graph.rs`, `content.rs`, `timelines.rs`,
//! `changes.rs`, `activity.rs`); this one holds the shared plumbing: the connection,
//! index creation, error mapping and BSON conversions.

mod activity;
mod audit;
mod bulk;
mod changes;
mod claims;
mod content;
mod deliveries;
mod driver;
mod events;
mod graph;
mod idempotency;
mod intents;
mod leases;
mod markers;
mod name_words;
mod notifications;
mod oauth;
mod post_counts;
mod readonly;
mod relations;
mod reposts;
mod threads;
mod timelines;
mod tokens;
mod trends;
mod users;

use std::sync::Arc;

use anyhow::Context;
use async_trait::async_trait;
use mongodb::bson::{Bson, Document, doc, oid::ObjectId};
use mongodb::options::{
    Acknowledgment, ClientOptions, IndexOptions, ReadConcern, ReadPreference, SelectionCriteria,
    WriteConcern,
};
use mongodb::{Client, Collection, Database, IndexModel};

use super::{Health, Store, StoreError, StoreResult};
use crate::domain::{BucketKind, Post, PostId, PostIdGenerator, User};

use driver::{all, db_error, error_code, exists, insert_new, is_duplicate_key};

pub struct MongoStore {
    db: Database,
    ids: PostIdGenerator,
    /// Open change streams kept between reads of the change feed.
    streams: changes::Streams,
    /// Whether `prepare_log` found capped collections and created the event log.
    event_log: std::sync::atomic::AtomicBool,
    /// This handle's registration as a server (`bulk/gate.rs`).
    serving: bulk::Registration,
}

/// The field of a user document that every write to its counters increments, and of a
/// post document every write to its `replies_count` or `reposts_count`, so that a
/// recount writes only where no count moved since it read (see `Counted`,
/// `post_counts.rs`). A document written before it existed has none, which counts as 0.
pub(super) const COUNTER_VERSION: &str = "counter_version";

/// A filter on [`COUNTER_VERSION`]: `version`, where a missing version counts as 0.
pub(super) fn version_is(version: i64) -> Bson {
    match version {
        0 => Bson::Document(doc! { "$in": [0_i64, Bson::Null] }),
        v => Bson::Int64(v),
    }
}

/// A collection and one index on it.
pub(super) type IndexSpec = (&'static str, IndexModel);

/// Which end of a user's follow edges to list.
#[derive(Debug, Clone, Copy)]
pub(super) enum Side {
    /// The users they follow.
    Followees,
    /// The users following them.
    Followers,
}

/// Connects to the database named in the URI, or `socialite`, and creates indexes.
pub async fn connect(uri: &str) -> anyhow::Result<Store> {
    Ok(Store::new(Arc::new(MongoStore::connect(uri).await?)))
}

/// Connects to the database named in the URI, or `socialite`, for reading only
/// (`readonly.rs`): nothing created, refused unless it holds a socialite store.
pub async fn connect_read_only(uri: &str) -> anyhow::Result<Store> {
    Ok(Store::new(Arc::new(
        MongoStore::connect_read_only(uri).await?,
    )))
}

/// Adds to `filter` the `_id` window strictly between `above` and `before` (either may be
/// open), as the merged reads of posts and of reposts page.
pub(super) fn within_ids(filter: &mut Document, before: Option<PostId>, above: Option<PostId>) {
    let mut bounds = Document::new();
    if let Some(before) = before {
        bounds.insert("$lt", oid(before));
    }
    if let Some(above) = above {
        bounds.insert("$gt", oid(above));
    }
    if !bounds.is_empty() {
        filter.insert("_id", bounds);
    }
}

pub(super) fn oid(id: PostId) -> ObjectId {
    ObjectId::from_bytes(id.bytes())
}

pub(super) fn post_id(value: Option<&Bson>) -> StoreResult<PostId> {
    match value {
        Some(Bson::ObjectId(id)) => Ok(PostId::from_bytes(id.bytes())),
        other => Err(StoreError::Backend(anyhow::anyhow!(
            "expected an ObjectId, found {other:?}"
        ))),
    }
}

pub(super) fn int(doc: &Document, key: &str) -> i64 {
    match doc.get(key) {
        Some(Bson::Int32(v)) => i64::from(*v),
        Some(Bson::Int64(v)) => *v,
        Some(Bson::Double(v)) => *v as i64,
        _ => 0,
    }
}

pub(super) fn user_from(doc: &Document) -> StoreResult<User> {
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

pub(super) fn post_from(doc: &Document) -> StoreResult<Post> {
    Ok(Post {
        id: post_id(doc.get("_id"))?,
        author: doc.get_str("author").unwrap_or_default().to_owned(),
        text: doc.get_str("text").unwrap_or_default().to_owned(),
        reply_to: threads::reply_from(doc)?,
        replies_count: int(doc, threads::REPLIES_COUNT).max(0) as u64,
        reposts_count: int(doc, reposts::REPOSTS_COUNT).max(0) as u64,
    })
}

pub(super) fn index(keys: Document, unique: bool) -> IndexModel {
    IndexModel::builder()
        .keys(keys)
        .options(IndexOptions::builder().unique(unique).build())
        .build()
}

/// The database the URI names, or `socialite`.
///
/// Concerns are pinned here rather than left to the URI, because correctness depends on
/// them: every write waits for a journaled majority (`w: majority, j: true`), so an
/// acknowledged post, follow or lease survives a primary failover; every read uses read
/// concern `majority`, so nothing read can be rolled back later (a worker never derives
/// data from a write that then vanishes); and reads go to the primary, so a client
/// reads its own acknowledged writes.
async fn open_database(uri: &str) -> anyhow::Result<Database> {
    let mut options = ClientOptions::parse(uri)
        .await
        .context("parsing the MongoDB URI")?;
    options.write_concern = Some(
        WriteConcern::builder()
            .w(Acknowledgment::Majority)
            .journal(true)
            .build(),
    );
    options.read_concern = Some(ReadConcern::majority());
    options.selection_criteria = Some(SelectionCriteria::ReadPreference(ReadPreference::Primary));
    let client = Client::with_options(options).context("connecting to MongoDB")?;
    Ok(client
        .default_database()
        .unwrap_or_else(|| client.database("socialite")))
}

impl MongoStore {
    pub async fn connect(uri: &str) -> anyhow::Result<MongoStore> {
        let db = open_database(uri).await?;
        // Each port file declares the indexes its queries need.
        let indexes = [
            graph::indexes(),
            intents::indexes(),
            content::indexes(),
            threads::indexes(),
            timelines::indexes(),
            activity::indexes(),
            trends::indexes(),
            tokens::indexes(),
            notifications::indexes(),
            audit::indexes(),
            relations::indexes(),
            reposts::indexes(),
            oauth::indexes(),
            idempotency::indexes(),
            name_words::indexes(),
        ];
        graph::migrate(&db)
            .await
            .context("migrating the follow graph")?;
        notifications::migrate(&db)
            .await
            .context("migrating the notification takings")?;
        for (collection, model) in indexes.into_iter().flatten() {
            db.collection::<Document>(collection)
                .create_index(model)
                .await
                .with_context(|| format!("creating an index on {collection}"))?;
        }
        content::tags::backfill(&db)
            .await
            .context("indexing the hashtags of earlier posts")?;
        name_words::backfill(&db)
            .await
            .context("indexing the display names of earlier users")?;
        changes::record_birth(&db)
            .await
            .context("recording the database's birth")?;
        let last = newest_post_id(&db).await?;
        Ok(MongoStore {
            db,
            ids: PostIdGenerator::random(last),
            streams: changes::Streams::default(),
            event_log: std::sync::atomic::AtomicBool::new(false),
            serving: bulk::Registration::default(),
        })
    }

    fn collection(&self, name: &str) -> Collection<Document> {
        self.db.collection(name)
    }

    fn users_coll(&self) -> Collection<Document> {
        self.collection("users")
    }

    fn content_coll(&self) -> Collection<Document> {
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

    async fn exists(&self, collection: &str, filter: Document) -> StoreResult<bool> {
        exists(&self.collection(collection), filter).await
    }

    /// Moves one of `id`'s counters, and their version.
    async fn inc_user(&self, id: &str, field: &str, delta: i64) -> StoreResult<()> {
        let inc = doc! { field: delta, COUNTER_VERSION: 1_i64 };
        self.users_coll()
            .update_one(doc! { "_id": id }, doc! { "$inc": inc })
            .await
            .map_err(db_error)?;
        Ok(())
    }
}

#[async_trait]
impl Health for MongoStore {
    fn backend(&self) -> &'static str {
        "mongodb"
    }

    async fn ping(&self) -> StoreResult<()> {
        self.db
            .run_command(doc! { "ping": 1 })
            .await
            .map_err(db_error)?;
        Ok(())
    }
}

impl MongoStore {
    /// Ids across `user`'s follow edges on one side, ascending strictly after `after`
    /// or, `below`, descending strictly below it, read from the `{from, to}` or `{to,
    /// from}` index alone.
    pub(super) async fn neighbours(
        &self,
        side: Side,
        user: &str,
        after: Option<&str>,
        below: bool,
        limit: usize,
    ) -> StoreResult<Vec<String>> {
        let (mine, theirs) = match side {
            Side::Followees => ("from", "to"),
            Side::Followers => ("to", "from"),
        };
        let (op, order) = if below { ("$lt", -1) } else { ("$gt", 1) };
        let mut filter = doc! { mine: user };
        if let Some(after) = after {
            filter.insert(theirs, doc! { op: after });
        }
        let docs = all(self
            .collection(graph::FOLLOWS)
            .find(filter)
            .sort(doc! { mine: order, theirs: order })
            .limit(limit as i64)
            .projection(doc! { theirs: 1, "_id": 0 }))
        .await?;
        Ok(docs
            .iter()
            .filter_map(|d| d.get_str(theirs).ok().map(str::to_owned))
            .collect())
    }
}

/// The newest stored post id, which a handle's id generator continues from.
async fn newest_post_id(db: &Database) -> anyhow::Result<Option<PostId>> {
    let newest = db
        .collection::<Document>("content")
        .find_one(doc! {})
        .sort(doc! { "_id": -1 })
        .projection(doc! { "_id": 1 })
        .await
        .context("reading the newest post id")?;
    Ok(match newest {
        Some(doc) => Some(post_id(doc.get("_id"))?),
        None => None,
    })
}
