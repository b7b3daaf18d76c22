//! The counters tests' fixture: a store, plus a way past its ports to write what a crash
//! would leave behind.

use crate::common::Kind;
use crate::common::raw::raw_store;
use mongodb::bson::{Document, doc, oid::ObjectId};
use socialite::domain::{Post, PostId, now_ms};

pub use crate::common::raw::{Raw, RawStore as Fixture};

pub async fn fixture(kind: Kind) -> Fixture {
    raw_store(kind, "counters").await
}

impl Raw {
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
