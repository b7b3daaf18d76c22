//! The counters tests' fixture: a store, plus a way past its ports to write what a crash
//! would leave behind.

use std::path::PathBuf;
use std::sync::Arc;

use crate::common::{Kind, fresh_name, mongo_base_uri, mongo_uri_with_database};
use mongodb::bson::{Document, doc, oid::ObjectId};
use socialite::domain::{Post, PostId, now_ms};
use socialite::store::Store;
use socialite::store::embedded::{EmbeddedStore, Synchronous};

/// A store, plus a way past its ports to write what a crash would leave behind.
pub struct Fixture {
    pub store: Store,
    pub raw: Raw,
    _dir: Option<tempfile::TempDir>,
}

pub enum Raw {
    Sqlite(PathBuf),
    Mongo(mongodb::Database),
}

pub async fn fixture(kind: Kind) -> Fixture {
    match kind {
        Kind::Embedded => {
            let dir = tempfile::tempdir().unwrap();
            let file = dir.path().join("t.db");
            let adapter = EmbeddedStore::open(&file, Synchronous::Normal).unwrap();
            Fixture {
                store: Store::new(Arc::new(adapter)),
                raw: Raw::Sqlite(file),
                _dir: Some(dir),
            }
        }
        Kind::Mongo => {
            let uri = mongo_uri_with_database(&mongo_base_uri().unwrap(), &fresh_name("counters"));
            let store = socialite::store::mongo::connect(&uri).await.unwrap();
            let client = mongodb::Client::with_uri_str(&uri).await.unwrap();
            Fixture {
                store,
                raw: Raw::Mongo(client.default_database().unwrap()),
                _dir: None,
            }
        }
    }
}

impl Raw {
    /// Sets every user's three counters to `n`, as drift would, without a change of
    /// any source.
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

    /// What a crash right after a post's insert leaves: the post and its change, and the
    /// author's counter not moved. (Embedded, insert and counter share a transaction, so
    /// only a write past the ports can leave this.)
    pub async fn post_without_counter(&self, author: &str, text: &str) -> PostId {
        let id = PostId::at(now_ms(), rand::random::<u32>() as u64);
        match self {
            Raw::Sqlite(file) => {
                let conn = rusqlite::Connection::open(file).unwrap();
                conn.execute(
                    "INSERT INTO posts (id, author, text) VALUES (?1, ?2, ?3)",
                    rusqlite::params![&id.bytes()[..], author, text],
                )
                .unwrap();
                let post = Post {
                    id,
                    author: author.to_owned(),
                    text: text.to_owned(),
                    reply_to: None,
                    replies_count: 0,
                    reposts_count: 0,
                };
                conn.execute(
                    "INSERT INTO changes (ts, coll, op, key, doc) VALUES (?1, 'posts', 'insert', ?2, ?3)",
                    rusqlite::params![now_ms(), id.to_string(), serde_json::to_string(&post).unwrap()],
                )
                .unwrap();
            }
            Raw::Mongo(db) => {
                let doc = doc! { "_id": ObjectId::from_bytes(id.bytes()), "author": author, "text": text };
                db.collection::<Document>("content")
                    .insert_one(doc)
                    .await
                    .unwrap();
            }
        }
        id
    }
}
