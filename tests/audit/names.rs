//! The display-name word index: an entry taken out, a stale word (on MongoDB stamped
//! older than the profile, and stamped with its current version), and an entry of no
//! user, each written straight into the store, are named by the audit as `name_words`
//! and mended by `--repair` (the counters' rebuild writes every user's words again and
//! removes every other entry of theirs, whatever its stamp).

use socialite::audit::Kind as Audited;
use socialite::config::{Backend, Config};
use socialite::domain::FeedStrategy;

use super::common::kinds;
use super::{assert_clean, audit_of, config, corrupted, skip_the_workers_past_it, world};

/// Runs `sql` on the embedded file, or `mongo` on the `name_words` collection.
async fn raw(config: &Config, sql: &str, args: [&str; 2], mongo: Mongo<'_>) {
    use mongodb::bson::{Document, doc};
    match config.storage.backend {
        Backend::Embedded => {
            let conn = rusqlite::Connection::open(&config.storage.path).unwrap();
            assert_eq!(conn.execute(sql, args).unwrap(), 1, "{sql}");
        }
        Backend::Mongodb => {
            let uri = config.storage.mongodb_uri.as_deref().unwrap();
            let client = mongodb::Client::with_uri_str(uri).await.unwrap();
            let coll = client
                .default_database()
                .unwrap()
                .collection::<Document>("name_words");
            match mongo {
                Mongo::Delete(w, u) => {
                    let done = coll.delete_one(doc! { "w": w, "u": u }).await.unwrap();
                    assert_eq!(done.deleted_count, 1);
                }
                Mongo::Insert(w, u, stamp) => {
                    let v = match stamp {
                        // As an entry of an earlier name is (the request's sync removes
                        // only entries older than the profile it read).
                        Stamp::Older => -1_i64,
                        // As only a wrong write makes it: the guarded sync keeps it.
                        Stamp::Current => {
                            let users = client.default_database().unwrap();
                            let user = users
                                .collection::<Document>("users")
                                .find_one(doc! { "_id": u })
                                .await
                                .unwrap()
                                .unwrap();
                            user.get_i64("version").unwrap()
                        }
                    };
                    let entry = doc! { "_id": format!("{w}/{u}"), "w": w, "u": u, "v": v };
                    coll.insert_one(entry).await.unwrap();
                }
            }
        }
    }
}

enum Mongo<'a> {
    Delete(&'a str, &'a str),
    Insert(&'a str, &'a str, Stamp),
}

/// The version a planted MongoDB entry is stamped with.
enum Stamp {
    Older,
    Current,
}

const DELETE: &str = "DELETE FROM name_words WHERE word = ?1 AND user = ?2";
const INSERT: &str = "INSERT INTO name_words (word, user) VALUES (?1, ?2)";

#[tokio::test]
async fn a_wrong_name_word_index_is_named_and_repaired() {
    for kind in kinds("a_wrong_name_word_index_is_named_and_repaired") {
        let label = format!("{kind:?}");
        let (config, _dir) = config(kind, FeedStrategy::Cache);
        let store = world(&config).await;
        skip_the_workers_past_it(&store).await;
        let report = audit_of(&store, &config).await;
        assert_clean(&report, &label);
        assert!(
            report
                .checked
                .get(&Audited::NameWords)
                .is_some_and(|n| *n >= 5),
            "{label}: {report}"
        );
        // Each user's name is their id in the world: "ann"'s only word is "ann".
        for (what, sql, args, mongo, named) in [
            (
                "a missing word",
                DELETE,
                ["ann", "ann"],
                Mongo::Delete("ann", "ann"),
                "ann's name word \"ann\" is missing from the index",
            ),
            (
                "a stale word",
                INSERT,
                ["zork", "bob"],
                Mongo::Insert("zork", "bob", Stamp::Older),
                "bob is indexed under \"zork\", not a word of their name",
            ),
            (
                "a wrong word at the current stamp",
                INSERT,
                ["yak", "cat"],
                Mongo::Insert("yak", "cat", Stamp::Current),
                "cat is indexed under \"yak\", not a word of their name",
            ),
            (
                "an entry of no user",
                INSERT,
                ["ghost", "nobody"],
                Mongo::Insert("ghost", "nobody", Stamp::Older),
                "the name word \"ghost\" names nobody, who does not exist",
            ),
        ] {
            let label = format!("{label}: {what}");
            raw(&config, sql, args, mongo).await;
            corrupted(&store, &config, Audited::NameWords, &label, Some(named)).await;
            let found = store
                .users
                .name_word_entries(args[0], None, 10)
                .await
                .unwrap();
            let users: Vec<&str> = found.iter().map(|e| e.user.as_str()).collect();
            let want: &[&str] = if what == "a missing word" {
                &["ann"]
            } else {
                &[]
            };
            assert_eq!(users, want, "{label}");
        }
    }
}
