//! A write no port makes, for the in-process corruptions: the embedded file or the
//! MongoDB database behind a configuration. The corruptions of one area add their own
//! methods beside their tests (`audit/entries.rs`, `audit/social.rs`).

use socialite::config::{Backend, Config};
use socialite::domain::PostId;

/// A write no port makes: straight into the store's tables or collections.
pub enum Raw {
    Embedded(rusqlite::Connection),
    Mongo(mongodb::Database),
}

impl Raw {
    pub(super) async fn open(config: &Config) -> Raw {
        match config.storage.backend {
            Backend::Embedded => {
                Raw::Embedded(rusqlite::Connection::open(&config.storage.path).unwrap())
            }
            Backend::Mongodb => {
                let uri = config.storage.mongodb_uri.as_deref().unwrap();
                let client = mongodb::Client::with_uri_str(uri).await.unwrap();
                Raw::Mongo(client.default_database().unwrap())
            }
        }
    }

    pub(super) async fn bump_followers(&self, user: &str) {
        use mongodb::bson::doc;
        match self {
            Raw::Embedded(conn) => {
                let sql = "UPDATE users SET followers_count = followers_count + 1 WHERE id = ?1";
                assert_eq!(conn.execute(sql, [user]).unwrap(), 1);
            }
            Raw::Mongo(db) => {
                let users = db.collection::<mongodb::bson::Document>("users");
                let done = users
                    .update_one(
                        doc! { "_id": user },
                        doc! { "$inc": { "followers_count": 1 } },
                    )
                    .await
                    .unwrap();
                assert_eq!(done.modified_count, 1);
            }
        }
    }

    /// Takes `user`'s activity entry for `post` out of their log.
    pub(super) async fn drop_activity(&self, user: &str, post: PostId) {
        use mongodb::bson::doc;
        match self {
            Raw::Embedded(conn) => {
                let sql = "DELETE FROM activity_entries WHERE user = ?1 AND ref = ?2";
                assert_eq!(conn.execute(sql, [user, &post.to_string()]).unwrap(), 1);
            }
            Raw::Mongo(db) => {
                let logs = db.collection::<mongodb::bson::Document>("user_activity");
                let done = logs
                    .update_one(
                        doc! { "_id": user },
                        doc! { "$pull": { "activities": { "ref": post.to_string() } } },
                    )
                    .await
                    .unwrap();
                assert_eq!(done.modified_count, 1);
            }
        }
    }

    /// Deletes the fourth event of the log; returns its id.
    pub(super) fn drop_event(&self) -> i64 {
        let Raw::Embedded(conn) = self else {
            unreachable!("the event log runs on the embedded store here")
        };
        let id: i64 = conn
            .query_row(
                "SELECT id FROM events ORDER BY id LIMIT 1 OFFSET 3",
                [],
                |r| r.get(0),
            )
            .unwrap();
        conn.execute("DELETE FROM events WHERE id = ?1", [id])
            .unwrap();
        id
    }

    pub(super) fn bump_tag(&self, tag: &str) {
        let Raw::Embedded(conn) = self else {
            unreachable!("tags are kept only with an event log")
        };
        let sql = "UPDATE tags SET total = total + 1 WHERE tag = ?1";
        assert_eq!(conn.execute(sql, [tag]).unwrap(), 1);
    }
}
