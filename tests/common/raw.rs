//! A store with a way past its ports: the SQLite file or the MongoDB database behind it,
//! for tests that write what a crash or drift would leave behind.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use mongodb::bson::{Document, doc};
use socialite::store::Store;
use socialite::store::embedded::{EmbeddedStore, Synchronous};

use super::{Kind, fresh_name, mongo_base_uri, mongo_uri_with_database};

/// A fresh store of `kind`, and what is behind it.
pub struct RawStore {
    pub store: Store,
    pub raw: Raw,
    _dir: Option<tempfile::TempDir>,
}

pub enum Raw {
    Sqlite(PathBuf),
    Mongo(mongodb::Database),
}

/// A fresh store of `kind`; a MongoDB one in a database named after `prefix`.
pub async fn raw_store(kind: Kind, prefix: &str) -> RawStore {
    match kind {
        Kind::Embedded => {
            let dir = tempfile::tempdir().unwrap();
            let file = dir.path().join("t.db");
            let adapter = EmbeddedStore::open(&file, Synchronous::Normal).unwrap();
            RawStore {
                store: Store::new(Arc::new(adapter)),
                raw: Raw::Sqlite(file),
                _dir: Some(dir),
            }
        }
        Kind::Mongo => {
            let uri = mongo_uri_with_database(&mongo_base_uri().unwrap(), &fresh_name(prefix));
            let store = socialite::store::mongo::connect(&uri).await.unwrap();
            let client = mongodb::Client::with_uri_str(&uri).await.unwrap();
            RawStore {
                store,
                raw: Raw::Mongo(client.default_database().unwrap()),
                _dir: None,
            }
        }
    }
}

impl Raw {
    pub fn mongo(&self) -> Option<&mongodb::Database> {
        match self {
            Raw::Mongo(db) => Some(db),
            Raw::Sqlite(_) => None,
        }
    }

    pub fn file(&self) -> Option<&Path> {
        match self {
            Raw::Sqlite(file) => Some(file),
            Raw::Mongo(_) => None,
        }
    }

    /// Sets the three counters of `user` (of every user, with `None`) to `n`, as drift
    /// would, without a change of any source.
    pub async fn set_counts(&self, user: Option<&str>, n: i64) {
        match self {
            Raw::Sqlite(file) => {
                let conn = rusqlite::Connection::open(file).unwrap();
                conn.execute(
                    "UPDATE users SET posts_count = ?1, following_count = ?1, followers_count = ?1
                     WHERE ?2 IS NULL OR id = ?2",
                    rusqlite::params![n, user],
                )
                .unwrap();
            }
            Raw::Mongo(db) => {
                let filter = user.map_or_else(Document::new, |u| doc! { "_id": u });
                let set = doc! { "$set": {
                    "posts_count": n, "following_count": n, "followers_count": n,
                } };
                db.collection::<Document>("users")
                    .update_many(filter, set)
                    .await
                    .unwrap();
            }
        }
    }
}
