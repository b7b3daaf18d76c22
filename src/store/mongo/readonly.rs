//! The database opened for reading only, as `socialite audit` opens it: no index
//! created, no migration run, no birth recorded (what [`MongoStore::connect`] does at
//! every start), and the database checked first: it must hold a socialite store (a
//! mistyped database name is an error, not an empty store that audits clean) of this
//! binary's layout (an earlier one is refused rather than migrated).

use anyhow::{Context, bail};
use mongodb::bson::{Document, doc};

use super::{MongoStore, open_database};
use crate::domain::PostIdGenerator;
use crate::store::audit::UPGRADE_HINT;

impl MongoStore {
    /// Connects to the database the URI names, or `socialite`, for reading only.
    /// Refused when it holds no socialite store (neither `users` nor `meta`), or keeps its
    /// follow graph in the earlier two-collection layout.
    pub async fn connect_read_only(uri: &str) -> anyhow::Result<MongoStore> {
        let db = open_database(uri).await?;
        let name = db.name().to_owned();
        let collections = db
            .list_collection_names()
            .await
            .with_context(|| format!("listing the collections of the database {name}"))?;
        let has = |c: &str| collections.iter().any(|n| n == c);
        if !has("users") && !has("meta") {
            bail!(
                "the database {name} holds no socialite store (it has no users or meta \
                 collection): check storage.mongodb_uri; nothing was created"
            );
        }
        let any = |c: &'static str| {
            let db = db.clone();
            async move {
                db.collection::<Document>(c)
                    .find_one(doc! {})
                    .projection(doc! { "_id": 1 })
                    .await
                    .map(|d| d.is_some())
                    .with_context(|| format!("reading {c}"))
            }
        };
        if has("following") && any("following").await? && !any("follows").await? {
            bail!(
                "the database {name} keeps its follow graph in the earlier layout \
                 (`following`, `followers`), and this socialite reads it from `follows` \
                 only; the audit never upgrades a store (it only reads, and so does \
                 `--repair` until the store is upgraded): {UPGRADE_HINT}"
            );
        }
        let last = super::newest_post_id(&db).await?;
        // The event log is read where a server prepared it (a capped collection), never
        // created here.
        let event_log = super::events::is_capped(&db)
            .await
            .context("reading whether the event log exists")?;
        Ok(MongoStore {
            db,
            ids: PostIdGenerator::random(last),
            streams: super::changes::Streams::default(),
            event_log: std::sync::atomic::AtomicBool::new(event_log),
            serving: super::bulk::Registration::default(),
        })
    }
}
